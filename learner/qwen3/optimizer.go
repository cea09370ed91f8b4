package qwen3

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// trainableParams returns the trainable variables with the names the optimizer-state file
// gives them (the torch worker's parameter names): the Hugging Face weight names, or with LoRA
// "model.layers.L.<module>.lora_A" and "…lora_B".
func (m *Model) trainableParams() []gomlxtrain.NamedParam {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []gomlxtrain.NamedParam
	if m.lora != nil {
		for l := range m.cfg.NumHiddenLayers {
			for mod := range numModules {
				ad, ok := m.lora.adapters[loraKey{l, mod}]
				if !ok {
					continue
				}
				base := strings.TrimSuffix(hfmodel.LayerName(l, hfmodel.LayerModules[mod]), ".weight")
				out = append(out, gomlxtrain.NamedParam{Name: base + ".lora_A", Var: ad.a}, gomlxtrain.NamedParam{Name: base + ".lora_B", Var: ad.b})
			}
		}
		return out
	}
	for _, s := range m.cfg.WeightSpecs() {
		v, _, _ := m.varOf(s.Name)
		if v.Trainable {
			out = append(out, gomlxtrain.NamedParam{Name: s.Name, Var: v})
		}
	}
	return out
}

// SaveOptimizer implements engine.OptimizerStater: Adam's moments of the trainable variables,
// its step and the optimizer steps taken, in the torch worker's layout (engine.OptimizerStater),
// written atomically (fsutil.WriteFileAtomic).
func (g *EngineModel) SaveOptimizer(path string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	ts, step, err := gomlxtrain.AdamState(g.m.Context(), g.m.trainableParams())
	if err != nil {
		return err
	}
	steps := g.steps
	if g.trainer != nil {
		steps = g.trainer.Steps()
	}
	meta := map[string]string{"format": engine.OptimizerFormat, "step": strconv.FormatInt(step, 10), "steps": strconv.FormatInt(steps, 10)}
	return fsutil.WriteFileAtomic(path, func(w io.Writer) error { return safetensors.Write(w, ts, meta) })
}

// LoadOptimizer implements engine.OptimizerStater: it checks the file against the trainable
// variables (an error wrapping learner.ErrCheckpointMismatch, nothing changed) and installs
// Adam's moments and step and the step count.
func (g *EngineModel) LoadOptimizer(path string) error {
	ts, meta, err := safetensors.ReadFile(path)
	if err != nil {
		return fmt.Errorf("%w: optimizer state: %w", learner.ErrCheckpointMismatch, err)
	}
	if meta["format"] != engine.OptimizerFormat {
		return fmt.Errorf("%w: optimizer state %s: format %q, want %q", learner.ErrCheckpointMismatch, path, meta["format"], engine.OptimizerFormat)
	}
	step, err1 := strconv.ParseInt(meta["step"], 10, 64)
	steps, err2 := strconv.ParseInt(meta["steps"], 10, 64)
	if err1 != nil || err2 != nil || steps < 0 {
		return fmt.Errorf("%w: optimizer state %s: bad step fields %q, %q", learner.ErrCheckpointMismatch, path, meta["step"], meta["steps"])
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := gomlxtrain.SetAdamState(g.m.Context(), g.m.trainableParams(), ts, step); err != nil {
		return err
	}
	g.steps = steps
	if g.trainer != nil {
		g.trainer.SetSteps(steps)
	}
	return nil
}

var _ engine.OptimizerStater = (*EngineModel)(nil)
