package experiment

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/report"
)

// FuzzLoadRun: a saved run file never panics loadRun nor the experiment
// report built from the run it returns (tables, CSV, HTML, JSON); it is
// reused only under its own fingerprint.
func FuzzLoadRun(f *testing.F) {
	const fp = "fp-1"
	cfg := env.DefaultLocalConfig()
	pt := func(stage int, v float64, c *env.Config) report.Point {
		return report.Point{Stage: stage, Train: report.Rate{Episodes: 8, Valid: v}, Val: report.Rate{Episodes: 4, Valid: v, Optimal: v / 2},
			Eval: map[int]report.Rate{3: {Episodes: 2, Valid: v}}, Config: c, Proposer: "rules", Rationale: "r",
			Audit: []report.Attempt{{Attempt: 0, Accepted: true, Reason: "ok"}}, Updates: 1, Seconds: 1}
	}
	good, err := json.Marshal(RunFile{Fingerprint: fp, Run: report.Run{Strategy: "rules", Seed: 1, RunID: "rules-s1",
		Initial: pt(-1, 0.1, nil), Stages: []report.Point{pt(0, 0.2, &cfg), pt(1, 0.4, &cfg)}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, s := range []string{
		`{"fingerprint":"fp-1","run":{}}`, `{"fingerprint":"fp-1","run":{"stages":[{"stage":-9,"eval":{"-1":{"episodes":-5}}}]}}`,
		`{"fingerprint":"fp-1","run":{"stages":[{"config":{"sizes":[{"size":1e9}]}}]}}`,
		`{"fingerprint":"other","run":{}}`, `{`, `null`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(t.TempDir(), "run.json")
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		r, ok := loadRun(path, fp)
		if !ok {
			return
		}
		var back RunFile
		if json.Unmarshal(b, &back) != nil || back.Fingerprint != fp {
			t.Fatalf("reused a run whose fingerprint is not %s", fp)
		}
		e := &report.Experiment{Title: "t", Strategies: []string{r.Strategy}, Seeds: []uint64{r.Seed}, Runs: []report.Run{r}}
		_ = report.Metrics(e)
		_ = report.Summarize(e)
		_ = report.ExperimentMarkdown(e)
		_ = report.ExperimentCSV(e)
		_ = report.SummaryCSV(e)
		_ = report.ExperimentHTML(e)
		js, err := report.ExperimentJSON(e)
		if err != nil {
			return // a non-finite number cannot be written as JSON
		}
		if _, err := report.ParseExperimentJSON(js); err != nil {
			t.Fatalf("the report's JSON does not read back: %v", err)
		}
	})
}
