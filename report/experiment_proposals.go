package report

import (
	"fmt"
	"math"
	"strings"
)

// Proposed reports whether the stage's config was proposed by an engineer
// that the guardrails audited (the point has audit attempts), and Accepted
// whether one of those attempts passed the guardrails: a stage whose
// engineer fell back to the previous config is proposed but not accepted.
func (p *Point) Proposed() bool { return len(p.Audit) > 0 }

// Accepted reports whether one of the stage's audited attempts passed the
// guardrails.
func (p *Point) Accepted() bool {
	for _, a := range p.Audit {
		if a.Accepted {
			return true
		}
	}
	return false
}

// Proposals counts the run's stages with an audited proposal and those
// whose proposal the guardrails accepted.
func (r *Run) Proposals() (proposed, accepted int) {
	for i := range r.Stages {
		if r.Stages[i].Proposed() {
			proposed++
		}
		if r.Stages[i].Accepted() {
			accepted++
		}
	}
	return proposed, accepted
}

// perRunMetrics are the valid-rate metrics of the per-run table:
// validation, then each benchmark agent count.
func perRunMetrics(e *Experiment) []Metric {
	var out []Metric
	for _, m := range Metrics(e) {
		if !m.Optimal {
			out = append(out, m)
		}
	}
	return out
}

// runsTable lists every run (strategy, seed) with its stage proposals, how
// many the guardrails accepted, its final valid rates and, with a baseline,
// each rate's difference to the baseline's run of the same seed (points).
func runsTable(e *Experiment) *table {
	ms := perRunMetrics(e)
	t := &table{header: []string{"strategy", "seed", "proposals", "accepted"}}
	for _, m := range ms {
		t.header = append(t.header, m.Label)
	}
	base := baselineRuns(e)
	if base != nil {
		for _, m := range ms {
			t.header = append(t.header, m.Label+" − "+e.Baseline)
		}
	}
	for _, name := range e.Strategies {
		for _, r := range runsOf(e, name) {
			prop, acc := r.Proposals()
			row := []string{r.Strategy, fmt.Sprint(r.Seed), fmt.Sprint(prop), fmt.Sprint(acc)}
			for _, m := range ms {
				row = append(row, pct1(m.Of(finalPoint(r))))
			}
			if base != nil {
				for _, m := range ms {
					row = append(row, signedPoints(pairedDiff(m, r, base)))
				}
			}
			t.rows = append(t.rows, row)
		}
	}
	return t
}

// baselineRuns maps seed to the baseline's run; nil without a baseline.
func baselineRuns(e *Experiment) map[uint64]*Run {
	if e.Baseline == "" {
		return nil
	}
	base := map[uint64]*Run{}
	for _, r := range runsOf(e, e.Baseline) {
		base[r.Seed] = r
	}
	return base
}

// pairedDiff is metric m of r's final point minus that of the baseline's
// run with r's seed; NaN without one.
func pairedDiff(m Metric, r *Run, base map[uint64]*Run) float64 {
	b, ok := base[r.Seed]
	if !ok {
		return math.NaN()
	}
	return m.Of(finalPoint(r)) - m.Of(finalPoint(b))
}

// signedPoints prints a rate difference as signed points, "–" for NaN.
func signedPoints(d float64) string {
	if math.IsNaN(d) {
		return "–"
	}
	return fmt.Sprintf("%+.1f", 100*d)
}

// RunsCSV renders one row per run (strategy, seed): its stage proposals,
// those the guardrails accepted, its final valid rates in percent and, with
// a baseline, their paired differences to the baseline's run of the same
// seed in points (columns KEY_vs_BASELINE).
func RunsCSV(e *Experiment) string {
	ms := perRunMetrics(e)
	base := baselineRuns(e)
	head := []string{"strategy", "seed", "run_id", "proposals", "accepted"}
	for _, m := range ms {
		head = append(head, m.Key+"_pct")
	}
	if base != nil {
		for _, m := range ms {
			head = append(head, m.Key+"_vs_"+e.Baseline)
		}
	}
	var b strings.Builder
	csvRow(&b, head...)
	for _, name := range e.Strategies {
		for _, r := range runsOf(e, name) {
			prop, acc := r.Proposals()
			f := []string{r.Strategy, fmt.Sprint(r.Seed), r.RunID, fmt.Sprint(prop), fmt.Sprint(acc)}
			for _, m := range ms {
				f = append(f, pct2(m.Of(finalPoint(r))))
			}
			if base != nil {
				for _, m := range ms {
					f = append(f, pct2(pairedDiff(m, r, base)))
				}
			}
			csvRow(&b, f...)
		}
	}
	return b.String()
}
