package qwen3

import (
	"fmt"
	"slices"

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
				return &learner.ConfigError{Field: "LoRAConfig.Targets", Value: tgt, Reason: "unknown module"}
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
