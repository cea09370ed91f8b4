package gomlxtrain

import (
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/t2t-lab/t2t/learner"
)

// GRPOLossInputs are the graph nodes GRPOLoss reads. All per-position tensors are [B, T] float32.
type GRPOLossInputs struct {
	NewLogProbs       *graph.Node // log π_new(a_t) of the chosen actions, differentiable (see ChosenLogProbs)
	BehaviourLogProbs *graph.Node // log-probs recorded when the actions were sampled
	Advantages        *graph.Node // [B] (one per sequence) or [B, T]
	Mask              *graph.Node // 1 for trained positions, 0 for prompt and padding
	RefLogProbs       *graph.Node // optional reference-policy log-probs for the KL penalty
	// Scale multiplies the masked sum of per-position losses: pass 1/(trained positions of the
	// whole optimizer batch) when one batch is split into micro-batches (token-mean over the full
	// batch). nil means 1/max(1, ΣMask) of this batch.
	Scale *graph.Node
}

// GRPOLossOutputs are the loss and masked sums for metrics (divide by MaskSum for means).
type GRPOLossOutputs struct {
	Loss      *graph.Node // scalar: Scale · Σ mask·(−min(min(r,C)·A, clip(r,1±ε)·A) + β·k3)
	MaskSum   *graph.Node // Σ mask
	ClipSum   *graph.Node // Σ mask·[clipping or the IS cap cut the gradient]
	KLSum     *graph.Node // Σ mask·((r−1) − log r): k3 estimate of KL(behaviour ‖ new)
	RatioSum  *graph.Node // Σ mask·r
	RefKLSum  *graph.Node // Σ mask·k3(ref, new); zero without RefLogProbs
	AdvAbsSum *graph.Node // Σ mask·|A|
}

// GRPOLoss builds the clipped GRPO loss (graph building; panics on shape errors like GoMLX).
// With r = exp(new − behaviour) and advantage A per position:
//
//	ℓ_t = −min(min(r, C)·A, clip(r, 1−ε, 1+ε)·A) + β·(exp(ref−new) − (ref−new) − 1)
//	loss = Scale · Σ_t mask_t·ℓ_t
//
// C = cfg.ISCap (omitted when 0), ε = cfg.ClipEps, β = cfg.KLCoef (the KL term needs
// RefLogProbs). The default Scale makes it a token-mean over the mask.
func GRPOLoss(cfg learner.GRPOConfig, in GRPOLossInputs) GRPOLossOutputs {
	newLP, oldLP, mask := in.NewLogProbs, in.BehaviourLogProbs, in.Mask
	g := newLP.Graph()
	dt := newLP.DType()
	adv := in.Advantages
	if adv.Rank() == 1 {
		adv = graph.InsertAxes(adv, -1) // [B,1] broadcasts over T
	}
	adv = graph.BroadcastToShape(adv, newLP.Shape())
	logRatio := graph.Sub(newLP, oldLP)
	ratio := graph.Exp(logRatio)
	unclipped := ratio
	if cfg.ISCap > 0 {
		unclipped = graph.MinScalar(ratio, cfg.ISCap)
	}
	clipped := graph.ClipScalar(ratio, 1-cfg.ClipEps, 1+cfg.ClipEps)
	uA, cA := graph.Mul(unclipped, adv), graph.Mul(clipped, adv)
	perPos := graph.Neg(graph.Min(uA, cA))
	refKL := graph.ZerosLike(newLP)
	if in.RefLogProbs != nil {
		d := graph.Sub(in.RefLogProbs, newLP)
		refKL = graph.Sub(graph.Sub(graph.Exp(d), d), graph.OnesLike(d))
		if cfg.KLCoef > 0 {
			perPos = graph.Add(perPos, graph.MulScalar(refKL, cfg.KLCoef))
		}
	}
	maskSum := graph.ReduceAllSum(mask)
	scale := in.Scale
	if scale == nil {
		scale = graph.Reciprocal(graph.Max(maskSum, graph.Scalar(g, dt, 1)))
	}
	masked := func(x *graph.Node) *graph.Node { return graph.ReduceAllSum(graph.Mul(x, mask)) }
	out := GRPOLossOutputs{
		Loss:    graph.Mul(masked(perPos), scale),
		MaskSum: maskSum,
	}
	// Metrics: no gradient flows through them (they are not part of Loss).
	sg := graph.StopGradient
	cut := graph.ConvertDType(graph.GreaterThan(sg(uA), sg(cA)), dt)
	if cfg.ISCap > 0 { // the cap cuts the gradient where A<0 and r>C
		capped := graph.LogicalAnd(graph.LessThan(sg(adv), graph.ZerosLike(adv)), graph.GreaterThan(sg(ratio), graph.Scalar(g, dt, cfg.ISCap)))
		cut = graph.Max(cut, graph.ConvertDType(capped, dt))
	}
	out.ClipSum = masked(cut)
	out.KLSum = masked(graph.Sub(graph.Sub(sg(ratio), graph.OnesLike(ratio)), sg(logRatio)))
	out.RatioSum = masked(sg(ratio))
	out.RefKLSum = masked(sg(refKL))
	out.AdvAbsSum = masked(graph.Abs(adv))
	return out
}

// ChosenLogProbs returns log softmax(logits)[b, t, actions[b, t]] as [B, T] from logits
// [B, T, V] and integer actions [B, T]. It picks with Gather from the full log-softmax, so no
// Slice sits on the differentiated path (the pure-Go backend cannot differentiate Slice).
func ChosenLogProbs(logits, actions *graph.Node) *graph.Node {
	g := logits.Graph()
	b, t := logits.Shape().Dimensions[0], logits.Shape().Dimensions[1]
	logp := graph.LogSoftmax(logits, -1)
	idxShape := shapes.Make(dtypes.Int32, b, t, 1)
	acts := graph.Reshape(graph.ConvertDType(actions, dtypes.Int32), b, t, 1)
	idx := graph.Concatenate([]*graph.Node{graph.Iota(g, idxShape, 0), graph.Iota(g, idxShape, 1), acts}, -1)
	return graph.Gather(logp, idx)
}

// MaskedEntropySum returns Σ_{b,t} mask·H(softmax(logits[b,t])) (no gradient) for metrics.
func MaskedEntropySum(logits, mask *graph.Node) *graph.Node {
	logp := graph.LogSoftmax(graph.StopGradient(logits), -1)
	h := graph.Neg(graph.ReduceSum(graph.Mul(graph.Exp(logp), logp), -1))
	return graph.ReduceAllSum(graph.Mul(h, mask))
}
