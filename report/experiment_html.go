package report

import (
	"fmt"
	"math"
	"strings"
)

// CurveSVG plots metric mi (of Metrics) per strategy over the curve
// points: the mean over seeds as a line, min..max as a band.
func CurveSVG(e *Experiment, sums []Summary, mi int) string {
	ms := Metrics(e)
	n := 0
	for _, s := range sums {
		n = max(n, len(s.Curve))
	}
	c := &lineChart{title: ms[mi].Label + " (%)", xLabel: "stage", xLabels: curveLabels(n), yMax: 100, width: 300, height: 210, legend: true}
	top := 0.0
	for si, s := range sums {
		sr := series{name: s.Strategy, color: color(si)}
		for i := range n {
			if i >= len(s.Curve) || s.Curve[i][mi].N == 0 {
				sr.ys, sr.lo, sr.hi = append(sr.ys, math.NaN()), append(sr.lo, math.NaN()), append(sr.hi, math.NaN())
				continue
			}
			st := s.Curve[i][mi]
			sr.ys = append(sr.ys, 100*st.Mean)
			sr.lo = append(sr.lo, 100*st.Min)
			sr.hi = append(sr.hi, 100*st.Max)
			top = math.Max(top, 100*st.Max)
		}
		c.series = append(c.series, sr)
	}
	c.yMax = niceMax(top)
	return c.svg()
}

// configHeatmaps draws a strategy's mean configs: one heatmap per ratio,
// sizes by stages.
func configHeatmaps(name string, runs []*Run) string {
	sizes, vals, stages := meanConfigs(runs)
	rows := make([]string, len(sizes))
	for i, s := range sizes {
		rows[i] = fmt.Sprintf("%d×%d", s, s)
	}
	cols := make([]string, stages)
	for i := range cols {
		cols[i] = fmt.Sprint(i)
	}
	var b strings.Builder
	for k, what := range []struct{ name, rgb string }{{"data ratio", "31,119,180"}, {"hole ratio", "140,86,75"}, {"wait ratio", "214,39,40"}} {
		mx := 1.0
		if k == 0 {
			// Data ratios: shade relative to the largest share, at least 0.25
			// (an even split over 8 sizes is light, not saturated).
			mx = 0.25
			for _, row := range vals[0] {
				for _, v := range row {
					if !math.IsNaN(v) {
						mx = math.Max(mx, v)
					}
				}
			}
		}
		h := &heatmap{title: name + ": " + what.name, rows: rows, cols: cols, vals: vals[k], max: mx, rgb: what.rgb}
		b.WriteString(h.svg())
	}
	return b.String()
}

// ExperimentHTML renders the experiment as one self-contained HTML page:
// the tables, learning curves as inline SVG line charts, each strategy's
// configs as inline SVG heatmaps and the audited rationale per run.
func ExperimentHTML(e *Experiment) string {
	var b strings.Builder
	sums := Summarize(e)
	ms := Metrics(e)
	htmlOpen(&b, e.Title)
	if e.Command != "" {
		b.WriteString(`<p class="note">Command: <code>` + esc(e.Command) + "</code></p>\n")
	}
	b.WriteString(`<p class="note">` + esc(budgetLine(e)) + "</p>\n")
	final, paired, best := experimentTables(e, sums)
	b.WriteString("<h2>Final results (after the last stage; % as mean ± SD over seeds)</h2>\n")
	final.html(&b, "results")
	if paired != nil {
		b.WriteString("<h2>Paired difference to " + esc(e.Baseline) + " (same seed; percentage points, mean ± SD)</h2>\n")
		paired.html(&b, "results")
	}
	if best != nil {
		b.WriteString("<h2>Best strategy against " + esc(e.Baseline) + ", per valid-rate metric (by final mean)</h2>\n")
		best.html(&b, "results")
	}
	b.WriteString("<h2>Learning curves</h2>\n")
	b.WriteString(`<p class="note">Mean over seeds (line) and min..max over seeds (band), after each stage; "init" is the untrained policy.</p>` + "\n")
	b.WriteString(`<div class="charts">`)
	for mi := range ms {
		b.WriteString(CurveSVG(e, sums, mi))
	}
	b.WriteString("</div>\n")
	for mi, m := range ms {
		if m.Optimal {
			continue
		}
		b.WriteString("<details><summary>" + esc(m.Label) + " per stage (table)</summary>\n")
		curveTable(sums, mi).html(&b, "results")
		b.WriteString("</details>\n")
	}
	b.WriteString("<h2>Generator configs per stage</h2>\n")
	b.WriteString(`<p class="note">The 24 numbers the engineer edits (data, hole and wait ratio for each map size), mean over seeds, by stage.</p>` + "\n")
	for _, name := range e.Strategies {
		runs := runsOf(e, name)
		b.WriteString("<h3>" + esc(name) + "</h3>\n")
		b.WriteString(`<div class="charts">` + configHeatmaps(name, runs) + "</div>\n")
		b.WriteString("<details><summary>" + esc(name) + " configs (table)</summary>\n")
		configTable(runs).html(&b, "results")
		b.WriteString("</details>\n")
	}
	b.WriteString("<h2>Engineer rationale per stage</h2>\n")
	b.WriteString(`<p class="note">From the store's config records (rationale) and audit log (attempts).</p>` + "\n")
	for _, name := range e.Strategies {
		for _, r := range runsOf(e, name) {
			fmt.Fprintf(&b, "<details><summary>%s, seed %d (run %s)</summary>\n", esc(r.Strategy), r.Seed, esc(r.RunID))
			auditTable(r).html(&b, "audit")
			b.WriteString("</details>\n")
		}
	}
	htmlClose(&b)
	return b.String()
}
