package hfmodel

import (
	"cmp"
	"fmt"
	"math"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// Shape overrides the architecture of a preset (t2t model init and t2t bench take it from
// their flags). Zero fields keep the preset's value.
type Shape struct {
	Layers       int // decoder layers
	Hidden       int // hidden size; head_dim becomes Hidden / query heads
	Intermediate int // MLP intermediate size
	// Heads is the number of query heads; head_dim becomes the hidden size / Heads, and the
	// key-value heads Heads/2 (at least 1) unless KVHeads is given.
	Heads     int
	KVHeads   int     // key-value heads, dividing the query heads
	Vocab     int     // vocabulary size
	RopeTheta float64 // RoPE θ
}

// Apply returns c with the overrides of s, validated. A negative field, or a hidden size (given,
// or kept while Heads changes) that is not a multiple of 2 × the query heads (head_dim must be
// even for RoPE) is a *fielderr.Error naming the field as "Shape.<Field>"; problems of the
// resulting configuration are Config.Validate's.
func (s Shape) Apply(c Config) (Config, error) {
	bad := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "Shape." + field, Value: v, Reason: reason}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Layers", s.Layers}, {"Hidden", s.Hidden}, {"Intermediate", s.Intermediate}, {"Heads", s.Heads}, {"KVHeads", s.KVHeads}, {"Vocab", s.Vocab}} {
		if f.v < 0 {
			return Config{}, bad(f.name, f.v, "must be ≥ 0")
		}
	}
	if s.RopeTheta < 0 || math.IsNaN(s.RopeTheta) {
		return Config{}, bad("RopeTheta", s.RopeTheta, "must be ≥ 0")
	}
	if s.Heads > 0 {
		c.NumAttentionHeads, c.NumKeyValueHeads = s.Heads, max(1, s.Heads/2)
	}
	if s.KVHeads > 0 {
		c.NumKeyValueHeads = s.KVHeads
	}
	if s.Hidden > 0 || s.Heads > 0 {
		h := cmp.Or(s.Hidden, c.HiddenSize)
		if h%(2*c.NumAttentionHeads) != 0 {
			return Config{}, bad("Hidden", h, fmt.Sprintf("must be a multiple of 2 × %d query heads (even head_dim)", c.NumAttentionHeads))
		}
		c.HiddenSize, c.HeadDim = h, h/c.NumAttentionHeads
	}
	c.NumHiddenLayers = cmp.Or(s.Layers, c.NumHiddenLayers)
	c.IntermediateSize = cmp.Or(s.Intermediate, c.IntermediateSize)
	c.VocabSize = cmp.Or(s.Vocab, c.VocabSize)
	c.RopeTheta = cmp.Or(s.RopeTheta, c.RopeTheta)
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// WarmupTokens is the fewest new tokens (at least 2, so that a decode step runs; at most
// newTokens ≥ 2) whose generation of batch prompts of promptLen tokens runs the same padded
// shapes (GenerateShape) as one of newTokens, so that it compiles the same prefill and decode
// graphs: a warm-up before timing a generation.
func WarmupTokens(batch, promptLen, newTokens int) int {
	_, _, s := GenerateShape(batch, promptLen, newTokens)
	w := 2
	for w < newTokens {
		if _, _, ws := GenerateShape(batch, promptLen, w); ws == s {
			break
		}
		w++
	}
	return w
}
