package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Source names the model a benchmark runs: a checkpoint directory, or a preset shape with
// random weights built in memory (nothing is written).
type Source struct {
	// Dir is a checkpoint directory; empty: Preset.
	Dir string
	// Preset is a qwen3 preset (qwen3.PresetTiny, …) and Shape its overrides; both are ignored
	// with Dir. The tiny preset's vocabulary is textpolicy.DefaultTinyVocab, as in the
	// checkpoints `t2t model init --preset tiny` writes.
	Preset string
	Shape  hfmodel.Shape
	// Seed seeds the random weights.
	Seed uint64
}

// Name is the model's label in reports: Dir, else Preset.
func (s Source) Name() string {
	if s.Dir != "" {
		return s.Dir
	}
	return s.Preset
}

// Config returns the model's architecture, reading only config.json for Dir. An unreadable
// config.json is an *OpenError; a bad preset or shape override is qwen3's *fielderr.Error.
func (s Source) Config() (hfmodel.Config, error) {
	if s.Dir != "" {
		c, err := hfmodel.LoadConfig(s.Dir)
		if err != nil {
			return c, &OpenError{Dir: s.Dir, Err: err}
		}
		return c, nil
	}
	c, err := hfmodel.Preset(s.Preset)
	if err != nil {
		return c, err
	}
	if s.Preset == hfmodel.PresetTiny {
		// The tiny model is the one `t2t model init --preset tiny` writes: its vocabulary is
		// the tiny tokenizer's.
		c.VocabSize = textpolicy.DefaultTinyVocab
	}
	return s.Shape.Apply(c)
}

// Setup says which model a benchmark runs, where, and what it may do.
type Setup struct {
	Source Source
	// Engine is the compute engine and device the model is built on.
	Engine engine.Spec
	// Force runs on the CPU even when the memory estimate exceeds MemAvailable.
	Force bool
	// Log, if set, gets one line before the model is built: the model, its size and the memory
	// estimate.
	Log func(line string)
}

func (s Setup) logf(format string, args ...any) {
	if s.Log != nil {
		s.Log(fmt.Sprintf(format, args...))
	}
}

// checkMemory refuses a CPU run whose estimate exceeds the memory available now.
func (s Setup) checkMemory(need int64) error {
	if (s.Engine.Device != gomlxtrain.DeviceCPU && s.Engine.Device != "") || s.Force {
		return nil
	}
	if avail := MemAvailable(); avail > 0 && need > avail {
		return &MemoryError{Need: need, Available: avail}
	}
	return nil
}

// open refuses a CPU run whose estimate, need bytes, exceeds the memory available
// (checkMemory), then loads Source.Dir, or builds the preset with random weights, on the
// engine; it returns how long the load or build took.
func (s Setup) open(ctx context.Context, cfg hfmodel.Config, need int64) (engine.Model, time.Duration, error) {
	if err := s.checkMemory(need); err != nil {
		return nil, 0, err
	}
	t0 := time.Now()
	var (
		m   engine.Model
		err error
	)
	if s.Source.Dir != "" {
		m, err = engine.Open(ctx, s.Engine, s.Source.Dir)
	} else {
		m, err = engine.NewRandom(ctx, s.Engine, cfg, s.Source.Seed)
	}
	if err != nil {
		return nil, 0, &OpenError{Dir: s.Source.Dir, Err: err}
	}
	return m, time.Since(t0), nil
}

// backendName describes where the math runs, for the report.
func backendName(m engine.Model) string {
	return m.Engine() + ": " + m.Device()
}

// optionError is the *fielderr.Error of a benchmark option.
func optionError(options, field string, v any, reason string) error {
	return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: options + "." + field, Value: v, Reason: reason}
}
