package traces

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

// SVG layout, in pixels.
const (
	svgWidth   = 1200
	svgLeft    = 170 // node labels
	svgRight   = 20
	svgTop     = 56 // stage labels and the time axis
	svgRow     = 26
	svgBar     = 18
	svgThinBar = 8
	svgLegend  = 40
)

// stagePalette colours work units by stage (cycling); units with no stage are grey.
var stagePalette = [...]string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
	"#8c564b", "#e377c2", "#bcbd22", "#17becf", "#7f7f7f"}

// activityColor colours the non-rollout activity bars ("" for other spans).
func activityColor(name string) string {
	switch name {
	case telemetry.SpanLearnerUpdate:
		return "#222222"
	case telemetry.SpanEngineerPropose:
		return "#8b0000"
	case telemetry.SpanEval:
		return "#006400"
	}
	return ""
}

// TimelineSVG draws spans as an SVG timeline: one row per node; executing
// work_unit spans as bars coloured by stage; learner.update,
// engineer.propose and eval spans as thin dark bars on their node's row;
// stage starts and ends as dashed vertical lines labelled with the stage.
// Every bar has a <title> tooltip. The output is a standalone SVG document.
func TimelineSVG(spans []Span) []byte {
	// Distinct spans only.
	seen := make(map[spanKey]int, len(spans))
	uniq := make([]*Span, 0, len(spans))
	for i := range spans {
		k := spanKey{spans[i].TraceID, spans[i].SpanID}
		if _, dup := seen[k]; dup {
			continue
		}
		seen[k] = len(uniq)
		uniq = append(uniq, &spans[i])
	}
	tl := &timeline{uniq: uniq, stageOf: stageAncestors(uniq, seen), stageColor: map[string]string{}}
	for i, s := range uniq {
		if i == 0 || s.StartUnixNano < tl.t0 {
			tl.t0 = s.StartUnixNano
		}
		if i == 0 || s.EndUnixNano > tl.t1 {
			tl.t1 = s.EndUnixNano
		}
	}
	tl.collectStages()
	tl.collectRows()

	height := svgTop + max(len(tl.nodes), 1)*svgRow + svgLegend + 10
	b := &tl.b
	fmt.Fprintf(b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		svgWidth, height, svgWidth, height)
	fmt.Fprintf(b, `<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>`+"\n", svgWidth, height)
	tl.rowsBottom = svgTop + max(len(tl.nodes), 1)*svgRow

	tl.drawRows()
	tl.drawAxis()
	for _, i := range tl.bars {
		tl.drawBar(i)
	}
	tl.drawStageBounds()
	tl.drawLegend()
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// timeline is the state TimelineSVG draws from: the distinct spans, the
// time range, the stages and their colours, and the node rows.
type timeline struct {
	b          bytes.Buffer
	uniq       []*Span
	stageOf    []int // per span, the index of its stage ancestor or -1
	t0, t1     int64
	stages     []*Span           // stage spans in order of start
	stageColor map[string]string // stage label → colour
	stageOrder []string          // stage labels in order of first colour
	rows       map[string]int    // node → row
	nodes      []string          // nodes in row order
	bars       []int             // indices in uniq of the spans drawn as bars
	rowsBottom int
}

// x is the horizontal position of time t.
func (tl *timeline) x(t int64) float64 {
	span := float64(max(tl.t1-tl.t0, 1))
	plotW := float64(svgWidth - svgLeft - svgRight)
	return svgLeft + float64(t-tl.t0)/span*plotW
}

// colorFor returns the colour of a stage label, giving a new label the
// next palette colour.
func (tl *timeline) colorFor(label string) string {
	if c, ok := tl.stageColor[label]; ok {
		return c
	}
	c := stagePalette[len(tl.stageOrder)%len(stagePalette)]
	tl.stageColor[label] = c
	tl.stageOrder = append(tl.stageOrder, label)
	return c
}

// collectStages finds the stage spans, sorts them by start and colours
// each distinct t2t.stage value in that order.
func (tl *timeline) collectStages() {
	for _, s := range tl.uniq {
		if s.Name == telemetry.SpanStage {
			tl.stages = append(tl.stages, s)
		}
	}
	sort.SliceStable(tl.stages, func(a, b int) bool { return tl.stages[a].StartUnixNano < tl.stages[b].StartUnixNano })
	for _, s := range tl.stages {
		l, _ := s.Attr(telemetry.AttrStage)
		tl.colorFor(l)
	}
}

// collectRows picks the spans drawn as bars and gives each of their nodes
// a row, in name order.
func (tl *timeline) collectRows() {
	tl.rows = map[string]int{}
	for i, s := range tl.uniq {
		if isExecutingUnit(s) || activityColor(s.Name) != "" {
			tl.bars = append(tl.bars, i)
			if _, ok := tl.rows[s.Node]; !ok {
				tl.rows[s.Node] = 0
				tl.nodes = append(tl.nodes, s.Node)
			}
		}
	}
	sort.Strings(tl.nodes)
	for i, n := range tl.nodes {
		tl.rows[n] = i
	}
}

// drawRows writes the row backgrounds and node labels.
func (tl *timeline) drawRows() {
	b := &tl.b
	for i, n := range tl.nodes {
		y := svgTop + i*svgRow
		if i%2 == 1 {
			fmt.Fprintf(b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4"/>`+"\n", svgLeft, y, svgWidth-svgLeft-svgRight, svgRow)
		}
		fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="end" dominant-baseline="middle">%s</text>`+"\n",
			svgLeft-8, y+svgRow/2, esc(orDash(n)))
	}
	if len(tl.nodes) == 0 {
		fmt.Fprintf(b, `<text x="%d" y="%d">no work spans</text>`+"\n", svgLeft, svgTop+svgRow/2)
	}
}

// drawAxis writes the time axis with its ticks.
func (tl *timeline) drawAxis() {
	b := &tl.b
	step := tickStep(time.Duration(tl.t1 - tl.t0))
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#000000"/>`+"\n", svgLeft, svgTop-4, svgWidth-svgRight, svgTop-4)
	for t := time.Duration(0); t <= time.Duration(tl.t1-tl.t0); t += step {
		xt := tl.x(tl.t0 + int64(t))
		fmt.Fprintf(b, `<line x1="%.2f" y1="%d" x2="%.2f" y2="%d" stroke="#000000"/>`+"\n", xt, svgTop-8, xt, svgTop-4)
		fmt.Fprintf(b, `<text x="%.2f" y="%d" text-anchor="middle">%s</text>`+"\n", xt, svgTop-12, esc(t.String()))
	}
}

// drawBar writes the bar of span uniq[i]: a work unit coloured by its
// stage, or a thin dark bar for the other activities.
func (tl *timeline) drawBar(i int) {
	s := tl.uniq[i]
	y := svgTop + tl.rows[s.Node]*svgRow
	x0, x1 := tl.x(s.StartUnixNano), tl.x(s.EndUnixNano)
	w := math.Max(x1-x0, 0.5)
	var fill, label string
	h, dy := svgBar, (svgRow-svgBar)/2
	if isExecutingUnit(s) {
		if a := tl.stageOf[i]; a >= 0 {
			label, _ = tl.uniq[a].Attr(telemetry.AttrStage)
		} else {
			label, _ = s.Attr(telemetry.AttrStage)
		}
		fill = "#bbbbbb"
		if label != "" {
			fill = tl.colorFor(label)
		}
	} else {
		fill = activityColor(s.Name)
		h, dy = svgThinBar, svgRow-svgThinBar-2
	}
	wu, _ := s.Attr(telemetry.AttrWorkUnit)
	title := fmt.Sprintf("%s on %s: %s, stage %s", s.Name, orDash(s.Node), fmtDur(s.Duration()), orDash(label))
	if wu != "" {
		title += ", unit " + wu
	}
	fmt.Fprintf(&tl.b, `<rect x="%.2f" y="%d" width="%.2f" height="%d" fill="%s" fill-opacity="0.85" stroke="#ffffff" stroke-width="0.5"><title>%s</title></rect>`+"\n",
		x0, y+dy, w, h, fill, esc(title))
}

// drawStageBounds writes each stage's start and end as dashed lines
// labelled with the stage.
func (tl *timeline) drawStageBounds() {
	for _, s := range tl.stages {
		l, _ := s.Attr(telemetry.AttrStage)
		c := tl.colorFor(l)
		for _, t := range []int64{s.StartUnixNano, s.EndUnixNano} {
			xt := tl.x(t)
			fmt.Fprintf(&tl.b, `<line x1="%.2f" y1="%d" x2="%.2f" y2="%d" stroke="%s" stroke-dasharray="4,3"/>`+"\n",
				xt, svgTop-4, xt, tl.rowsBottom, c)
		}
		fmt.Fprintf(&tl.b, `<text x="%.2f" y="%d" fill="%s"><title>stage %s: %s</title>stage %s</text>`+"\n",
			tl.x(s.StartUnixNano)+2, 14, c, esc(orDash(l)), esc(fmtDur(s.Duration())), esc(orDash(l)))
	}
}

// drawLegend writes one legend entry per stage colour and per activity.
func (tl *timeline) drawLegend() {
	ly := tl.rowsBottom + 24
	lx := svgLeft
	legend := func(color, text string, thin bool) {
		h, dy := 10, 0
		if thin {
			h, dy = 5, 3
		}
		fmt.Fprintf(&tl.b, `<rect x="%d" y="%d" width="14" height="%d" fill="%s"/>`+"\n", lx, ly-9+dy, h, color)
		fmt.Fprintf(&tl.b, `<text x="%d" y="%d">%s</text>`+"\n", lx+18, ly, esc(text))
		lx += 18 + 7*len(text) + 16
	}
	for _, l := range tl.stageOrder {
		legend(tl.stageColor[l], "stage "+orDash(l), false)
	}
	for _, name := range []string{telemetry.SpanLearnerUpdate, telemetry.SpanEngineerPropose, telemetry.SpanEval} {
		legend(activityColor(name), name, true)
	}
}

// esc escapes s for XML text and attribute values.
func esc(s string) string {
	var b bytes.Buffer
	_ = xml.EscapeText(&b, []byte(s)) // a bytes.Buffer cannot fail
	return b.String()
}

// tickStep returns a 1-2-5 step giving at most 10 ticks over d.
func tickStep(d time.Duration) time.Duration {
	if d <= 0 {
		return time.Second
	}
	for step := time.Duration(1); ; step *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if d/(step*m) <= 10 {
				return step * m
			}
		}
	}
}
