package learner

import (
	"fmt"
	"math"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// GRPOConfig configures GRPO (and behaviour-cloning) updates. DefaultGRPOConfig returns the
// defaults given per field; Validate names the first field out of bounds.
type GRPOConfig struct {
	// GroupSize is the number of rollouts sampled per prompt/instance; advantages are computed
	// within each group. Default 8; must be ≥ 2.
	GroupSize int
	// ScaleByStd divides each group's centred rewards by (std + AdvEps) (GRPO); false keeps the
	// plain centred rewards (Dr. GRPO). Default true.
	ScaleByStd bool
	// AgentWise computes advantages per agent (AgentGroupAdvantages) instead of per episode, for
	// step-wise multi-agent policies with per-agent rewards. Default false. The trainer itself
	// reads only per-row or per-position advantages; this flag is for the caller that builds them.
	AgentWise bool
	// ClipEps is PPO's clip ε: the ratio π_new/π_behaviour is clipped to [1−ε, 1+ε]. Default 0.2;
	// must be in (0, 1).
	ClipEps float64
	// ISCap is the truncated importance weight C (dual-clip PPO): for negative advantages the
	// ratio is capped at C, so a token the new policy likes far more than the behaviour policy did
	// cannot produce an unbounded loss (its gradient is zero beyond C). Default 3; 0 disables;
	// otherwise must be > 1+ClipEps.
	ISCap float64
	// KLCoef is β, the weight of the k3 estimator of KL(π_new ‖ π_ref), per position:
	// exp(ref−new) − (ref−new) − 1. Default 0 (no reference model needed); must be ≥ 0.
	KLCoef float64
	// LR is AdamW's learning rate. Default 1e-3 (suits gridnet; LMs want ~1e-6); must be in (0, 1].
	LR float64
	// WeightDecay is AdamW's decoupled weight decay (applied as lr·wd·w). Default 0; must be in [0, 1).
	WeightDecay float64
	// MaxGradNorm clips the global L2 norm of the summed gradient before the optimizer step.
	// Default 1; 0 disables; must be ≥ 0.
	MaxGradNorm float64
	// MicroBatch is the most rows (sequences; gridnet: decisions) run through one forward and
	// backward pass. Larger batches are split and their gradients summed in accumulator
	// variables before one optimizer step. Default 256; must be ≥ 1.
	MicroBatch int
	// LengthBuckets are the sequence lengths T is padded to (ascending, > 0), bounding the number
	// of compiled graphs; T above the last is rounded up to a multiple of it. Rows of a
	// micro-batch are padded to the next power of two (at most MicroBatch); PaddedShape gives
	// both. Default {1, 16, 64, 256, 1024}; language models: PadLens (multiples of 32 up to
	// 512, then less than 12.5 % padding).
	LengthBuckets []int
}

// DefaultGRPOConfig returns the documented defaults.
// DefaultLR is the learning rate of DefaultGRPOConfig: a network trained from scratch (gridnet).
const DefaultLR = 1e-3

func DefaultGRPOConfig() GRPOConfig {
	return GRPOConfig{
		GroupSize:     8,
		ScaleByStd:    true,
		ClipEps:       0.2,
		ISCap:         3,
		KLCoef:        0,
		LR:            DefaultLR,
		WeightDecay:   0,
		MaxGradNorm:   1,
		MicroBatch:    256,
		LengthBuckets: []int{1, 16, 64, 256, 1024},
	}
}

// Validate returns a *fielderr.Error (wrapping ErrInvalidConfig) naming the first bad field.
func (c GRPOConfig) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "GRPOConfig." + field, Value: v, Reason: reason}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.GroupSize < 2:
		return bad("GroupSize", c.GroupSize, "must be ≥ 2")
	case !finite(c.ClipEps) || c.ClipEps <= 0 || c.ClipEps >= 1:
		return bad("ClipEps", c.ClipEps, "must be in (0, 1)")
	case !finite(c.ISCap) || (c.ISCap != 0 && c.ISCap <= 1+c.ClipEps):
		return bad("ISCap", c.ISCap, "must be 0 (off) or > 1+ClipEps")
	case !finite(c.KLCoef) || c.KLCoef < 0:
		return bad("KLCoef", c.KLCoef, "must be ≥ 0")
	case !finite(c.LR) || c.LR <= 0 || c.LR > 1:
		return bad("LR", c.LR, "must be in (0, 1]")
	case !finite(c.WeightDecay) || c.WeightDecay < 0 || c.WeightDecay >= 1:
		return bad("WeightDecay", c.WeightDecay, "must be in [0, 1)")
	case !finite(c.MaxGradNorm) || c.MaxGradNorm < 0:
		return bad("MaxGradNorm", c.MaxGradNorm, "must be ≥ 0 (0 = off)")
	case c.MicroBatch < 1:
		return bad("MicroBatch", c.MicroBatch, "must be ≥ 1")
	case len(c.LengthBuckets) == 0:
		return bad("LengthBuckets", c.LengthBuckets, "must not be empty")
	}
	for i, b := range c.LengthBuckets {
		if b < 1 || (i > 0 && b <= c.LengthBuckets[i-1]) {
			return bad("LengthBuckets", c.LengthBuckets, "must be ascending and > 0")
		}
	}
	return nil
}

// PaddedShape returns the [rows, T] that a micro-batch of rows sequences of length t is padded
// to: rows to the next power of two (at most MicroBatch; pass at most MicroBatch rows), t to its
// length bucket (LengthBuckets). Each distinct shape compiles one graph.
func (c GRPOConfig) PaddedShape(rows, t int) (int, int) { return c.bucketRows(rows), c.bucketLen(t) }

// bucketLen returns the padded length for a sequence of length t.
func (c GRPOConfig) bucketLen(t int) int {
	for _, b := range c.LengthBuckets {
		if t <= b {
			return b
		}
	}
	last := c.LengthBuckets[len(c.LengthBuckets)-1]
	return (t + last - 1) / last * last
}

// bucketRows returns the padded row count for a micro-batch of n rows.
func (c GRPOConfig) bucketRows(n int) int { return min(PadRows(n), c.MicroBatch) }

// AdvEps is added to a group's reward std before dividing by it.
const AdvEps = 1e-4

// signalTol: rewards closer than this count as equal for the zero-signal statistic.
const signalTol = 1e-6

// GroupAdvantages writes each reward's advantage into dst (grown or allocated as needed) and
// returns it: reward − mean of its group, divided by (std + AdvEps) when scaleByStd (population
// std). rewards holds consecutive groups of groupSize rollouts; its length must be a multiple of
// groupSize (it panics otherwise, as for any index error). A group whose rewards are all equal
// gets zero advantages: it carries no learning signal (see ZeroSignal).
func GroupAdvantages(rewards []float32, groupSize int, scaleByStd bool, dst []float32) []float32 {
	if groupSize < 1 || len(rewards)%groupSize != 0 {
		panic(fmt.Sprintf("learner: GroupAdvantages: %d rewards is not a multiple of groupSize %d", len(rewards), groupSize))
	}
	dst = growF32(dst, len(rewards))
	for g := 0; g < len(rewards); g += groupSize {
		advGroup(rewards[g:g+groupSize], 1, scaleByStd, dst[g:g+groupSize])
	}
	return dst
}

// AgentGroupAdvantages is the agent-wise variant for step-wise multi-agent policies (gridnet):
// rewards is laid out [groups][groupSize episodes][numAgents] (each agent's own reward in each
// episode of the group, e.g. 1 if it reached its goal), and the advantage of agent a in episode
// e is its reward minus the mean of agent a's rewards over the group's episodes (÷ (std+AdvEps)
// of those when scaleByStd). Every decision agent a made in episode e then takes that advantage:
// an agent is judged against itself on the same instance, not against its team-mates, so one
// agent's failure does not punish the others' good moves. The result has the layout of rewards.
func AgentGroupAdvantages(rewards []float32, groupSize, numAgents int, scaleByStd bool, dst []float32) []float32 {
	stride := groupSize * numAgents
	if groupSize < 1 || numAgents < 1 || len(rewards)%stride != 0 {
		panic(fmt.Sprintf("learner: AgentGroupAdvantages: %d rewards is not a multiple of groupSize×numAgents %d", len(rewards), stride))
	}
	dst = growF32(dst, len(rewards))
	for g := 0; g < len(rewards); g += stride {
		for a := range numAgents {
			advGroup(rewards[g+a:g+stride], numAgents, scaleByStd, dst[g+a:g+stride])
		}
	}
	return dst
}

// advGroup centres (and optionally scales) r[0], r[step], r[2·step], … into dst at the same
// offsets.
func advGroup(r []float32, step int, scaleByStd bool, dst []float32) {
	var sum, n float64
	for i := 0; i < len(r); i += step {
		sum += float64(r[i])
		n++
	}
	mean := sum / n
	var ss float64
	for i := 0; i < len(r); i += step {
		d := float64(r[i]) - mean
		ss += d * d
	}
	scale := 1.0
	if scaleByStd {
		scale = 1 / (math.Sqrt(ss/n) + AdvEps)
	}
	for i := 0; i < len(r); i += step {
		dst[i] = float32((float64(r[i]) - mean) * scale)
	}
}

// SignalStats counts groups with no learning signal.
type SignalStats struct {
	Groups     int // groups seen
	ZeroSignal int // groups whose rewards are all equal (within 1e-6): zero advantages, no gradient
}

// ZeroShare is ZeroSignal/Groups (0 when there are no groups).
func (s SignalStats) ZeroShare() float64 {
	if s.Groups == 0 {
		return 0
	}
	return float64(s.ZeroSignal) / float64(s.Groups)
}

// ZeroSignal counts the groups of groupSize consecutive rewards whose rewards are all equal.
func ZeroSignal(rewards []float32, groupSize int) SignalStats {
	var s SignalStats
	if groupSize < 1 {
		return s
	}
	for g := 0; g+groupSize <= len(rewards); g += groupSize {
		s.Groups++
		lo, hi := rewards[g], rewards[g]
		for _, r := range rewards[g : g+groupSize] {
			lo, hi = min(lo, r), max(hi, r)
		}
		if float64(hi)-float64(lo) <= signalTol {
			s.ZeroSignal++
		}
	}
	return s
}

func growF32(dst []float32, n int) []float32 {
	if cap(dst) < n {
		return make([]float32, n)
	}
	return dst[:n]
}
