package learner

import "math/rand/v2"

// Policy is what every trainable policy offers the rest of t2t: a version that grows with each
// optimizer step (samples carry it, so staleness can be bounded), and checkpoints.
type Policy interface {
	// Version is the number of optimizer steps behind the current weights.
	Version() int64
	// Save writes a checkpoint directory atomically.
	Save(dir string) error
	// Load restores a checkpoint; on error the policy is unchanged.
	Load(dir string) error
}

// StepPolicy is a policy that writes a joint plan one timestep at a time: each agent observes
// its egocentric window (an ObsSize-long vector) and picks one of NumMoves moves. GridNet
// implements it.
type StepPolicy interface {
	Policy
	// ObsSize is the observation length the policy takes.
	ObsSize() int
	// Act picks a move per observation; see GridNet.Act.
	Act(obs []float32, n int, legal []bool, temperature float64, rng *rand.Rand, actions []int32, logprobs []float32) error
	// LogProbs scores given moves at temperature 1; see GridNet.LogProbs.
	LogProbs(obs []float32, n int, legal []bool, actions []int32, dst []float32) error
	// Update runs one GRPO step; see GridNet.Update.
	Update(b *GridBatch) (UpdateStats, error)
	// BCUpdate runs one behaviour-cloning step; see GridNet.BCUpdate.
	BCUpdate(obs []float32, n int, legal []bool, actions []int32) (UpdateStats, error)
}
