package train

import (
	"slices"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// The proposal line's diff names ratio, agent (count or range) and
// instance changes.
func TestCompactDiff(t *testing.T) {
	old := env.DefaultLocalConfig()
	cfg := old.Clone()
	cfg.Sizes[2].HoleRatio = 0.35
	cfg.AgentsMax = 5
	cfg.Instances = 256
	want := []string{"size  5: hole 0.20→0.35", "agents 2→2..5", "instances 512→256"}
	if got := compactDiff(old, cfg); !slices.Equal(got, want) {
		t.Errorf("compactDiff = %q, want %q", got, want)
	}
	if got := compactDiff(old, old.Clone()); len(got) != 0 {
		t.Errorf("no change: %q", got)
	}
}

// The status's config table gains an agents row where the agent count is
// a range or changed, and has none on a run with one count throughout.
func TestWriteConfigsAgentsRow(t *testing.T) {
	two := env.DefaultLocalConfig()
	rng := two.Clone()
	rng.AgentsMax = 5
	narrow := two.Clone()
	narrow.AgentsMax = 3
	for _, tc := range []struct {
		cfgs []env.Config
		want string
	}{
		{[]env.Config{two, two}, ""},
		{[]env.Config{rng, rng, narrow}, "agents  2..5   2..5   2..3*"},
		{[]env.Config{two, rng}, "agents  2  2..5*"},
	} {
		var stages []StatusStage
		for i, c := range tc.cfgs {
			stages = append(stages, StatusStage{Stage: i, Config: c})
		}
		var b strings.Builder
		writeConfigs(&b, stages)
		out := b.String()
		row := ""
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == "agents" {
				row = strings.Join(strings.Fields(line), "  ")
			}
		}
		want := strings.Join(strings.Fields(tc.want), "  ")
		if row != want {
			t.Errorf("configs %v: agents row %q, want %q:\n%s", tc.cfgs, row, want, out)
		}
	}
}
