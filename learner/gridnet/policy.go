package gridnet

import (
	"math/rand/v2"

	"github.com/t2t-lab/t2t/learner"
)

// StepPolicy is a policy that writes a joint plan one timestep at a time: each agent observes
// its egocentric window (an ObsSize-long vector) and picks one of NumMoves moves. Net
// implements it.
type StepPolicy interface {
	learner.Policy

	// ObsSize is the observation length the policy takes.
	ObsSize() int
	// Act picks a move per observation; see Net.Act.
	Act(obs []float32, n int, legal []bool, temperature float64, rng *rand.Rand, actions []int32, logprobs []float32) error
	// LogProbs scores given moves at temperature 1; see Net.LogProbs.
	LogProbs(obs []float32, n int, legal []bool, actions []int32, dst []float32) error
	// Update runs one GRPO step; see Net.Update.
	Update(b *Batch) (learner.UpdateStats, error)
	// BCUpdate runs one behaviour-cloning step; see Net.BCUpdate.
	BCUpdate(obs []float32, n int, legal []bool, actions []int32) (learner.UpdateStats, error)
}
