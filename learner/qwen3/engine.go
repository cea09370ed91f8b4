package qwen3

import (
	"context"
	"math/rand/v2"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// EngineModel is the gomlx engine: a qwen3.Model on a GoMLX backend and, from the first Step,
// its learner.Trainer.
type EngineModel struct {
	m *Model

	mu      sync.Mutex // guards cfg, trainer
	cfg     learner.GRPOConfig
	trainer *gomlxtrain.Trainer
	steps   int64 // steps of a trainer that SetTrainConfig replaced
}

// init registers the gomlx engine: engine.Open and engine.NewRandom open gomlx models in
// every binary that links this package.
func init() {
	engine.Register(engine.GoMLX, engine.Opener{Open: openEngine, Random: randomEngine})
}

// openEngine loads dir on a GoMLX backend for s.Device.
func openEngine(_ context.Context, s engine.Spec, dir string) (engine.Model, error) {
	be, err := gomlxtrain.NewBackend(s.Device)
	if err != nil {
		return nil, err
	}
	return LoadEngine(be, dir)
}

// randomEngine builds a model of cfg with NewRandom's weights on a GoMLX backend for s.Device.
func randomEngine(_ context.Context, s engine.Spec, cfg hfmodel.Config, seed uint64) (engine.Model, error) {
	be, err := gomlxtrain.NewBackend(s.Device)
	if err != nil {
		return nil, err
	}
	m, err := NewRandom(be, cfg, seed)
	if err != nil {
		return nil, err
	}
	return NewEngine(m), nil
}

// NewEngine wraps m as an engine Model. Steps use learner.DefaultGRPOConfig until
// SetTrainConfig.
func NewEngine(m *Model) *EngineModel {
	return &EngineModel{m: m, cfg: learner.DefaultGRPOConfig()}
}

// LoadEngine loads a Hugging Face directory on backend.
func LoadEngine(backend backends.Backend, dir string) (*EngineModel, error) {
	m, err := Load(backend, dir)
	if err != nil {
		return nil, err
	}
	return NewEngine(m), nil
}

// Qwen3 returns the underlying model.
func (g *EngineModel) Qwen3() *Model { return g.m }

// Engine implements Model.
func (g *EngineModel) Engine() string { return engine.GoMLX }

// Device implements Model.
func (g *EngineModel) Device() string { return g.m.Backend().Name() }

// Config implements Model.
func (g *EngineModel) Config() hfmodel.Config { return g.m.Config() }

// GenerateStream implements Model.
func (g *EngineModel) GenerateStream(prompts [][]int32, sc engine.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(engine.TokenEvent) bool) (*engine.Generation, error) {
	return g.m.GenerateStream(prompts, sc, topLogProbs, rng, onToken)
}

// Logits implements Model.
func (g *EngineModel) Logits(seqs [][]int32) ([][]float32, error) { return g.m.Logits(seqs) }

// SetTrainConfig implements Model. Call it before the first Step: a trainer already built is
// rebuilt with the new settings (its step count kept; Adam's moments live in the model's
// context and stay).
func (g *EngineModel) SetTrainConfig(cfg learner.GRPOConfig) error {
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

func (g *EngineModel) trainerLocked() (*gomlxtrain.Trainer, error) {
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
func (g *EngineModel) LogProbs(b *learner.SeqBatch) ([]float32, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tr, err := g.trainerLocked()
	if err != nil {
		return nil, err
	}
	return tr.LogProbs(b, nil)
}

// Step implements Model.
func (g *EngineModel) Step(kind engine.StepKind, b *learner.SeqBatch) (learner.UpdateStats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	tr, err := g.trainerLocked()
	if err != nil {
		return learner.UpdateStats{}, err
	}
	if kind == engine.StepBC {
		return tr.BCStep(b)
	}
	return tr.GRPOStep(b)
}

// AddLoRA implements Model.
func (g *EngineModel) AddLoRA(cfg hfmodel.LoRAConfig, seed uint64) error {
	return g.m.AddLoRA(cfg, seed)
}

// LoRA implements Model.
func (g *EngineModel) LoRA() (hfmodel.LoRAConfig, bool) { return g.m.LoRA() }

// LoadAdapter implements Model.
func (g *EngineModel) LoadAdapter(dir string) error { return g.m.LoadAdapter(dir) }

// UnloadAdapter implements AdapterUnloader (qwen3.Model.UnloadAdapter).
func (g *EngineModel) UnloadAdapter() error { return g.m.UnloadAdapter() }

// SaveAdapter implements Model.
func (g *EngineModel) SaveAdapter(dir string) error { return g.m.SaveAdapter(dir) }

// Save implements Model.
func (g *EngineModel) Save(dir string, dtype safetensors.DType) error {
	if dtype == "" {
		dtype = safetensors.F32
	}
	return g.m.SaveAs(dir, dtype)
}

// Reload implements Model.
func (g *EngineModel) Reload(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.m.LoadWeights(dir)
}

// Memory implements Model.
func (g *EngineModel) Memory(batch, seqLen int) hfmodel.MemoryEstimate {
	lc, _ := g.m.LoRA()
	return hfmodel.EstimateTrainMemory(g.m.Config(), batch, seqLen, lc, hfmodel.TrainLayout{})
}

// Close implements Model (the GoMLX model holds no process or file).
func (g *EngineModel) Close() error { return nil }

var (
	_ engine.Model           = (*EngineModel)(nil)
	_ engine.AdapterUnloader = (*EngineModel)(nil)
)
