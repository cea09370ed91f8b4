package train

import (
	"slices"
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
