package report

import (
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// TestTallyWaits: an answer whose agent stays on a cell and moves on later counts as waiting;
// one whose agent only stays at its goal at the end does not; an outcome without a plan counts in
// neither. The Markdown shows the waits table only when some outcome holds a plan.
func TestTallyWaits(t *testing.T) {
	p := func(cells ...[2]int) []env.Pos {
		out := make([]env.Pos, len(cells))
		for i, c := range cells {
			out[i] = env.Pos{R: c[0], C: c[1]}
		}
		return out
	}
	outs := []Outcome{
		{InstanceID: "a", Agents: 2, Size: 3, Valid: true, Optimal: true, Plan: [][]env.Pos{p([2]int{0, 0}, [2]int{0, 1}), p([2]int{1, 1}, [2]int{1, 1}, [2]int{1, 2})}},
		{InstanceID: "b", Agents: 2, Size: 3, Valid: true, Optimal: true, Plan: [][]env.Pos{p([2]int{0, 0}, [2]int{0, 1}, [2]int{0, 1}), p([2]int{1, 1})}},
		{InstanceID: "c", Agents: 3, Size: 3, Failed: []string{env.CategoryParse.String()}},
	}
	e := Tally("p", "s", outs)
	if e.Total.Plans != 2 || e.Total.Waiting != 1 {
		t.Errorf("total: %d plans, %d waiting; want 2 and 1", e.Total.Plans, e.Total.Waiting)
	}
	if c := e.ByAgents[1]; c.Agents != 3 || c.Plans != 0 || c.Waiting != 0 {
		t.Errorf("3 agents: %+v, want no plans", c)
	}
	md := EvalMarkdown(e)
	if !strings.Contains(md, "## Waits") || !strings.Contains(md, "| 2 | 2 | 1 | 50.0 |") {
		t.Errorf("markdown lacks the waits row:\n%s", md)
	}
	for i := range outs {
		outs[i].Plan = nil
	}
	if md := EvalMarkdown(Tally("p", "s", outs)); strings.Contains(md, "## Waits") {
		t.Errorf("a waits table without plans:\n%s", md)
	}
}
