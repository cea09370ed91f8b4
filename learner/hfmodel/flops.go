package hfmodel

// TrainFLOPsPerToken is the model FLOPs of one trained token of a sequence of seqLen tokens:
// the PaLM (Chowdhery et al. 2022, appendix B) count
//
//	6·N + 12·L·(heads·head_dim)·seqLen
//
// 6·N: each weight multiplies each token once forward (2 FLOPs, a multiply and an add) and
// twice backward (the activation and the weight gradient). N is MatmulParams. The attention
// term: per layer the scores Q·Kᵀ and the weighted sum P·V cost 2·(heads·head_dim)·seqLen FLOPs
// each forward, times 3 for forward and backward. heads·head_dim is the hidden size in most
// models; in Qwen3-4B it is 4096 against a hidden size of 2560, and the attention matmuls are
// that wide. Causal masking is not discounted: the model computes the whole score matrix. With
// LoRA (loraParams > 0 adapter parameters, LoRAParams) the frozen base weights get no weight
// gradient: 4·N for them plus 6 per adapter parameter.
func (c Config) TrainFLOPsPerToken(seqLen int, loraParams int64) float64 {
	n := float64(c.MatmulParams())
	dense := 6 * n
	if loraParams > 0 {
		dense = 4*n + 6*float64(loraParams)
	}
	return dense + 12*float64(c.NumHiddenLayers)*float64(c.NumAttentionHeads*c.HeadDim)*float64(seqLen)
}

// MatmulParams is N of TrainFLOPsPerToken: the parameters that multiply activations, that is
// every parameter but the input embedding table, which is a lookup (tied models: the table
// counts once, as the LM head; norm weights are counted too, a negligible excess).
func (c Config) MatmulParams() int64 {
	n := c.NumParams()
	if !c.TieWordEmbeddings {
		n -= int64(c.VocabSize) * int64(c.HiddenSize)
	}
	return n
}
