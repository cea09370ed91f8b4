package engine

import (
	"math/rand/v2"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// GoMLXModel is the gomlx engine: a qwen3.Model on a GoMLX backend and, from the first Step,
// its learner.Trainer.
type GoMLXModel struct {
	m *qwen3.Model

	mu      sync.Mutex // guards cfg, trainer
	cfg     learner.GRPOConfig
	trainer *gomlxtrain.Trainer
	steps   int64 // steps of a trainer that SetTrainConfig replaced
}

// NewGoMLX wraps m as an engine Model. Steps use learner.DefaultGRPOConfig until
// SetTrainConfig.
func NewGoMLX(m *qwen3.Model) *GoMLXModel {
	return &GoMLXModel{m: m, cfg: learner.DefaultGRPOConfig()}
}

// LoadGoMLX loads a Hugging Face directory on backend.
func LoadGoMLX(backend backends.Backend, dir string) (*GoMLXModel, error) {
	m, err := qwen3.Load(backend, dir)
	if err != nil {
		return nil, err
	}
	return NewGoMLX(m), nil
}

// Qwen3 returns the underlying model.
func (g *GoMLXModel) Qwen3() *qwen3.Model { return g.m }

// Engine implements Model.
func (g *GoMLXModel) Engine() string { return GoMLX }

// Device implements Model.
func (g *GoMLXModel) Device() string { return g.m.Backend().Name() }

// Config implements Model.
func (g *GoMLXModel) Config() qwen3.Config { return g.m.Config() }

// GenerateStream implements Model.
func (g *GoMLXModel) GenerateStream(prompts [][]int32, sc qwen3.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(qwen3.TokenEvent) bool) (*qwen3.Generation, error) {
	return g.m.GenerateStream(prompts, sc, topLogProbs, rng, onToken)
}

// Logits implements Model.
func (g *GoMLXModel) Logits(seqs [][]int32) ([][]float32, error) { return g.m.Logits(seqs) }

// SetTrainConfig implements Model. Call it before the first Step: a trainer already built is
// rebuilt with the new settings (its step count kept; Adam's moments live in the model's
// context and stay).
func (g *GoMLXModel) SetTrainConfig(cfg learner.GRPOConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	g.cfg = cfg
	if g.trainer != nil {
		g.steps = g.trainer.Steps()
		g.trainer = nil
	}
	return nil
}

func (g *GoMLXModel) trainerLocked() (*gomlxtrain.Trainer, error) {
	if g.trainer == nil {
		tr, err := g.m.NewTrainer(g.cfg)
		if err != nil {
			return nil, err
		}
		tr.SetSteps(g.steps)
		g.trainer = tr
	}
	return g.trainer, nil
}

// LogProbs implements Model.
func (g *GoMLXModel) LogProbs(b *learner.SeqBatch) ([]float32, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tr, err := g.trainerLocked()
	if err != nil {
		return nil, err
	}
	return tr.LogProbs(b, nil)
}

// Step implements Model.
func (g *GoMLXModel) Step(kind StepKind, b *learner.SeqBatch) (learner.UpdateStats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tr, err := g.trainerLocked()
	if err != nil {
		return learner.UpdateStats{}, err
	}
	if kind == StepBC {
		return tr.BCStep(b)
	}
	return tr.GRPOStep(b)
}

// AddLoRA implements Model.
func (g *GoMLXModel) AddLoRA(cfg qwen3.LoRAConfig, seed uint64) error { return g.m.AddLoRA(cfg, seed) }

// LoRA implements Model.
func (g *GoMLXModel) LoRA() (qwen3.LoRAConfig, bool) { return g.m.LoRA() }

// LoadAdapter implements Model.
func (g *GoMLXModel) LoadAdapter(dir string) error { return g.m.LoadAdapter(dir) }

// UnloadAdapter implements AdapterUnloader (qwen3.Model.UnloadAdapter).
func (g *GoMLXModel) UnloadAdapter() error { return g.m.UnloadAdapter() }

// SaveAdapter implements Model.
func (g *GoMLXModel) SaveAdapter(dir string) error { return g.m.SaveAdapter(dir) }

// Save implements Model.
func (g *GoMLXModel) Save(dir string, dtype safetensors.DType) error {
	if dtype == "" {
		dtype = safetensors.F32
	}
	return g.m.SaveAs(dir, dtype)
}

// Reload implements Model.
func (g *GoMLXModel) Reload(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.LoadWeights(dir)
}

// Memory implements Model.
func (g *GoMLXModel) Memory(batch, seqLen int) qwen3.MemoryEstimate {
	_, lora := g.m.LoRA()
	return qwen3.EstimateMemory(g.m.Config(), batch, seqLen, lora)
}

// Close implements Model (the GoMLX model holds no process or file).
func (g *GoMLXModel) Close() error { return nil }

var (
	_ Model           = (*GoMLXModel)(nil)
	_ AdapterUnloader = (*GoMLXModel)(nil)
)
