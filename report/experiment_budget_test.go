package report

import (
	"strings"
	"testing"
)

// The budget line names the stage-0 agents: 2 for files written before the
// field, the range where the run had one.
func TestBudgetLineAgents(t *testing.T) {
	for _, tc := range []struct{ agents, want string }{
		{"", "128 training instances (2 agents, group 8)"},
		{"2", "128 training instances (2 agents, group 8)"},
		{"2..5", "128 training instances (2..5 agents, group 8)"},
		{"1", "128 training instances (1 agent, group 8)"},
	} {
		e := &Experiment{Budget: Budget{Policy: "qwen3", Stages: 4, Instances: 128, GroupSize: 8, ValPerSize: 8, EvalPerSize: 2, Agents: tc.agents}, Seeds: []uint64{1}}
		if got := budgetLine(e); !strings.Contains(got, tc.want) {
			t.Errorf("agents %q: %q lacks %q", tc.agents, got, tc.want)
		}
	}
}
