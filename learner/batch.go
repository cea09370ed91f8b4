package learner

// SeqBatch is one optimizer step's data: Rows sequences of T positions (gridnet: Rows decisions
// of T=1). Per-position slices have Rows·T entries, row-major.
type SeqBatch struct {
	Rows, T int
	Inputs  []ModelInput
	Actions []int32   // chosen action / next token at each position, in [0, Vocab)
	Mask    []float32 // 1 = train on this position, 0 = prompt/padding; nil = all ones
	// GRPO only:
	BehaviourLogProbs []float32 // log-probs recorded at sampling time
	Advantages        []float32 // Rows (one per sequence) or Rows·T entries
	RefLogProbs       []float32 // optional reference log-probs (KL penalty when KLCoef > 0)
	// Tail > 0 declares that rows are left-padded and every trained position (non-zero Mask,
	// which must then be given) lies in the last Tail positions of its row: the trainer pads
	// rows on the left and, for a model with ModelSpec.TailLogits, evaluates the loss on that
	// window only. 0: right padding, logits at every position.
	Tail int
}

// UpdateStats reports one optimizer step. Means are over trained (masked) positions.
type UpdateStats struct {
	Loss         float64 // the optimised loss: GRPO token-mean, or BC mean cross-entropy (nats)
	Positions    int     // trained positions (Σ mask)
	ClipFrac     float64 // GRPO: share of positions where clipping or the IS cap cut the gradient
	ApproxKL     float64 // GRPO: mean k3 estimate of KL(behaviour ‖ new)
	MeanRatio    float64 // GRPO: mean π_new/π_behaviour
	RefKL        float64 // GRPO: mean k3 estimate of KL(new ‖ ref); 0 without reference
	MeanAbsAdv   float64 // GRPO: mean |advantage|
	Accuracy     float64 // BC: share of positions whose target is the most likely action
	Entropy      float64 // mean policy entropy (nats)
	GradNorm     float64 // global L2 norm of the summed gradient, before clipping
	MicroBatches int
	Step         int64 // optimizer steps taken, including this one
}

// ModelInput is one model input, laid out [Rows, T, Inner...] row-major. Exactly one of F32 and
// I32 is set. Padding (rows and positions) is filled with zeros.
type ModelInput struct {
	F32   []float32
	I32   []int32
	Inner []int // trailing dimensions after [Rows, T]; nil for a [Rows, T] input
}
