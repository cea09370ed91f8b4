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
	Gradients       int64 // one gradient and one accumulator per trainable parameter (float32; one copy in place on torch)
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

// TrainLayout is how an engine holds a training step's transient tensors, for EstimateTrainMemory.
// The zero value is the plain layout (every position's logits at once, every layer's
// activations kept): the gomlx engine's.
type TrainLayout struct {
	// LogProbChunk > 0: the output layer, softmax and loss run on at most this many positions at
	// a time (the torch worker's logprob_chunk), so only one chunk's logits exist.
	LogProbChunk int
	// ActivationCheckpointing: only each decoder layer's input is kept; one layer's activations
	// exist at a time, when the backward pass runs it again.
	ActivationCheckpointing bool
	// InPlaceGradients: micro-batches add their gradients into one float32 copy per trainable
	// parameter (torch's .grad), instead of a gradient and an accumulator (gomlx).
	InPlaceGradients bool
}

// EstimateMemory is EstimateTrainMemory with DefaultLoRAConfig adapters when lora is set (no
// adapters otherwise) and the plain layout.
func EstimateMemory(cfg Config, batch, seqLen int, lora bool) MemoryEstimate {
	var lc LoRAConfig
	if lora {
		lc = DefaultLoRAConfig()
	}
	return EstimateTrainMemory(cfg, batch, seqLen, lc, TrainLayout{})
}

// EstimateTrainMemory estimates the memory of a GRPO step on a micro-batch of batch sequences
// of seqLen tokens (float32 everywhere) held as layout says, with the adapters lc (lc.Rank 0:
// full fine-tuning; with adapters the base weights are frozen: no gradients or optimizer state
// for them), and of the KV cache for generating batch sequences of seqLen. It is an estimate
// to print before a run, not a guarantee: backends add workspace and fragmentation, and bf16
// autocast adds its cached bfloat16 copies of the weights.
func EstimateTrainMemory(cfg Config, batch, seqLen int, lc LoRAConfig, layout TrainLayout) MemoryEstimate {
	const f32 = 4
	e := MemoryEstimate{Params: cfg.NumParams()}
	e.TrainableParams = e.Params
	e.Weights = e.Params * f32
	if lc.Rank > 0 {
		e.TrainableParams = cfg.LoRAParams(lc)
		e.Weights += e.TrainableParams * f32
	}
	e.Gradients = 2 * e.TrainableParams * f32
	if layout.InPlaceGradients {
		e.Gradients = e.TrainableParams * f32
	}
	e.Optimizer = 2 * e.TrainableParams * f32
	tokens := int64(batch) * int64(seqLen)
	h, i := int64(cfg.HiddenSize), int64(cfg.IntermediateSize)
	q := int64(cfg.NumAttentionHeads) * int64(cfg.HeadDim)
	kv := int64(cfg.NumKeyValueHeads) * int64(cfg.HeadDim)
	// Per token and layer: residual, norms and projections (≈6H), q/k before and after norm and
	// RoPE and v (4Q + 4KV), attention scores and probabilities (2·heads·T), the MLP (4I).
	perTokenLayer := 6*h + 4*q + 4*kv + 2*int64(cfg.NumAttentionHeads)*int64(seqLen) + 4*i
	if layout.ActivationCheckpointing {
		// Each layer's input, and one layer's activations while it runs again.
		e.Activations = tokens * (int64(cfg.NumHiddenLayers)*h + perTokenLayer) * f32
	} else {
		e.Activations = tokens * int64(cfg.NumHiddenLayers) * perTokenLayer * f32
	}
	logitRows := tokens
	if layout.LogProbChunk > 0 {
		// One chunk's logits, log-softmax and gradient, plus the hidden states' detached copy
		// and its gradient.
		logitRows = min(tokens, int64(layout.LogProbChunk))
		e.Logits = 2 * tokens * h * f32
	}
	e.Logits += 3 * logitRows * int64(cfg.VocabSize) * f32
	e.KVCache = 2 * int64(cfg.NumHiddenLayers) * tokens * kv * f32
	return e
}
