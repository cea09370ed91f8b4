package hfmodel

import (
	"fmt"
	"strings"
)

// MemoryEstimate is a rough budget, in bytes, for training (GRPO through learner.Trainer) and
// generating with a model.
type MemoryEstimate struct {
	Params          int64 // model parameters
	TrainableParams int64 // parameters the optimizer updates (all, or the LoRA adapters)
	Weights         int64 // float32 master weights (+ LoRA adapters)
	Gradients       int64 // one gradient and one accumulator per trainable parameter (float32)
	Optimizer       int64 // Adam's two moments per trainable parameter (float32)
	Activations     int64 // tensors kept for the backward pass of one micro-batch (float32)
	Logits          int64 // logits, log-softmax and their gradient for one micro-batch
	KVCache         int64 // keys and values for generating batch sequences of seqLen (not in Total)
}

// Total is the training estimate: weights, gradients, optimizer, activations and logits.
func (e MemoryEstimate) Total() int64 {
	return e.Weights + e.Gradients + e.Optimizer + e.Activations + e.Logits
}

func (e MemoryEstimate) String() string {
	gb := func(b int64) string { return fmt.Sprintf("%.2f GiB", float64(b)/(1<<30)) }
	var sb strings.Builder
	fmt.Fprintf(&sb, "params %.3gB (trainable %.3gM): weights %s, grads %s, adam %s, activations %s, logits %s → train total %s; KV cache %s",
		float64(e.Params)/1e9, float64(e.TrainableParams)/1e6, gb(e.Weights), gb(e.Gradients), gb(e.Optimizer),
		gb(e.Activations), gb(e.Logits), gb(e.Total()), gb(e.KVCache))
	return sb.String()
}

// LoRAParams is the number of adapter parameters of lc on a model of shape c.
func (c Config) LoRAParams(lc LoRAConfig) int64 {
	var n int64
	for _, t := range lc.Targets {
		s := c.ModuleShape(loraModules[t])
		n += int64(lc.Rank) * int64(s[0]+s[1])
	}
	return n * int64(c.NumHiddenLayers)
}

// EstimateMemory estimates the memory of a GRPO step on a micro-batch of batch sequences of
// seqLen tokens (float32 everywhere, no rematerialisation), with DefaultLoRAConfig adapters
// when lora is set, and of the KV cache for generating batch sequences of seqLen: it is
// EstimateTrainMemory with DefaultLoRAConfig or no adapters.
func EstimateMemory(cfg Config, batch, seqLen int, lora bool) MemoryEstimate {
	var lc LoRAConfig
	if lora {
		lc = DefaultLoRAConfig()
	}
	return EstimateTrainMemory(cfg, batch, seqLen, lc)
}

// EstimateTrainMemory is EstimateMemory with the adapters lc (lc.Rank 0: full fine-tuning).
// With adapters the base weights are frozen: no gradients or optimizer state for them. It is
// an estimate to print before a run, not a guarantee: backends add workspace and
// fragmentation.
func EstimateTrainMemory(cfg Config, batch, seqLen int, lc LoRAConfig) MemoryEstimate {
	const f32 = 4
	e := MemoryEstimate{Params: cfg.NumParams()}
	e.TrainableParams = e.Params
	e.Weights = e.Params * f32
	if lc.Rank > 0 {
		e.TrainableParams = cfg.LoRAParams(lc)
		e.Weights += e.TrainableParams * f32
	}
	e.Gradients = 2 * e.TrainableParams * f32
	e.Optimizer = 2 * e.TrainableParams * f32
	tokens := int64(batch) * int64(seqLen)
	h, i := int64(cfg.HiddenSize), int64(cfg.IntermediateSize)
	q := int64(cfg.NumAttentionHeads) * int64(cfg.HeadDim)
	kv := int64(cfg.NumKeyValueHeads) * int64(cfg.HeadDim)
	// Per token and layer: residual, norms and projections (≈6H), q/k before and after norm and
	// RoPE and v (4Q + 4KV), attention scores and probabilities (2·heads·T), the MLP (4I).
	perTokenLayer := 6*h + 4*q + 4*kv + 2*int64(cfg.NumAttentionHeads)*int64(seqLen) + 4*i
	e.Activations = tokens * int64(cfg.NumHiddenLayers) * perTokenLayer * f32
	e.Logits = 3 * tokens * int64(cfg.VocabSize) * f32
	e.KVCache = 2 * int64(cfg.NumHiddenLayers) * tokens * kv * f32
	return e
}
