package env

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"image/color"
	"math"
	"strconv"
)

// rndColour is agent i's colour in the SVG and PNG renderings (ten colours,
// repeating for agents numbered 10 and up). None is red, which marks
// conflicts.
func rndColour(i int) color.RGBA {
	palette := [...]color.RGBA{
		{0x1f, 0x77, 0xb4, 0xff}, // blue
		{0xff, 0x7f, 0x0e, 0xff}, // orange
		{0x2c, 0xa0, 0x2c, 0xff}, // green
		{0x94, 0x67, 0xbd, 0xff}, // purple
		{0x8c, 0x56, 0x4b, 0xff}, // brown
		{0xe3, 0x77, 0xc2, 0xff}, // pink
		{0x00, 0x80, 0x80, 0xff}, // teal
		{0xbc, 0xbd, 0x22, 0xff}, // olive
		{0x7f, 0x7f, 0x7f, 0xff}, // grey
		{0x00, 0x00, 0x80, 0xff}, // navy
	}
	if i < 0 {
		i = -i
	}
	return palette[i%len(palette)]
}

// Terrain colours shared by the SVG and PNG renderings, as 0xRRGGBB.
const (
	rndFrozen   = 0xd6ecfa // light blue
	rndHoleCol  = 0x2b3a4a // dark slate
	rndGridLine = 0x9cc3dd
	rndConflict = 0xe02020 // red
)

// rndRGB turns 0xRRGGBB into an opaque colour.
func rndRGB(u uint32) color.RGBA { return color.RGBA{uint8(u >> 16), uint8(u >> 8), uint8(u), 0xff} }

func rndHex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

// rndNum formats an SVG coordinate with at most one decimal.
func rndNum(v float64) string {
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

// rndClampPos pulls a position that lies off the grid to the ring of cells
// just outside it, so that wild plans stay drawable.
func rndClampPos(in *Instance, p Pos) Pos {
	return Pos{min(max(p.R, -1), in.Height), min(max(p.C, -1), in.Width)}
}

// SVG layout, in user units.
const (
	svgCell    = 40.0
	svgMargin  = 28.0 // room for the row and column labels
	svgPad     = 12.0
	svgLegendH = 20.0 // one legend row
)

// RenderSVG draws the instance, and the plan and conflict cells when given
// (p and conflicts may be nil), as a self-contained SVG document: frozen
// cells light blue, holes dark, row and column numbers, conflict cells red,
// and per agent (colours by rndColour) its start as a filled numbered
// circle, its goal as a star outline, its path as a polyline with an arrow
// on every step and a dot on every cell visited (a ring where it waits).
// Paths of different agents are offset a little so that shared cells show
// both. A legend under the grid names the symbols and the agents' colours.
// Every element carries a <title> for hover text. Positions off the grid
// are drawn on its border.
func RenderSVG(in *Instance, p *Plan, conflicts []Pos) []byte {
	nAgents := len(in.Agents)
	if p != nil {
		nAgents = max(nAgents, len(p.Paths))
	}
	labels := svgLegendLabels(in, p, nAgents)
	longest := 0
	for _, l := range labels {
		longest = max(longest, len([]rune(l)))
	}
	s := &svgDoc{in: in, w: max(in.Width, 0), h: max(in.Height, 0)}
	// About 7 user units per character at font-size 12.
	totalW := max(svgMargin+float64(s.w)*svgCell+svgPad, svgPad+70+7*float64(longest)+svgPad, 230)
	legendTop := svgMargin + float64(s.h)*svgCell + svgPad
	totalH := legendTop + svgLegendH*float64(1+nAgents) + svgPad

	s.header(totalW, totalH, nAgents)
	s.grid()
	s.conflicts(conflicts)
	// Goals: star outlines.
	for i, a := range in.Agents {
		gx, gy := s.xy(a.Goal)
		col := rndHex(rndColour(i))
		fmt.Fprintf(&s.b, `<polygon points="%s" fill="none" stroke="%s" stroke-width="2.5" stroke-linejoin="round"><title>agent %d goal (%d,%d)</title></polygon>`+"\n",
			svgStar(gx, gy, svgCell*0.42, svgCell*0.18), col, i, a.Goal.R, a.Goal.C)
	}
	if p != nil {
		for i, path := range p.Paths {
			s.path(i, len(p.Paths), path)
		}
	}
	// Starts: filled, numbered circles on top.
	for i, a := range in.Agents {
		x, y := s.xy(a.Start)
		fmt.Fprintf(&s.b, `<g><title>agent %d start (%d,%d)</title><circle cx="%s" cy="%s" r="%s" fill="%s" stroke="#ffffff" stroke-width="2"/>`+
			`<text x="%s" y="%s" fill="#ffffff" text-anchor="middle" font-weight="bold">%d</text></g>`+"\n",
			i, a.Start.R, a.Start.C, rndNum(x), rndNum(y), rndNum(svgCell*0.3), rndHex(rndColour(i)), rndNum(x), rndNum(y+4), i)
	}
	s.legend(legendTop, labels)
	return s.b.Bytes()
}

// svgDoc is the SVG document RenderSVG writes: the buffer and the
// instance and grid size that place its elements.
type svgDoc struct {
	b    bytes.Buffer
	in   *Instance
	w, h int
}

// svgEsc escapes s for XML text.
func svgEsc(s string) string {
	var e bytes.Buffer
	_ = xml.EscapeText(&e, []byte(s)) // writes to a bytes.Buffer cannot fail
	return e.String()
}

// cx is the x of the centre of column c.
func (s *svgDoc) cx(c float64) float64 { return svgMargin + (c+0.5)*svgCell }

// cy is the y of the centre of row r.
func (s *svgDoc) cy(r float64) float64 { return svgMargin + (r+0.5)*svgCell }

// xy is the centre of cell q; positions off the grid sit on its border.
func (s *svgDoc) xy(q Pos) (float64, float64) {
	return s.cx(min(max(float64(q.C), -0.5), float64(s.w)-0.5)), s.cy(min(max(float64(q.R), -0.5), float64(s.h)-0.5))
}

// header writes the <svg> element, the title, one arrow marker per agent
// colour and the white background.
func (s *svgDoc) header(totalW, totalH float64, nAgents int) {
	b := &s.b
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="sans-serif" font-size="12">`+"\n",
		rndNum(totalW), rndNum(totalH), rndNum(totalW), rndNum(totalH))
	title := "MAPF-FrozenLake instance"
	if s.in.ID != "" {
		title += " " + s.in.ID
	}
	fmt.Fprintf(b, "<title>%s</title>\n", svgEsc(title))
	b.WriteString("<defs>\n")
	for i := range nAgents {
		fmt.Fprintf(b, `<marker id="arrow%d" viewBox="0 0 10 10" refX="5" refY="5" markerWidth="4" markerHeight="4" orient="auto"><path d="M0,0 L10,5 L0,10 z" fill="%s"/></marker>`+"\n",
			i, rndHex(rndColour(i)))
	}
	b.WriteString("</defs>\n")
	fmt.Fprintf(b, `<rect x="0" y="0" width="%s" height="%s" fill="#ffffff"/>`+"\n", rndNum(totalW), rndNum(totalH))
}

// grid writes the row and column labels and one rectangle per cell.
func (s *svgDoc) grid() {
	b := &s.b
	b.WriteString(`<g fill="#333333" text-anchor="middle">` + "\n")
	for c := range s.w {
		fmt.Fprintf(b, `<text x="%s" y="%s">%d</text>`+"\n", rndNum(s.cx(float64(c))), rndNum(svgMargin-8), c)
	}
	for r := range s.h {
		fmt.Fprintf(b, `<text x="%s" y="%s">%d</text>`+"\n", rndNum(svgMargin/2), rndNum(s.cy(float64(r))+4), r)
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(b, `<g stroke="%s" stroke-width="1">`+"\n", rndHex(rndRGB(rndGridLine)))
	for r := range s.h {
		for c := range s.w {
			fill, what := rndRGB(rndFrozen), "frozen"
			if rndHole(s.in, Pos{r, c}) {
				fill, what = rndRGB(rndHoleCol), "hole"
			}
			fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>(%d,%d) %s</title></rect>`+"\n",
				rndNum(svgMargin+float64(c)*svgCell), rndNum(svgMargin+float64(r)*svgCell), rndNum(svgCell), rndNum(svgCell), rndHex(fill), r, c, what)
		}
	}
	b.WriteString("</g>\n")
}

// conflicts writes the conflict cells on the grid.
func (s *svgDoc) conflicts(conflicts []Pos) {
	if len(conflicts) == 0 {
		return
	}
	b := &s.b
	fmt.Fprintf(b, `<g fill="%s" fill-opacity="0.45" stroke="%s" stroke-width="3">`+"\n", rndHex(rndRGB(rndConflict)), rndHex(rndRGB(rndConflict)))
	for _, q := range conflicts {
		if !s.in.InBounds(q) {
			continue
		}
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="%s" height="%s"><title>conflict at (%d,%d)</title></rect>`+"\n",
			rndNum(svgMargin+float64(q.C)*svgCell+1.5), rndNum(svgMargin+float64(q.R)*svgCell+1.5), rndNum(svgCell-3), rndNum(svgCell-3), q.R, q.C)
	}
	b.WriteString("</g>\n")
}

// path writes agent i's path (one of k) as a polyline with arrows and a dot
// per cell visited (a ring where it waits), offset by its index.
func (s *svgDoc) path(i, k int, path []Pos) {
	if len(path) == 0 {
		return
	}
	b := &s.b
	col := rndHex(rndColour(i))
	off := (float64(i) - float64(k-1)/2) * 4
	off = max(min(off, svgCell/4), -svgCell/4)
	fmt.Fprintf(b, `<g stroke="%s" fill="%s">`+"\n", col, col)
	fmt.Fprintf(b, "<title>agent %d path, %d steps</title>\n", i, len(path)-1)
	var pts bytes.Buffer
	var last Pos
	for t, q := range path {
		q = Pos{min(max(q.R, -1), s.h), min(max(q.C, -1), s.w)}
		if t > 0 && q == last {
			continue
		}
		last = q
		if pts.Len() > 0 {
			pts.WriteByte(' ')
		}
		x, y := s.xy(q)
		pts.WriteString(rndNum(x+off) + "," + rndNum(y+off))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke-width="2.5" stroke-linejoin="round" stroke-opacity="0.85" marker-mid="url(#arrow%d)" marker-end="url(#arrow%d)"/>`+"\n",
		pts.String(), i, i)
	for t, q := range path {
		fx, fy := s.xy(q)
		x, y := rndNum(fx+off), rndNum(fy+off)
		if t > 0 && path[t-1] == q {
			fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="6" fill="none" stroke-width="1.5"><title>agent %d waits at (%d,%d), t=%d</title></circle>`+"\n", x, y, i, q.R, q.C, t)
			continue
		}
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="3" stroke="none"><title>agent %d at (%d,%d), t=%d</title></circle>`+"\n", x, y, i, q.R, q.C, t)
	}
	b.WriteString("</g>\n")
}

// legend writes the legend from y = top: the cell symbols, then one row
// per agent with its colour and label, and closes the document.
func (s *svgDoc) legend(top float64, labels []string) {
	b := &s.b
	y := top
	sw := func(x float64, fill, stroke string) {
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="12" height="12" fill="%s" stroke="%s"/>`+"\n", rndNum(x), rndNum(y), fill, stroke)
	}
	text := func(x float64, t string) {
		fmt.Fprintf(b, `<text x="%s" y="%s" fill="#333333">%s</text>`+"\n", rndNum(x), rndNum(y+10), svgEsc(t))
	}
	b.WriteString("<g>\n")
	sw(svgPad, rndHex(rndRGB(rndFrozen)), rndHex(rndRGB(rndGridLine)))
	text(svgPad+16, "frozen")
	sw(svgPad+70, rndHex(rndRGB(rndHoleCol)), rndHex(rndRGB(rndGridLine)))
	text(svgPad+86, "hole")
	sw(svgPad+130, rndHex(rndRGB(rndConflict)), rndHex(rndRGB(rndConflict)))
	text(svgPad+146, "conflict")
	for i, label := range labels {
		y += svgLegendH
		col := rndHex(rndColour(i))
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="6" fill="%s"/>`+"\n", rndNum(svgPad+6), rndNum(y+6), col)
		fmt.Fprintf(b, `<polygon points="%s" fill="none" stroke="%s" stroke-width="1.5"/>`+"\n", svgStar(svgPad+26, y+6, 7, 3), col)
		fmt.Fprintf(b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s" stroke-width="2.5" marker-end="url(#arrow%d)"/>`+"\n",
			rndNum(svgPad+40), rndNum(y+6), rndNum(svgPad+62), rndNum(y+6), col, i)
		text(svgPad+70, label)
	}
	b.WriteString("</g>\n</svg>\n")
}

// svgLegendLabels returns the legend text for each agent.
func svgLegendLabels(in *Instance, p *Plan, n int) []string {
	out := make([]string, n)
	for i := range out {
		label := fmt.Sprintf("agent %d: start, goal, path", i)
		if i < len(in.Agents) {
			a := in.Agents[i]
			label = fmt.Sprintf("agent %d: start (%d,%d), goal (%d,%d), path", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C)
			if p != nil && i < len(p.Paths) && len(p.Paths[i]) > 0 {
				label += fmt.Sprintf(" cost %d", PathCost(p.Paths[i], a.Goal))
			}
		}
		out[i] = label
	}
	return out
}

// svgStar returns the points of a five-pointed star centred on (x, y).
func svgStar(x, y, outer, inner float64) string {
	var b bytes.Buffer
	for k := range 10 {
		r := outer
		if k%2 == 1 {
			r = inner
		}
		a := -math.Pi/2 + float64(k)*math.Pi/5
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(rndNum(x+r*math.Cos(a)) + "," + rndNum(y+r*math.Sin(a)))
	}
	return b.String()
}
