package learner

import (
	"github.com/t2t-lab/t2t/env"
)

// Episode is one played episode.
type Episode struct {
	Instance *env.Instance
	Plan     env.Plan
	Report   env.Report
	Reward   float64
	// Decisions [Lo, Hi) of the Rollout belong to this episode.
	Lo, Hi int
}
