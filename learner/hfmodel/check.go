package hfmodel

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

// SameArchitecture reports whether o describes the same weights' shapes and computation as c
// (the fields a checkpoint's tensors and forward pass depend on; torch_dtype, the context length
// and unknown fields may differ).
func (c Config) SameArchitecture(o Config) bool {
	return c.HiddenSize == o.HiddenSize && c.NumHiddenLayers == o.NumHiddenLayers &&
		c.NumAttentionHeads == o.NumAttentionHeads && c.NumKeyValueHeads == o.NumKeyValueHeads &&
		c.HeadDim == o.HeadDim && c.IntermediateSize == o.IntermediateSize && c.VocabSize == o.VocabSize &&
		c.RopeTheta == o.RopeTheta && c.RMSNormEps == o.RMSNormEps && c.TieWordEmbeddings == o.TieWordEmbeddings
}
