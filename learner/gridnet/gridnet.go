package gridnet

import (
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// NumMoves is the size of gridnet's action space: WAIT, UP, DOWN, LEFT, RIGHT = ids 0..4 (the
// order of env.Move).
const NumMoves = 5

// Kind is the model kind written in gridnet checkpoints.
const Kind = "gridnet"

// Config configures gridnet: an MLP shared by all agents, from one agent's observation
// vector to NumMoves logits.
type Config struct {
	ObsSize int    // length of an observation vector (env.Sim.Observe); must be ≥ 1
	Hidden  []int  // hidden layer widths, ReLU; default {128, 128}; each ≥ 1, at most 8 layers
	Seed    uint64 // weight initialisation seed
}

// DefaultConfig returns the defaults for observations of length obsSize.
func DefaultConfig(obsSize int) Config {
	return Config{ObsSize: obsSize, Hidden: []int{128, 128}, Seed: 1}
}

// Validate returns a *fielderr.Error naming the first bad field.
func (c Config) Validate() error {
	if c.ObsSize < 1 {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "Config.ObsSize", Value: c.ObsSize, Reason: "must be ≥ 1"}
	}
	if len(c.Hidden) > 8 {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "Config.Hidden", Value: c.Hidden, Reason: "at most 8 layers"}
	}
	for _, h := range c.Hidden {
		if h < 1 {
			return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "Config.Hidden", Value: c.Hidden, Reason: "widths must be ≥ 1"}
		}
	}
	return nil
}

// Batch is one GRPO update for gridnet. Each decision (one agent at one joint step) is one
// position: the trainer sees N rows of T=1, so the token-mean of the loss is a mean over
// decisions. Callers give every decision the advantage of its episode (GroupAdvantages) or of
// its agent in that episode (AgentGroupAdvantages).
type Batch struct {
	N           int
	Obs         []float32 // N·ObsSize
	Legal       []bool    // optional N·NumMoves legal-move mask (true = legal), as given to Act
	Actions     []int32   // N moves taken
	LogProbs    []float32 // N behaviour log-probs returned by Act
	Advantages  []float32 // N
	RefLogProbs []float32 // optional N reference log-probs (KL penalty when KLCoef > 0)
}

// TrainState is the caller's state saved with a checkpoint, so a run resumes exactly.
type TrainState struct {
	ConfigVersion int64  // environment config version in use
	DataPosition  int64  // position in the caller's data/instance stream
	RNGState      []byte // e.g. from (*rand.PCG).MarshalBinary
}
