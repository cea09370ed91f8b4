package qwen3

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// LoadWeights replaces the model's weights with those of the Hugging Face directory dir, whose
// config must describe the same architecture (a *fielderr.Error otherwise). Every tensor
// is read and checked before any is set: on error the model is unchanged. Optimizer state in
// the model's context is kept. A model with LoRA adapters refuses (their base would change
// under them).
func (m *Model) LoadWeights(dir string) error {
	cfg, err := hfmodel.LoadConfig(dir)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora != nil {
		return fmt.Errorf("qwen3: LoadWeights: %w: LoRA adapters are attached", learner.ErrInvalidConfig)
	}
	if !m.cfg.SameArchitecture(cfg) {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "config.json", Value: dir, Reason: "describes another architecture than the model's"}
	}
	weights, err := hfmodel.ReadWeights(dir, m.cfg)
	if err != nil {
		return err
	}
	return gomlxtrain.Catch(func() {
		for _, s := range m.cfg.WeightSpecs() {
			v, _, _ := m.varOf(s.Name)
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(weights[s.Name], s.Shape...)); err != nil {
				panic(err)
			}
			delete(weights, s.Name)
		}
		m.srcDir = dir
	})
}
