package textpolicy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// LM is a Qwen3 model on a compute engine (engine.Model: gomlx in process, or a torch worker)
// with its tokenizer and stop tokens: what Policy trains and the serve package serves. Its
// generation methods may run concurrently with each other (the model serialises them);
// Exclusive runs a function (a training step) while no generation runs, and makes generations
// wait until it returns.
type LM struct {
	Model engine.Model
	Tok   *tokenizer.Tokenizer
	// Stop are the ids that end a completion: <|im_end|> and <|endoftext|>, those the
	// tokenizer has.
	Stop []int32
	// Dir is the checkpoint directory the LM was loaded from ("" when built in memory).
	Dir string

	mu    sync.RWMutex
	sched *engine.Scheduler // EnableScheduler: generations share its batches
}

// NewLM pairs a model with a tokenizer. Every tokenizer id must be a model id (the model's
// vocabulary may be larger: Qwen3 pads it); otherwise the error wraps ErrTokenizer.
func NewLM(m engine.Model, tok *tokenizer.Tokenizer) (*LM, error) {
	if tok.VocabSize() > m.Config().VocabSize {
		return nil, fmt.Errorf("%w: %d token ids, the model has %d", ErrTokenizer, tok.VocabSize(), m.Config().VocabSize)
	}
	lm := &LM{Model: m, Tok: tok}
	for _, s := range []string{tokenizer.ImEnd, tokenizer.EndOfText} {
		if id, ok := tok.TokenID(s); ok {
			lm.Stop = append(lm.Stop, id)
		}
	}
	if len(lm.Stop) == 0 {
		return nil, fmt.Errorf("%w: no %s or %s token to end completions", ErrTokenizer, tokenizer.ImEnd, tokenizer.EndOfText)
	}
	return lm, nil
}

// OpenLM loads a Hugging Face Qwen3 directory on the engine spec names (engine.Open) with
// its tokenizer.json. The tokenizer is read first, so a directory without one starts no
// worker.
func OpenLM(ctx context.Context, spec engine.Spec, dir string) (*LM, error) {
	return LoadLM(dir, func() (engine.Model, error) { return engine.Open(ctx, spec, dir) })
}

// LoadLM reads dir's tokenizer.json, then calls open for the model (a caller that holds an
// engine's own handle, such as a GoMLX backend, loads through it) and pairs the two (NewLM).
// On error the model is closed.

func LoadLM(dir string, open func() (engine.Model, error)) (*LM, error) {
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTokenizer, dir, err)
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenizer, err)
	}
	m, err := open()
	if err != nil {
		return nil, err
	}
	lm, err := NewLM(m, tok)
	if err != nil {
		_ = m.Close()
		return nil, err
	}
	lm.Dir = dir
	return lm, nil
}

// Close releases the model (after any running generation) and stops a torch worker.
func (lm *LM) Close() error {
	return lm.Exclusive(func() error {
		if lm.sched != nil {
			_ = lm.sched.Close()
			lm.sched = nil
		}
		return lm.Model.Close()
	})
}

// EnableScheduler opens a KV pool of slots sequences of slotLen positions on the model (an
// engine.DecoderOpener) and routes later generations through one engine.Scheduler, so that
// concurrent callers (rollout actors, evaluation, the engineer) share decode steps. A
// generation that does not fit a slot runs directly on the model as before. Call it once,
// after adapters are attached (AddLoRA).
func (lm *LM) EnableScheduler(slots, slotLen int) error {
	op, ok := lm.Model.(engine.DecoderOpener)
	if !ok {
		return fmt.Errorf("%w (engine %s)", engine.ErrNoDecoder, lm.Model.Engine())
	}
	return lm.Exclusive(func() error {
		if lm.sched != nil {
			return nil
		}
		dec, err := op.OpenDecoder(slots, min(slotLen, lm.MaxContext()))
		if err != nil {
			return err
		}
		s, err := engine.NewScheduler(lm.Model.Config(), dec, engine.SchedulerConfig{})
		if err != nil {
			_ = dec.Close()
			return err
		}
		lm.sched = s
		return nil
	})
}

// SchedulerSlots is the scheduler's pool size (0 without EnableScheduler): how many
// sequences can decode at once.
func (lm *LM) SchedulerSlots() int {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	if lm.sched == nil {
		return 0
	}
	return lm.sched.Slots()
}

// SchedulerStats returns the scheduler's counters (false without EnableScheduler).
func (lm *LM) SchedulerStats() (engine.SchedulerStats, bool) {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	if lm.sched == nil {
		return engine.SchedulerStats{}, false
	}
	return lm.sched.Stats(), true
}

// Generate is Model.GenerateStream without a callback; it waits while Exclusive runs.
func (lm *LM) Generate(prompts [][]int32, sc engine.SampleConfig, rng *rand.Rand) (*engine.Generation, error) {
	return lm.GenerateStream(prompts, sc, 0, rng, nil)
}

// GenerateStream is Model.GenerateStream (through the scheduler when enabled: onToken then
// runs on the scheduler's goroutine while this call waits, and each row samples from its own
// stream seeded by one draw of rng); it waits while Exclusive runs.
func (lm *LM) GenerateStream(prompts [][]int32, sc engine.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(engine.TokenEvent) bool) (*engine.Generation, error) {
	return lm.GenerateStreamContext(context.Background(), prompts, sc, topLogProbs, rng, onToken)
}

// GenerateStreamContext is GenerateStream for a caller that may leave: through the scheduler a
// request whose ctx ends leaves the queue, or frees its slots at the next decode step, and
// returns ctx's error; on the direct path onToken should end the rows once ctx ends.
func (lm *LM) GenerateStreamContext(ctx context.Context, prompts [][]int32, sc engine.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(engine.TokenEvent) bool) (*engine.Generation, error) {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	if lm.sched != nil && lm.fits(prompts, sc) {
		var seed uint64
		if rng != nil {
			seed = rng.Uint64()
		} else if sc.Temperature > 0 {
			return nil, engine.CheckGenerate(lm.Model.Config(), prompts, sc, topLogProbs, false)
		}
		return lm.sched.Submit(ctx, engine.Request{Prompts: prompts, Sample: sc,
			TopLogProbs: topLogProbs, Seed: seed, OnToken: onToken})
	}
	return lm.Model.GenerateStream(prompts, sc, topLogProbs, rng, onToken)
}

// schedulerChunk is the rows one Generate call of a caller's batch should carry: def (what
// the direct path holds in memory at once), or, when a scheduler's slots hold every prompt
// with sc.MaxNewTokens new tokens, the pool's size: the scheduler admits the rows as slots free
// and interleaves them with other callers' rows, so one request per pool keeps it full.
func (lm *LM) schedulerChunk(prompts [][]int32, sc engine.SampleConfig, def int) int {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	if lm.sched == nil || lm.sched.Slots() <= def {
		return def
	}
	for _, p := range prompts {
		if len(p)+sc.MaxNewTokens > lm.sched.SlotLen() {
			return def
		}
	}
	return lm.sched.Slots()
}

// fits reports whether the scheduler's pool can ever hold the request.
func (lm *LM) fits(prompts [][]int32, sc engine.SampleConfig) bool {
	if len(prompts) > lm.sched.Slots() {
		return false
	}
	for _, p := range prompts {
		if len(p)+sc.MaxNewTokens > lm.sched.SlotLen() {
			return false
		}
	}
	return true
}

// Exclusive runs fn while no generation runs (a training step changes the weights).
func (lm *LM) Exclusive(fn func() error) error {
	lm.mu.Lock()
	defer lm.mu.Unlock()
	return fn()
}

// MaxContext is the model's context length (max_position_embeddings).
func (lm *LM) MaxContext() int { return lm.Model.Config().MaxPositionEmbeddings }

// CompletionText decodes a completion: its ids without a final stop token.
func (lm *LM) CompletionText(ids []int32) string {
	return lm.Tok.Decode(lm.TrimStop(ids))
}

// TrimStop returns ids without a final stop token.
func (lm *LM) TrimStop(ids []int32) []int32 {
	if n := len(ids); n > 0 && lm.IsStop(ids[n-1]) {
		return ids[:n-1]
	}
	return ids
}

// IsStop reports whether id ends a completion.
func (lm *LM) IsStop(id int32) bool {
	for _, s := range lm.Stop {
		if s == id {
			return true
		}
	}
	return false
}
