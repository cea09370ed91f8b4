package gridnet

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/t2t-lab/t2t/learner"
)

// StepPolicy is a policy that writes a joint plan one timestep at a time: each agent observes
// its egocentric window (an ObsSize-long vector) and picks one of NumMoves moves.
type StepPolicy interface {
	learner.Policy

	// ObsSize is the observation length the policy takes.
	ObsSize() int
	// Act picks a move for each of n observations (obs holds n·ObsSize values) at
	// temperature (0: greedy), writing the moves to actions and their log-probs to logprobs;
	// legal, if not nil, holds n·NumMoves flags and illegal moves get probability 0.
	Act(obs []float32, n int, legal []bool, temperature float64, rng *rand.Rand, actions []int32, logprobs []float32) error
	// LogProbs scores given moves at temperature 1 into dst.
	LogProbs(obs []float32, n int, legal []bool, actions []int32, dst []float32) error
	// Update runs one GRPO step on b.
	Update(b *Batch) (learner.UpdateStats, error)
	// BCUpdate runs one behaviour-cloning step toward the given moves.
	BCUpdate(obs []float32, n int, legal []bool, actions []int32) (learner.UpdateStats, error)
}

// Model is a trainable gridnet: a StepPolicy with its configuration and the caller's state
// saved in its checkpoints. New builds one on the compute backend a binary links.
type Model interface {
	StepPolicy
	// Config returns the model configuration.
	Config() Config
	// SetTrainState records the caller's state to be saved with the next checkpoint.
	SetTrainState(TrainState)
	// TrainState returns the caller's state (as restored by Load).
	TrainState() TrainState
}

// Builder builds a gridnet Model of cfg, trained with train, on device.
type Builder func(device string, cfg Config, train learner.GRPOConfig) (Model, error)

// ErrNoBackend: no gridnet compute backend is linked into this binary (a program builds
// gridnets by importing learner/gridnet/gomlxnet; cmd/t2t does).
var ErrNoBackend = errors.New("gridnet: no compute backend linked into this binary")

var (
	builderMu sync.RWMutex
	builder   Builder
)

// Register makes b the builder New uses. The backend package calls it from its init;
// registering a second builder is a programming error and panics.
func Register(b Builder) {
	builderMu.Lock()
	defer builderMu.Unlock()
	if builder != nil {
		panic("gridnet: Register called twice")
	}
	builder = b
}

// New builds a gridnet with weights drawn from cfg.Seed and a trainer with train, on device
// ("cpu", or a GoMLX XLA device) of the registered backend.
func New(device string, cfg Config, train learner.GRPOConfig) (Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	builderMu.RLock()
	b := builder
	builderMu.RUnlock()
	if b == nil {
		return nil, fmt.Errorf("%w (device %q)", ErrNoBackend, device)
	}
	return b(device, cfg, train)
}
