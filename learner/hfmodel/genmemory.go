package hfmodel

import "math"

// GenerateMemory estimates the bytes a Generate (or GenerateStream) call of n prompts, the
// longest promptLen tokens, with maxNewTokens new tokens allocates beyond the weights, on the
// padded shapes it runs on (GenerateShape's b rows, p prompt and s cache positions), float32
// throughout. The live buffers are
//
//   - the KV cache, keys and values [b, s, KVH, D] per layer, counted three times: a decode
//     step's input caches and its output caches are alive together, and the prefill's padding
//     (or, without DynamicUpdateSlice, a decode step's selected write) builds a third copy;
//   - the activations of one decoder layer over the prefill's b·p tokens (executors free a
//     layer's temporaries once the next layer has read them): residual, norms and projections
//     (6H), q, k and v before and after norm and RoPE (4Q + 4KV), the MLP (4I), and the
//     attention scores, mask and probabilities (3·heads·p per token), or one decode step's
//     (scores over s positions) when that is larger;
//   - the logits [b, V] on the device and on the host, and the sampler's float64 copy of one row;
//
// and the estimate is twice that, because the pure-Go backend's buffers live on the Go heap,
// which grows to twice its live data before the collector runs (GOGC=100). Measured on the
// tiny preset (serve.BenchmarkGenerateMemoryEstimate), the peak RSS grew by 0.67–0.88×
// the estimate; other engines allocate otherwise (XLA, torch's caching allocator, bf16
// autocast) and were not measured. It is what a server checks a request against before it
// generates, not a guarantee. Products that overflow int64 (or
// sizes beyond 2^40) give math.MaxInt64.
func (c Config) GenerateMemory(n, promptLen, maxNewTokens int) int64 {
	const f32 = 4
	if n > 1<<40 || promptLen > 1<<40 || maxNewTokens > 1<<40 { // beyond any memory; PadLen would overflow
		return math.MaxInt64
	}
	b, p, s := GenerateShape(n, promptLen, maxNewTokens)
	h, i := float64(c.HiddenSize), float64(c.IntermediateSize)
	heads := float64(c.NumAttentionHeads)
	q := heads * float64(c.HeadDim)
	kv := float64(c.NumKeyValueHeads) * float64(c.HeadDim)
	fb, fp, fs := float64(b), float64(p), float64(s)
	cache := 2 * float64(c.NumHiddenLayers) * fb * fs * kv * f32
	perToken := 6*h + 4*q + 4*kv + 4*i
	prefill := fb * fp * (perToken + 3*heads*fp) * f32
	decode := fb * (perToken + 3*heads*fs) * f32
	logits := 2*fb*float64(c.VocabSize)*f32 + 8*float64(c.VocabSize)
	total := 2 * (3*cache + math.Max(prefill, decode) + logits)
	if total >= math.MaxInt64 || math.IsNaN(total) {
		return math.MaxInt64
	}
	return int64(total)
}
