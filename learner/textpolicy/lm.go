package textpolicy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// LM is an in-process Qwen3 model with its tokenizer and stop tokens: what Policy trains and
// the serve package serves. Its generation methods may run concurrently with each other (the
// model serialises them); Exclusive runs a function (a training step) while no generation
// runs, and makes generations wait until it returns.
type LM struct {
	Model *qwen3.Model
	Tok   *tokenizer.Tokenizer
	// Stop are the ids that end a completion: <|im_end|> and <|endoftext|>, those the
	// tokenizer has.
	Stop []int32
	// Dir is the checkpoint directory the LM was loaded from ("" when built in memory).
	Dir string

	mu sync.RWMutex
}

// NewLM pairs a model with a tokenizer. Every tokenizer id must be a model id (the model's
// vocabulary may be larger: Qwen3 pads it); otherwise the error wraps ErrTokenizer.
func NewLM(m *qwen3.Model, tok *tokenizer.Tokenizer) (*LM, error) {
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

// LoadLM loads a Hugging Face Qwen3 directory (qwen3.Load) and its tokenizer.json.
func LoadLM(backend backends.Backend, dir string) (*LM, error) {
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrTokenizer, dir, err)
	}
	tok, err := tokenizer.Load(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTokenizer, err)
	}
	m, err := qwen3.Load(backend, dir)
	if err != nil {
		return nil, err
	}
	lm, err := NewLM(m, tok)
	if err != nil {
		return nil, err
	}
	lm.Dir = dir
	return lm, nil
}

// Generate is Model.Generate; it waits while Exclusive runs.
func (lm *LM) Generate(prompts [][]int32, sc qwen3.SampleConfig, rng *rand.Rand) (*qwen3.Generation, error) {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	return lm.Model.Generate(prompts, sc, rng)
}

// GenerateStream is Model.GenerateStream; it waits while Exclusive runs.
func (lm *LM) GenerateStream(prompts [][]int32, sc qwen3.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(qwen3.TokenEvent) bool) (*qwen3.Generation, error) {
	lm.mu.RLock()
	defer lm.mu.RUnlock()
	return lm.Model.GenerateStream(prompts, sc, topLogProbs, rng, onToken)
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
