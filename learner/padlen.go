package learner

// Padded shapes: every distinct shape of a tensor compiles its own graphs, so batch rows and
// sequence lengths are rounded up to a few sizes. PadRows and PadLen are the one place those
// sizes are defined; GRPOConfig.PaddedShape, qwen3.GenerateShape and the benchmarks read them.

// PadRows returns the padded row count (batch size) of n rows: the smallest power of two ≥ n
// (1 for n ≤ 1). GRPOConfig.PaddedShape caps it at MicroBatch.
func PadRows(n int) int {
	p := 1
	for p < n {
		p *= 2
	}
	return p
}

// PadLen's rounding: powers of two from padMin to padQuantum, multiples of padQuantum up to
// padOctaveFrom, then 1/padSteps of the next power of two.
const (
	padMin        = 8
	padQuantum    = 32
	padOctaveFrom = 512
	padSteps      = 16
)

// PadLen returns the padded length of a sequence of n tokens on the language-model paths (the
// text policy's LengthBuckets, the trainer's tail window, qwen3's prompt, KV-cache and Logits
// lengths): 8, 16 or 32 up to 32 tokens, a multiple of 32 up to 512, and above 512 a multiple
// of 1/16 of the next power of two (64 up to 1024, 128 up to 2048, 256 up to 4096, …). Padding
// then costs at most 31 positions up to 512 and less than 12.5 % above (never more than
// rounding up to a power of two ≥ 8), while lengths up to 2^k share 3 + 15 + 8·(k−9) distinct
// shapes (42 up to 4096), each compiling its own graphs. n < 1 gives 8.
func PadLen(n int) int {
	if n <= padQuantum {
		p := padMin
		for p < n {
			p *= 2
		}
		return p
	}
	step := padQuantum
	if n > padOctaveFrom {
		p := padOctaveFrom
		for p < n {
			p *= 2
		}
		step = p / padSteps
	}
	return (n + step - 1) / step * step
}

// PadLens returns PadLen's values from the smallest through PadLen(limit), ascending: as
// GRPOConfig.LengthBuckets they pad every T ≤ limit as PadLen does.
func PadLens(limit int) []int {
	var out []int
	for b := PadLen(1); ; b = PadLen(b + 1) {
		out = append(out, b)
		if b >= limit {
			return out
		}
	}
}
