package qwen3

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/t2t-lab/t2t/learner"
)

// CopyTokenizerFiles copies the TokenizerFiles that exist in src into dst (each atomically),
// as Save does for the directory a model was loaded from. Nothing is copied when src is empty
// or is dst.
func CopyTokenizerFiles(src, dst string) error {
	if src == "" || sameDir(src, dst) {
		return nil
	}
	for _, f := range TokenizerFiles {
		p := filepath.Join(src, f)
		if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err := copyFile(p, filepath.Join(dst, f)); err != nil {
			return err
		}
	}
	return nil
}

// LoadWeights replaces the model's weights with those of the Hugging Face directory dir, whose
// config must describe the same architecture (a *learner.ConfigError otherwise). Every tensor
// is read and checked before any is set: on error the model is unchanged. Optimizer state in
// the model's context is kept. A model with LoRA adapters refuses (their base would change
// under them).
func (m *Model) LoadWeights(dir string) error {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora != nil {
		return fmt.Errorf("qwen3: LoadWeights: %w: LoRA adapters are attached", learner.ErrInvalidConfig)
	}
	if !m.cfg.SameArchitecture(cfg) {
		return &learner.ConfigError{Field: "config.json", Value: dir, Reason: "describes another architecture than the model's"}
	}
	weights, err := readWeights(dir, m.cfg)
	if err != nil {
		return err
	}
	return catch(func() {
		for _, s := range m.cfg.weightSpecs() {
			v, _, _ := m.varOf(s.name)
			if err := v.SetValue(tensors.FromFlatDataAndDimensions(weights[s.name], s.shape...)); err != nil {
				panic(err)
			}
			delete(weights, s.name)
		}
		m.srcDir = dir
	})
}
