package report

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// palette colours series in order (cycling).
var palette = [...]string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// color returns the i-th palette colour.
func color(i int) string { return palette[i%len(palette)] }

// esc escapes text for XML and HTML content and attribute values.
func esc(s string) string { return html.EscapeString(s) }

// f1 formats a coordinate with one decimal (stable output for golden files).
func f1(v float64) string { return fmt.Sprintf("%.1f", v) }

// series is one line or bar set of a chart. Values are in chart units
// (percent for rates); NaN is a missing point.
type series struct {
	name  string
	color string
	dash  bool
	ys    []float64
	// lo and hi, when set, draw a band (for example min..max over seeds).
	lo, hi []float64
}

// lineChart is a line chart over categorical x positions.
type lineChart struct {
	title   string
	xLabel  string
	yLabel  string
	xLabels []string
	yMax    float64
	width   int
	height  int
	series  []series
	// legend draws the series names under the plot.
	legend bool
}

// Chart layout, in pixels.
const (
	chartLeft   = 44
	chartRight  = 12
	chartTop    = 26
	chartBottom = 34
	legendRow   = 16
)

// svg renders the chart as one SVG element: title, axes, bands, lines and
// the legend.
func (c *lineChart) svg() string {
	legendH := 0
	if c.legend {
		legendH = legendRow * ((len(c.series) + 2) / 3)
	}
	w, h := c.width, c.height+legendH
	d := &chartDraw{c: c, yMax: c.yMax,
		pw: float64(c.width - chartLeft - chartRight), ph: float64(c.height - chartTop - chartBottom)}
	if d.yMax <= 0 {
		d.yMax = 100
	}
	b := &d.b
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11" role="img">`, w, h, w, h)
	fmt.Fprintf(b, `<title>%s</title>`, esc(c.title))
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="#ffffff"/>`, w, h)
	fmt.Fprintf(b, `<text x="%d" y="16" font-size="12" font-weight="bold">%s</text>`, chartLeft, esc(c.title))
	d.axes()
	for _, s := range c.series {
		if s.lo != nil && s.hi != nil {
			d.band(s)
		}
		d.line(s)
	}
	if c.legend {
		d.legend()
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// chartDraw is a lineChart being drawn: the output and the plot area's
// size and y range.
type chartDraw struct {
	b      strings.Builder
	c      *lineChart
	pw, ph float64 // plot width and height
	yMax   float64
}

// x is the horizontal position of x label i.
func (d *chartDraw) x(i int) float64 {
	if len(d.c.xLabels) <= 1 {
		return chartLeft + d.pw/2
	}
	return chartLeft + d.pw*float64(i)/float64(len(d.c.xLabels)-1)
}

// y is the vertical position of value v, clamped to [0, yMax].
func (d *chartDraw) y(v float64) float64 {
	return chartTop + d.ph*(1-math.Min(math.Max(v, 0), d.yMax)/d.yMax)
}

// axes writes the grid, the axes with their ticks and labels.
func (d *chartDraw) axes() {
	c, b, pw, ph := d.c, &d.b, d.pw, d.ph
	for k := 0; k <= 4; k++ {
		v := d.yMax * float64(k) / 4
		fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>`, chartLeft, f1(d.y(v)), f1(chartLeft+pw), f1(d.y(v)))
		fmt.Fprintf(b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, chartLeft-4, f1(d.y(v)+4), trimFloat(v))
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%s" stroke="#333333"/>`, chartLeft, chartTop, chartLeft, f1(chartTop+ph))
	fmt.Fprintf(b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, chartLeft, f1(chartTop+ph), f1(chartLeft+pw), f1(chartTop+ph))
	for i, l := range c.xLabels {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, f1(d.x(i)), f1(chartTop+ph+14), esc(l))
	}
	if c.xLabel != "" {
		fmt.Fprintf(b, `<text x="%s" y="%s" text-anchor="middle" fill="#555555">%s</text>`, f1(chartLeft+pw/2), f1(chartTop+ph+28), esc(c.xLabel))
	}
	if c.yLabel != "" {
		fmt.Fprintf(b, `<text x="10" y="%s" text-anchor="middle" fill="#555555" transform="rotate(-90 10 %s)">%s</text>`, f1(chartTop+ph/2), f1(chartTop+ph/2), esc(c.yLabel))
	}
}

// band writes the shaded band between series s's lo and hi values.
func (d *chartDraw) band(s series) {
	var pts []string
	var back []string
	for i := range s.lo {
		if i >= len(d.c.xLabels) || math.IsNaN(s.lo[i]) || math.IsNaN(s.hi[i]) {
			continue
		}
		pts = append(pts, f1(d.x(i))+","+f1(d.y(s.hi[i])))
		back = append([]string{f1(d.x(i)) + "," + f1(d.y(s.lo[i]))}, back...)
	}
	if len(pts) > 1 {
		fmt.Fprintf(&d.b, `<polygon class="band" points="%s" fill="%s" fill-opacity="0.15" stroke="none"/>`, strings.Join(append(pts, back...), " "), s.color)
	}
}

// line writes series s as polylines broken at missing (NaN) values, with a
// dot per value.
func (d *chartDraw) line(s series) {
	b := &d.b
	var pts []string
	flush := func() {
		if len(pts) > 1 {
			dash := ""
			if s.dash {
				dash = ` stroke-dasharray="5,3"`
			}
			fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"%s><title>%s</title></polyline>`, strings.Join(pts, " "), s.color, dash, esc(s.name))
		}
		pts = pts[:0]
	}
	for i, v := range s.ys {
		if i >= len(d.c.xLabels) {
			break
		}
		if math.IsNaN(v) {
			flush()
			continue
		}
		pts = append(pts, f1(d.x(i))+","+f1(d.y(v)))
		fmt.Fprintf(b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"><title>%s, %s: %s</title></circle>`, f1(d.x(i)), f1(d.y(v)), s.color, esc(s.name), esc(d.c.xLabels[i]), f1(v))
	}
	flush()
}

// legend writes one entry per series, three to a row, under the chart.
func (d *chartDraw) legend() {
	c := d.c
	for i, s := range c.series {
		lx := chartLeft + (i%3)*((c.width-chartLeft)/3)
		ly := c.height + legendRow*(i/3) + 4
		dash := ""
		if s.dash {
			dash = ` stroke-dasharray="5,3"`
		}
		fmt.Fprintf(&d.b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"%s/>`, lx, ly, lx+18, ly, s.color, dash)
		fmt.Fprintf(&d.b, `<text x="%d" y="%d">%s</text>`, lx+22, ly+4, esc(s.name))
	}
}

// barChart is a grouped bar chart: one group per x label, one bar per
// series in each group.
type barChart struct {
	title   string
	yLabel  string
	xLabels []string
	yMax    float64
	width   int
	height  int
	series  []series
}

func (c *barChart) svg() string {
	var b strings.Builder
	legendH := legendRow * ((len(c.series) + 3) / 4)
	w, h := c.width, c.height+legendH
	pw, ph := float64(c.width-chartLeft-chartRight), float64(c.height-chartTop-chartBottom)
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11" role="img">`, w, h, w, h)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(c.title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`, w, h)
	fmt.Fprintf(&b, `<text x="%d" y="16" font-size="12" font-weight="bold">%s</text>`, chartLeft, esc(c.title))
	yMax := c.yMax
	if yMax <= 0 {
		yMax = 100
	}
	y := func(v float64) float64 { return chartTop + ph*(1-math.Min(math.Max(v, 0), yMax)/yMax) }
	for k := 0; k <= 4; k++ {
		v := yMax * float64(k) / 4
		fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#dddddd"/>`, chartLeft, f1(y(v)), f1(chartLeft+pw), f1(y(v)))
		fmt.Fprintf(&b, `<text x="%d" y="%s" text-anchor="end">%s</text>`, chartLeft-4, f1(y(v)+4), trimFloat(v))
	}
	if c.yLabel != "" {
		fmt.Fprintf(&b, `<text x="10" y="%s" text-anchor="middle" fill="#555555" transform="rotate(-90 10 %s)">%s</text>`, f1(chartTop+ph/2), f1(chartTop+ph/2), esc(c.yLabel))
	}
	n := len(c.xLabels)
	if n == 0 {
		n = 1
	}
	gw := pw / float64(n)
	bw := gw * 0.8 / float64(max(1, len(c.series)))
	for g, l := range c.xLabels {
		gx := chartLeft + gw*float64(g)
		for si, s := range c.series {
			if g >= len(s.ys) || math.IsNaN(s.ys[g]) {
				continue
			}
			v := s.ys[g]
			bx := gx + gw*0.1 + bw*float64(si)
			fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"><title>%s, %s: %s</title></rect>`,
				f1(bx), f1(y(v)), f1(bw), f1(chartTop+ph-y(v)), s.color, esc(s.name), esc(l), f1(v))
		}
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">%s</text>`, f1(gx+gw/2), f1(chartTop+ph+14), esc(l))
	}
	fmt.Fprintf(&b, `<line x1="%d" y1="%s" x2="%s" y2="%s" stroke="#333333"/>`, chartLeft, f1(chartTop+ph), f1(chartLeft+pw), f1(chartTop+ph))
	for i, s := range c.series {
		lx := chartLeft + (i%4)*((c.width-chartLeft)/4)
		ly := c.height + legendRow*(i/4) + 4
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="12" height="10" fill="%s"/>`, lx, ly-6, s.color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`, lx+16, ly+4, esc(s.name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// heatmap shows a matrix of values in [0, max] as shaded cells with the
// value written in each.
type heatmap struct {
	title string
	rows  []string
	cols  []string
	vals  [][]float64 // [row][col], NaN: missing
	max   float64
	// rgb is the colour of a full cell ("31,119,180").
	rgb string
}

// Heatmap layout, in pixels.
const (
	heatLabel = 52
	heatCellW = 40
	heatCellH = 18
	heatTop   = 36
)

func (m *heatmap) svg() string {
	var b strings.Builder
	w := heatLabel + heatCellW*len(m.cols) + 8
	h := heatTop + heatCellH*len(m.rows) + 6
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="10" role="img">`, w, h, w, h)
	fmt.Fprintf(&b, `<title>%s</title>`, esc(m.title))
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="#ffffff"/>`, w, h)
	fmt.Fprintf(&b, `<text x="2" y="13" font-size="12" font-weight="bold">%s</text>`, esc(m.title))
	for j, c := range m.cols {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`, heatLabel+heatCellW*j+heatCellW/2, heatTop-5, esc(c))
	}
	mx := m.max
	if mx <= 0 {
		mx = 1
	}
	for i, r := range m.rows {
		ry := heatTop + heatCellH*i
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="end">%s</text>`, heatLabel-4, ry+13, esc(r))
		for j := range m.cols {
			v := math.NaN()
			if i < len(m.vals) && j < len(m.vals[i]) {
				v = m.vals[i][j]
			}
			cx := heatLabel + heatCellW*j
			if math.IsNaN(v) {
				fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="#f4f4f4" stroke="#ffffff"/>`, cx, ry, heatCellW, heatCellH)
				continue
			}
			a := math.Min(math.Max(v/mx, 0), 1)
			ink := "#000000"
			if a > 0.6 {
				ink = "#ffffff"
			}
			fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="rgb(%s)" fill-opacity="%.2f" stroke="#ffffff"><title>%s, %s: %.3f</title></rect>`,
				cx, ry, heatCellW, heatCellH, m.rgb, 0.08+0.92*a, esc(r), esc(m.cols[j]), v)
			fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle" fill="%s">%.2f</text>`, cx+heatCellW/2, ry+13, ink, v)
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// trimFloat prints v with at most two decimals and no trailing zeros.
func trimFloat(v float64) string {
	s := fmt.Sprintf("%.2f", v)
	s = strings.TrimRight(s, "0")
	return strings.TrimSuffix(s, ".")
}
