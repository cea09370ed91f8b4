package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// Opener loads models on one engine. Each engine package registers one (Register) when it
// is linked into a binary: learner/qwen3 for gomlx, learner/torch for torch.
type Opener struct {
	// Open loads the Hugging Face Qwen3 directory dir on the engine s names.
	Open func(ctx context.Context, s Spec, dir string) (Model, error)
	// Random builds a model of cfg whose weights are drawn from seed, for benchmarks.
	Random func(ctx context.Context, s Spec, cfg hfmodel.Config, seed uint64) (Model, error)
}

// ErrEngineNotLinked: the engine a Spec names is valid but its package is not in this binary
// (a program opens gomlx models by importing learner/qwen3, torch models by importing
// learner/torch; cmd/t2t imports both).
var ErrEngineNotLinked = errors.New("engine: not linked into this binary")

var (
	openersMu sync.RWMutex
	openers   = map[string]Opener{}
)

// Register makes the engine kind available to Open and NewRandom. It is called from the
// engine package's init; registering an unknown kind, an incomplete Opener, or a kind twice
// is a programming error and panics.
func Register(kind string, o Opener) {
	if !slices.Contains(Names, kind) {
		panic(fmt.Sprintf("engine: Register of unknown engine %q", kind))
	}
	if o.Open == nil || o.Random == nil {
		panic(fmt.Sprintf("engine: Register(%q) without Open or Random", kind))
	}
	openersMu.Lock()
	defer openersMu.Unlock()
	if _, dup := openers[kind]; dup {
		panic(fmt.Sprintf("engine: Register(%q) twice", kind))
	}
	openers[kind] = o
}

// opener validates s and returns the Opener of its engine.
func opener(s Spec) (Opener, error) {
	if err := s.Validate(); err != nil {
		return Opener{}, err
	}
	openersMu.RLock()
	o, ok := openers[s.kind()]
	openersMu.RUnlock()
	if !ok {
		return Opener{}, fmt.Errorf("%w: %s", ErrEngineNotLinked, s.kind())
	}
	return o, nil
}

// Open loads the Hugging Face Qwen3 directory dir on the engine s names: gomlx on a GoMLX
// backend for s.Device, torch in one worker or a rank group over s.Devices. This is the one
// place that chooses an engine.
func Open(ctx context.Context, s Spec, dir string) (Model, error) {
	o, err := opener(s)
	if err != nil {
		return nil, err
	}
	return o.Open(ctx, s, dir)
}

// NewRandom builds a model of cfg with random weights drawn from seed on the engine s names
// (each engine draws its own way), for benchmarks.
func NewRandom(ctx context.Context, s Spec, cfg hfmodel.Config, seed uint64) (Model, error) {
	o, err := opener(s)
	if err != nil {
		return nil, err
	}
	return o.Random(ctx, s, cfg, seed)
}
