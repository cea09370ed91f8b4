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

// Rollout holds the episodes of a batch of instances (GroupSize episodes
// per instance, instance-major) and every decision taken, in the layout
// gridnet.Batch wants (a text policy fills Episodes only).
type Rollout struct {
	Episodes []Episode
	Obs      []float32 // decisions × ObsSize
	Legal    []bool    // decisions × NumMoves, nil when not masked
	Actions  []int32
	LogProbs []float32
	Agent    []int32 // the agent that took each decision
	ObsSize  int
}

// Decisions is the number of decisions taken.
func (r *Rollout) Decisions() int { return len(r.Actions) }

// ReplayedGroup is one instance's group of episodes as the learner
// receives it (every policy's Update takes them): the instance, and per episode its actions, behaviour
// log-probs and reward.
type ReplayedGroup struct {
	Instance *env.Instance
	Actions  [][]int32
	LogProbs [][]float32
	Rewards  []float32
}
