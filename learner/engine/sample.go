package engine

import (
	"fmt"
	"math"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// SampleConfig configures Generate.
type SampleConfig struct {
	// MaxNewTokens bounds the tokens generated per prompt; must be ≥ 1.
	MaxNewTokens int
	// Temperature divides the logits before sampling; 0 means greedy decoding (the most likely
	// token, the lowest id on ties). Must be ≥ 0.
	Temperature float64
	// TopK keeps only the K most likely tokens (after temperature); 0 disables. Must be ≥ 0.
	TopK int
	// TopP keeps the smallest set of most likely tokens (after TopK) whose probability mass
	// reaches TopP; 0 or 1 disables. Must be in [0, 1].
	TopP float64
	// StopTokens end a sequence when generated (e.g. <|im_end|>, <|endoftext|>); the stop token
	// is included in the output.
	StopTokens []int32
}

// Validate returns a *fielderr.Error naming the first bad field.
func (c SampleConfig) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "SampleConfig." + field, Value: v, Reason: reason}
	}
	switch {
	case c.MaxNewTokens < 1:
		return bad("MaxNewTokens", c.MaxNewTokens, "must be ≥ 1")
	case math.IsNaN(c.Temperature) || math.IsInf(c.Temperature, 0) || c.Temperature < 0:
		return bad("Temperature", c.Temperature, "must be finite and ≥ 0")
	case c.TopK < 0:
		return bad("TopK", c.TopK, "must be ≥ 0")
	case math.IsNaN(c.TopP) || c.TopP < 0 || c.TopP > 1:
		return bad("TopP", c.TopP, "must be in [0, 1]")
	}
	return nil
}

// Generation is the result of Generate, one entry per prompt.
type Generation struct {
	// Tokens are the generated ids (the stop token included when one ended the sequence).
	Tokens [][]int32
	// LogProbs[i][t] is log p(Tokens[i][t]) under softmax(logits/Temperature) over the whole
	// vocabulary, before top-k/top-p truncation (Temperature 0: under softmax(logits)). With
	// Temperature 1 these are the behaviour log-probs GRPO's ratio needs: the trainer computes
	// the same quantity for the same weights.
	LogProbs [][]float32
	// Stopped reports whether a stop token ended the sequence (else MaxNewTokens did).
	Stopped []bool
}

// TokenLogProb is a token id and its log-probability.
type TokenLogProb struct {
	Token   int32
	LogProb float32
}

// TokenEvent is one sampled token, as GenerateStream reports it.
type TokenEvent struct {
	Row     int     // the prompt's index
	Step    int     // 0 for the first generated token
	Token   int32   // the sampled token
	LogProb float32 // its log-probability (see Generation.LogProbs)
	// Top holds the topLogProbs most likely tokens under the same distribution, most likely
	// first (ties: lower id first); nil when topLogProbs is 0. It is reused between events:
	// copy it to keep it.
	Top []TokenLogProb
}

// CheckGenerate checks a generation request against the model's configuration, for every
// engine alike: the sample config, topLogProbs ≥ 0, an rng when sampling (hasRNG), at least one
// prompt, no empty prompt, token ids in the vocabulary, and the longest prompt plus
// MaxNewTokens within max_position_embeddings.
func CheckGenerate(c hfmodel.Config, prompts [][]int32, sc SampleConfig, topLogProbs int, hasRNG bool) error {
	if err := sc.Validate(); err != nil {
		return err
	}
	if topLogProbs < 0 {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "topLogProbs", Value: topLogProbs, Reason: "must be ≥ 0"}
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
