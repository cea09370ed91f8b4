package qwen3

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// AttachAdapter attaches an adapter held in memory (hfmodel.ReadAdapter, checked against this
// model's configuration), freezing the base weights; no file is read, so a server attaches
// the adapter it read at load time whatever happened on disk since. The values are copied. On
// error the model is unchanged.
func (m *Model) AttachAdapter(ad *hfmodel.Adapter) error {
	values := map[loraKey][2][]float32{}
	for l := range m.cfg.NumHiddenLayers {
		for _, tgt := range ad.Config.Targets {
			mod, ok := loraModule[tgt]
			if !ok {
				return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "LoRAConfig.Targets", Value: tgt, Reason: "unknown module"}
			}
			shape := m.cfg.ModuleShape(hfmodel.LayerModules[mod])
			a, b := ad.Weights[hfmodel.PEFTName(l, mod, "A")], ad.Weights[hfmodel.PEFTName(l, mod, "B")]
			if len(a) != ad.Config.Rank*shape[1] || len(b) != shape[0]*ad.Config.Rank {
				return fmt.Errorf("qwen3: AttachAdapter: %w: adapter %s does not fit this model (layer %d, %s)", learner.ErrInvalidConfig, ad.Dir, l, tgt)
			}
			values[loraKey{l, mod}] = [2][]float32{slices.Clone(a), slices.Clone(b)}
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora != nil || m.trained {
		return fmt.Errorf("qwen3: AttachAdapter: %w: adapters already attached or a Trainer already built", learner.ErrInvalidConfig)
	}
	return m.attachLoRA(ad.Config, values)
}

// AttachAdapter attaches an adapter held in memory (Model.AttachAdapter); a server holds the
// adapters it loaded and attaches them at each swap without reading a file.
func (g *EngineModel) AttachAdapter(ad *hfmodel.Adapter) error { return g.m.AttachAdapter(ad) }

// SwapAdapter replaces the values of the attached adapter by ad's in place when ad has the
// same rank, scale (α/r) and targets: the compiled graphs stay valid, so a server alternating
// between such adapters neither recompiles nor grows (each recompilation leaves the base
// variables holding the dropped graphs' parameter nodes). It reports false, changing nothing,
// when no adapter is attached, a Trainer was built, or ad differs in shape or scale: then
// UnloadAdapter and AttachAdapter.
func (m *Model) SwapAdapter(ad *hfmodel.Adapter) (bool, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := m.lora
	if st == nil || m.trained || st.cfg.Rank != ad.Config.Rank || ad.Config.Alpha/float64(ad.Config.Rank) != st.scale ||
		len(st.adapters) != m.cfg.NumHiddenLayers*len(ad.Config.Targets) {
		return false, nil
	}
	values := make(map[loraKey][2][]float32, len(st.adapters))
	for k, v := range st.adapters {
		a, b := ad.Weights[hfmodel.PEFTName(k.layer, k.mod, "A")], ad.Weights[hfmodel.PEFTName(k.layer, k.mod, "B")]
		if a == nil || b == nil || len(a) != v.a.Shape().Size() || len(b) != v.b.Shape().Size() {
			return false, nil
		}
		values[k] = [2][]float32{a, b}
	}
	for k, v := range st.adapters {
		for i, x := range []*context.Variable{v.a, v.b} {
			t := tensors.FromFlatDataAndDimensions(slices.Clone(values[k][i]), x.Shape().Dimensions...)
			if err := x.SetValue(t); err != nil {
				return false, fmt.Errorf("qwen3: SwapAdapter: %w", err)
			}
		}
	}
	st.cfg = ad.Config
	st.cfg.Targets = slices.Clone(ad.Config.Targets)
	return true, nil
}

// SwapAdapter replaces the attached adapter's values in place (Model.SwapAdapter).
func (g *EngineModel) SwapAdapter(ad *hfmodel.Adapter) (bool, error) { return g.m.SwapAdapter(ad) }
