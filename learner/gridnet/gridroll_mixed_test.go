package gridnet_test

import (
	"math/rand/v2"
	"testing"

	"github.com/t2t-lab/t2t/learner/gridnet"

	"github.com/t2t-lab/t2t/env"
)

// TestPlayGridNetMixedAgentCounts: a batch mixing agent counts plays on
// after every episode with the most agents has ended (sequential rounds
// for agents no live episode has must be skipped, not sent as an empty
// batch). Here the 3-agent instance starts solved, so only the 2-agent
// episode is left after the first step.
func TestPlayGridNetMixedAgentCounts(t *testing.T) {
	open := make([]bool, 36)
	two := &env.Instance{Width: 6, Height: 6, Holes: open, Agents: []env.Agent{
		{Start: env.Pos{R: 0, C: 0}, Goal: env.Pos{R: 5, C: 5}}, {Start: env.Pos{R: 5, C: 0}, Goal: env.Pos{R: 0, C: 5}}}}
	three := &env.Instance{Width: 6, Height: 6, Holes: open, Agents: []env.Agent{
		{Start: env.Pos{R: 0, C: 0}, Goal: env.Pos{R: 0, C: 0}}, {Start: env.Pos{R: 2, C: 2}, Goal: env.Pos{R: 2, C: 2}},
		{Start: env.Pos{R: 4, C: 4}, Goal: env.Pos{R: 4, C: 4}}}}
	for _, in := range []*env.Instance{two, three} {
		in.ID = in.ComputeID()
		if err := in.Validate(); err != nil {
			t.Fatal(err)
		}
	}
	cfg := gridnet.DefaultRolloutConfig()
	cfg.GroupSize, cfg.Temperature = 1, 0
	if !cfg.Sequential {
		t.Skip("the default rollout is not sequential")
	}
	ro, err := gridnet.Play(gridrollNet(t, 5), []*env.Instance{two, three}, cfg, rand.New(rand.NewPCG(5, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if got := ro.Episodes[0].Hi - ro.Episodes[0].Lo; got < 2*2 {
		t.Fatalf("the 2-agent episode took %d decisions; the test needs it to outlive the first step", got)
	}
}
