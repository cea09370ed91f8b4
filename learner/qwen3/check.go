package qwen3

import (
	"fmt"

	"github.com/t2t-lab/t2t/learner"
)

// CheckTokens returns an error wrapping learner.ErrBadBatch for the first id outside the
// vocabulary.
func (c Config) CheckTokens(s []int32) error {
	for _, id := range s {
		if id < 0 || int(id) >= c.VocabSize {
			return fmt.Errorf("%w: token %d outside [0, %d)", learner.ErrBadBatch, id, c.VocabSize)
		}
	}
	return nil
}

// CheckGenerate checks a generation request against the model's configuration, for every
// engine alike: the sample config, topLogProbs ≥ 0, an rng when sampling (hasRNG), at least one
// prompt, no empty prompt, token ids in the vocabulary, and the longest prompt plus
// MaxNewTokens within max_position_embeddings.
func (c Config) CheckGenerate(prompts [][]int32, sc SampleConfig, topLogProbs int, hasRNG bool) error {
	if err := sc.Validate(); err != nil {
		return err
	}
	if topLogProbs < 0 {
		return &learner.ConfigError{Field: "topLogProbs", Value: topLogProbs, Reason: "must be ≥ 0"}
	}
	if sc.Temperature > 0 && !hasRNG {
		return fmt.Errorf("%w: Temperature %v needs an rng", learner.ErrBadBatch, sc.Temperature)
	}
	if len(prompts) == 0 {
		return fmt.Errorf("%w: no prompts", learner.ErrBadBatch)
	}
	maxP := 0
	for i, p := range prompts {
		if len(p) == 0 {
			return fmt.Errorf("%w: prompt %d is empty", learner.ErrBadBatch, i)
		}
		if err := c.CheckTokens(p); err != nil {
			return fmt.Errorf("prompt %d: %w", i, err)
		}
		maxP = max(maxP, len(p))
	}
	if maxP+sc.MaxNewTokens > c.MaxPositionEmbeddings {
		return fmt.Errorf("%w: prompt of %d + %d new tokens exceeds max_position_embeddings=%d", learner.ErrBadBatch, maxP, sc.MaxNewTokens, c.MaxPositionEmbeddings)
	}
	return nil
}

// SameArchitecture reports whether o describes the same weights' shapes and computation as c
// (the fields a checkpoint's tensors and forward pass depend on; torch_dtype, the context length
// and unknown fields may differ).
func (c Config) SameArchitecture(o Config) bool {
	return c.HiddenSize == o.HiddenSize && c.NumHiddenLayers == o.NumHiddenLayers &&
		c.NumAttentionHeads == o.NumAttentionHeads && c.NumKeyValueHeads == o.NumKeyValueHeads &&
		c.HeadDim == o.HeadDim && c.IntermediateSize == o.IntermediateSize && c.VocabSize == o.VocabSize &&
		c.RopeTheta == o.RopeTheta && c.RMSNormEps == o.RMSNormEps && c.TieWordEmbeddings == o.TieWordEmbeddings
}
