package torch

import (
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// The engine.Model methods of Group (group.go): which ranks each one runs on.

// Engine implements engine.Model.
func (g *Group) Engine() string { return engine.Torch }

// Device implements engine.Model: the ranks, the process group and rank 0's worker, e.g.
// "2 ranks cpu,cpu (gloo, replicated parameters; rank 0: cpu (torch 1.13.1, ...))".
func (g *Group) Device() string {
	h := g.ranks[0].wk.Hello()
	return fmt.Sprintf("%d ranks %s (%s, %s parameters; rank 0: %s)", len(g.ranks), strings.Join(g.devices, ","), h.Backend, h.Sharding, g.ranks[0].Device())
}

// Config implements engine.Model. It does not wait for a running call (an onToken callback may
// ask): it reads under infoMu, which only the calls that change the config or adapters hold.
func (g *Group) Config() hfmodel.Config {
	g.infoMu.Lock()
	defer g.infoMu.Unlock()
	return g.ranks[0].cfg
}

// GenerateStream implements engine.Model on rank 0 (the ranks hold the same weights).
func (g *Group) GenerateStream(prompts [][]int32, sc engine.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(engine.TokenEvent) bool) (*engine.Generation, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var gen *engine.Generation
	err := g.one(func(m *Model) (err error) {
		gen, err = m.GenerateStream(prompts, sc, topLogProbs, rng, onToken)
		return err
	})
	return gen, err
}

// Logits implements engine.Model on rank 0.
func (g *Group) Logits(seqs [][]int32) ([][]float32, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var out [][]float32
	err := g.one(func(m *Model) (err error) {
		out, err = m.Logits(seqs)
		return err
	})
	return out, err
}

// LogProbs implements engine.Model: each rank computes its share of the rows.
func (g *Group) LogProbs(b *learner.SeqBatch) ([]float32, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.ranks[0].batchMap(b); err != nil {
		return nil, err
	}
	shares := splitRows(b.Rows, len(g.ranks))
	out := make([]float32, b.Rows*b.T)
	err := g.each(func(i int, m *Model) error {
		r0, r1 := shares[i][0], shares[i][1]
		if r0 == r1 {
			return nil
		}
		lp, err := m.LogProbs(sliceRows(b, r0, r1))
		copy(out[r0*b.T:r1*b.T], lp)
		return err
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// SetTrainConfig implements engine.Model on every rank.
func (g *Group) SetTrainConfig(cfg learner.GRPOConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.each(func(_ int, m *Model) error { return m.SetTrainConfig(cfg) })
}

// Step implements engine.Model: rank k steps on rows splitRows(b.Rows, ranks)[k] (none when
// the batch has fewer rows than ranks), with micro-batches of MicroBatch rows within its
// share; the workers divide every share's loss by the whole batch's trained positions and sum
// the gradients and metrics, so the reply (rank 0's) is the whole batch's.
func (g *Group) Step(kind engine.StepKind, b *learner.SeqBatch) (learner.UpdateStats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, err := g.ranks[0].batchMap(b); err != nil {
		return learner.UpdateStats{}, err
	}
	shares := splitRows(b.Rows, len(g.ranks))
	stats := make([]learner.UpdateStats, len(g.ranks))
	err := g.each(func(i int, m *Model) error {
		var bm map[string]any
		if r0, r1 := shares[i][0], shares[i][1]; r1 > r0 {
			var err error
			if bm, err = m.batchMap(sliceRows(b, r0, r1)); err != nil {
				return err
			}
		}
		var err error
		stats[i], err = m.step(kind, bm)
		return err
	})
	if err != nil {
		return learner.UpdateStats{}, err
	}
	return stats[0], nil
}

// AddLoRA implements engine.Model on every rank (the same seed: the same adapters).
func (g *Group) AddLoRA(cfg hfmodel.LoRAConfig, seed uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.infoMu.Lock()
	defer g.infoMu.Unlock()
	return g.each(func(_ int, m *Model) error { return m.AddLoRA(cfg, seed) })
}

// LoRA implements engine.Model (under infoMu, as Config).
func (g *Group) LoRA() (hfmodel.LoRAConfig, bool) {
	g.infoMu.Lock()
	defer g.infoMu.Unlock()
	return g.ranks[0].LoRA()
}

// LoadAdapter implements engine.Model on every rank.
func (g *Group) LoadAdapter(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.infoMu.Lock()
	defer g.infoMu.Unlock()
	return g.each(func(_ int, m *Model) error { return m.LoadAdapter(dir) })
}

// UnloadAdapter implements engine.AdapterUnloader on every rank.
func (g *Group) UnloadAdapter() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.infoMu.Lock()
	defer g.infoMu.Unlock()
	return g.each(func(_ int, m *Model) error { return m.UnloadAdapter() })
}

// SaveAdapter implements engine.Model on rank 0.
func (g *Group) SaveAdapter(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.one(func(m *Model) error { return m.SaveAdapter(dir) })
}

// Save implements engine.Model: rank 0 writes the one Hugging Face directory (its weights are
// every rank's).
func (g *Group) Save(dir string, dtype safetensors.DType) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.one(func(m *Model) error { return m.Save(dir, dtype) })
}

// SaveOptimizer implements engine.OptimizerStater on rank 0 (every rank holds the same state).
func (g *Group) SaveOptimizer(path string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.one(func(m *Model) error { return m.SaveOptimizer(path) })
}

// LoadOptimizer implements engine.OptimizerStater on every rank.
func (g *Group) LoadOptimizer(path string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.each(func(_ int, m *Model) error { return m.LoadOptimizer(path) })
}

// Reload implements engine.Model on every rank. A failure on some ranks only leaves the ranks
// holding different weights: the error says so, and the group should be closed.
func (g *Group) Reload(dir string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.infoMu.Lock()
	defer g.infoMu.Unlock()
	return g.each(func(_ int, m *Model) error { return m.Reload(dir) })
}

// Memory implements engine.Model: one rank's estimate (every rank holds the whole model and runs
// micro-batches of up to batch rows of its share). Ranks on the CPU share the host's memory:
// they need len(ranks) times this there.
func (g *Group) Memory(batch, seqLen int) hfmodel.MemoryEstimate {
	return g.ranks[0].Memory(batch, seqLen)
}

// OpenDecoder implements engine.DecoderOpener on rank 0.
func (g *Group) OpenDecoder(slots, slotLen int) (engine.Decoder, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var d engine.Decoder
	err := g.one(func(m *Model) (err error) {
		d, err = m.OpenDecoder(slots, slotLen)
		return err
	})
	return d, err
}

// Stats is rank 0's memory report (each rank holds the whole model and its share of a batch).
func (g *Group) Stats() (Stats, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	var st Stats
	err := g.one(func(m *Model) (err error) {
		st, err = m.Stats()
		return err
	})
	return st, err
}

// splitRows cuts rows into n contiguous shares [r0, r1) whose sizes differ by at most one
// (empty when rows < n).
func splitRows(rows, n int) [][2]int {
	out := make([][2]int, n)
	for k := range n {
		out[k] = [2]int{k * rows / n, (k + 1) * rows / n}
	}
	return out
}

// sliceRows is rows [r0, r1) of b, sharing its arrays.
func sliceRows(b *learner.SeqBatch, r0, r1 int) *learner.SeqBatch {
	t := b.T
	pos := func(xs []float32) []float32 {
		if xs == nil {
			return nil
		}
		return xs[r0*t : r1*t]
	}
	s := &learner.SeqBatch{Rows: r1 - r0, T: t, Tail: b.Tail, Actions: b.Actions[r0*t : r1*t], Mask: pos(b.Mask),
		BehaviourLogProbs: pos(b.BehaviourLogProbs), RefLogProbs: pos(b.RefLogProbs)}
	switch len(b.Advantages) {
	case b.Rows:
		s.Advantages = b.Advantages[r0:r1]
	case 0:
	default:
		s.Advantages = pos(b.Advantages)
	}
	s.Inputs = make([]learner.ModelInput, len(b.Inputs))
	for i, in := range b.Inputs {
		s.Inputs[i] = learner.ModelInput{I32: in.I32[r0*t : r1*t]}
	}
	return s
}

var (
	_ engine.Model           = (*Group)(nil)
	_ engine.AdapterUnloader = (*Group)(nil)
	_ engine.OptimizerStater = (*Group)(nil)
	_ engine.DecoderOpener   = (*Group)(nil)
)
