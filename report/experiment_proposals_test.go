package report

import (
	"encoding/csv"
	"strings"
	"testing"
)

// TestRunsProposalsAccepted: a stage whose engineer fell back counts as
// proposed, not accepted; the per-run CSV carries proposals, accepted, the
// final valid rates and the paired differences to the baseline.
func TestRunsProposalsAccepted(t *testing.T) {
	e := expFixture()
	// The second strategy's seed-2 run: its stage-1 engineer fell back.
	for i := range e.Runs {
		r := &e.Runs[i]
		if r.Strategy != e.Baseline && r.Seed == e.Seeds[1] {
			r.Stages[1].Audit = []Attempt{{Attempt: 0, Reason: "no JSON object in the answer"}}
		}
	}
	recs, err := csv.NewReader(strings.NewReader(RunsCSV(e))).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	head := recs[0]
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %q in %v", name, head)
		return -1
	}
	got := map[string][2]string{}
	for _, rec := range recs[1:] {
		got[rec[col("strategy")]+"/"+rec[col("seed")]] = [2]string{rec[col("proposals")], rec[col("accepted")]}
	}
	other := e.Strategies[1]
	want := map[string][2]string{
		e.Baseline + "/1": {"1", "1"}, e.Baseline + "/2": {"1", "1"},
		other + "/1": {"1", "1"}, other + "/2": {"1", "0"},
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s: proposals, accepted = %v, want %v (CSV %v)", k, got[k], w, recs)
		}
	}
	// Paired difference on validation: the baseline's own is 0.
	vs := col("val_valid_vs_" + e.Baseline)
	for _, rec := range recs[1:] {
		if rec[col("strategy")] == e.Baseline && rec[vs] != "0.00" {
			t.Errorf("baseline's difference to itself: %v", rec)
		}
	}
	for _, k := range []string{"a3_valid_pct", "a4_valid_pct", "val_valid_pct"} {
		col(k)
	}
	if md := ExperimentMarkdown(e); !strings.Contains(md, "| proposals | accepted |") {
		t.Fatalf("markdown lacks the per-run table:\n%s", md)
	}
}
