package gomlxtrain

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// LogitsFunc builds a model's logits [B, T, V] (float32) from its inputs, each laid out
// [B, T, ...] as described by the ModelInputs of a SeqBatch. It is graph-building code: it reads
// the model's variables from ctx and panics on error, as GoMLX code does.
type LogitsFunc func(ctx *context.Context, inputs []*graph.Node) *graph.Node

// ModelSpec describes the model a Trainer updates.
type ModelSpec struct {
	NumInputs int        // model inputs per batch (ModelInput entries)
	Vocab     int        // V: actions (gridnet: 5) or tokens
	Logits    LogitsFunc // the forward pass
	// TailLogits, optional, returns the logits [B, tail, V] of only the last tail positions of
	// inputs [B, T, ...]: for SeqBatches with Tail > 0 the trainer then computes the output
	// layer, softmax and loss on the trained window instead of every position (a prompt of P
	// tokens and a completion of C cost the head C/(P+C) of the work). Without it, Tail is a
	// layout only and the full logits are computed.
	TailLogits func(ctx *context.Context, inputs []*graph.Node, tail int) *graph.Node
}

// withGradients is implemented by GoMLX's Adam (train.OptimizeWithGradients).
type withGradients interface {
	UpdateGraphWithGradients(ctx *context.Context, grads []*graph.Node, lossDType dtypes.DType)
}

type lossKind int

const (
	lossGRPO lossKind = iota
	lossBC
)

// Metric slots returned by the loss graphs.
const (
	mLoss = iota
	mMask
	mClip
	mKL
	mRatio
	mRefKL
	mAdvAbs
	mCorrect
	mEntropy
	numMetrics
)

// trainerMaxGraphs bounds the graphs compiled per executor (one per padded input shape).
const trainerMaxGraphs = 256

// accScope holds the gradient accumulators; they are not saved in checkpoints (they are zero
// between steps).
const accScope = "/grad_accumulators"

// Trainer runs GRPO and behaviour-cloning optimizer steps (AdamW, global-norm clipping,
// micro-batches with gradient accumulation, padding to buckets) for any model given as a
// LogitsFunc over variables in a context. It is not safe for concurrent use.
//
// Gradient accumulation works on every backend: each micro-batch's gradient is added to
// accumulator variables by one executable, and a second executable clips their sum, applies
// AdamW and zeroes them. A batch that fits in one micro-batch runs a single fused executable.
type Trainer struct {
	backend backends.Backend
	ctx     *context.Context
	cfg     learner.GRPOConfig
	spec    ModelSpec
	params  []*context.Variable // trainable variables, in context order
	acc     []*context.Variable // one accumulator per param
	opt     withGradients
	execs   map[trainerExecKey]*context.Exec
	step    int64
}

type trainerExecKey struct {
	kind lossKind
	mode int // 0 fused, 1 accumulate, 2 apply, 3 log-probs
}

// NewTrainer prepares a trainer for the model whose variables are already in ctx (every
// trainable variable of ctx is trained). cfg must validate.
func NewTrainer(backend backends.Backend, ctx *context.Context, cfg learner.GRPOConfig, spec ModelSpec) (*Trainer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if spec.NumInputs < 1 || spec.Vocab < 1 || spec.Logits == nil {
		return nil, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "ModelSpec", Value: fmt.Sprintf("inputs=%d vocab=%d", spec.NumInputs, spec.Vocab), Reason: "needs ≥1 input, vocab ≥ 1 and a Logits func"}
	}
	RegisterFastMatMulGradient()
	tr := &Trainer{backend: backend, ctx: ctx, cfg: cfg, spec: spec, execs: map[trainerExecKey]*context.Exec{}}
	for v := range ctx.IterVariables() {
		if v.Trainable {
			tr.params = append(tr.params, v)
		}
	}
	if len(tr.params) == 0 {
		return nil, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "ModelSpec", Value: "ctx", Reason: "context has no trainable variables"}
	}
	err := Catch(func() {
		accCtx := ctx.Checked(false)
		for _, p := range tr.params {
			a := accCtx.InAbsPath(accScope+p.Scope()).VariableWithValue(p.Name(), tensors.FromShape(p.Shape()))
			a.SetTrainable(false)
			tr.acc = append(tr.acc, a)
		}
	})
	if err != nil {
		return nil, err
	}
	// Adam keeps its rate in a context variable that the first step creates and later
	// graphs reuse as it is: a trainer rebuilt with a new rate (engine SetTrainConfig) must
	// set it, or the first rate would stay for good.
	if v := ctx.GetVariableByScopeAndName(context.JoinScope(context.RootScope, optimizers.Scope), optimizers.ParamLearningRate); v != nil {
		if err := v.SetValue(tensors.FromAnyValue(shapes.CastAsDType(cfg.LR, v.DType()))); err != nil {
			return nil, fmt.Errorf("learner: set the learning rate: %w", err)
		}
	}
	opt := optimizers.Adam().LearningRate(cfg.LR).WeightDecay(cfg.WeightDecay).Done()
	wg, ok := opt.(withGradients)
	if !ok {
		return nil, fmt.Errorf("learner: GoMLX Adam %T lacks UpdateGraphWithGradients: %w", opt, learner.ErrCompute)
	}
	tr.opt = wg
	return tr, nil
}

// Config returns the trainer's configuration.
func (tr *Trainer) Config() learner.GRPOConfig { return tr.cfg }

// Steps returns the optimizer steps taken (restored by checkpoints through SetSteps).
func (tr *Trainer) Steps() int64 { return tr.step }

// SetSteps sets the optimizer step counter (after loading a checkpoint).
func (tr *Trainer) SetSteps(n int64) { tr.step = n }

// Catch runs fn, turning a GoMLX panic into an error wrapping ErrCompute.
func Catch(fn func()) (err error) {
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok {
				err = fmt.Errorf("%w: %w", learner.ErrCompute, e)
			} else {
				err = fmt.Errorf("%w: %v", learner.ErrCompute, r)
			}
		}
	}()
	fn()
	return nil
}

// GRPOStep runs one GRPO optimizer step on b.
func (tr *Trainer) GRPOStep(b *learner.SeqBatch) (learner.UpdateStats, error) {
	return tr.runStep(lossGRPO, b)
}

// BCStep runs one behaviour-cloning (cross-entropy on Actions) optimizer step on b; only
// Inputs, Actions and Mask are read.
func (tr *Trainer) BCStep(b *learner.SeqBatch) (learner.UpdateStats, error) {
	return tr.runStep(lossBC, b)
}

func (tr *Trainer) checkBatch(kind lossKind, b *learner.SeqBatch) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", learner.ErrBadBatch, fmt.Sprintf(format, args...))
	}
	if b == nil || b.Rows < 1 || b.T < 1 {
		return bad("need Rows ≥ 1 and T ≥ 1")
	}
	n := b.Rows * b.T
	if len(b.Inputs) != tr.spec.NumInputs {
		return bad("%d inputs, model takes %d", len(b.Inputs), tr.spec.NumInputs)
	}
	for i, in := range b.Inputs {
		inner := 1
		for _, d := range in.Inner {
			inner *= d
		}
		got := len(in.F32) + len(in.I32)
		if (in.F32 == nil) == (in.I32 == nil) || got != n*inner {
			return bad("input %d: want exactly one of F32/I32 with %d values, got %d", i, n*inner, got)
		}
	}
	if len(b.Actions) != n {
		return bad("%d actions for %d positions", len(b.Actions), n)
	}
	for _, a := range b.Actions {
		if a < 0 || int(a) >= tr.spec.Vocab {
			return bad("action %d outside [0,%d)", a, tr.spec.Vocab)
		}
	}
	if b.Mask != nil && len(b.Mask) != n {
		return bad("%d mask values for %d positions", len(b.Mask), n)
	}
	if b.Tail != 0 {
		if b.Tail < 0 || b.Tail > b.T || b.Mask == nil {
			return bad("Tail %d: want 0, or 1..T=%d with a Mask", b.Tail, b.T)
		}
		for r := range b.Rows {
			for t := range b.T - b.Tail {
				if b.Mask[r*b.T+t] != 0 {
					return bad("Tail %d: row %d trains position %d, before its last %d", b.Tail, r, t, b.Tail)
				}
			}
		}
	}
	if kind == lossGRPO {
		if len(b.BehaviourLogProbs) != n {
			return bad("%d behaviour log-probs for %d positions", len(b.BehaviourLogProbs), n)
		}
		if len(b.Advantages) != b.Rows && len(b.Advantages) != n {
			return bad("%d advantages: want Rows=%d or Rows·T=%d", len(b.Advantages), b.Rows, n)
		}
		if b.RefLogProbs != nil && len(b.RefLogProbs) != n {
			return bad("%d reference log-probs for %d positions", len(b.RefLogProbs), n)
		}
		for _, x := range b.Advantages {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return bad("non-finite advantage %v", x)
			}
		}
	}
	return nil
}

func (tr *Trainer) runStep(kind lossKind, b *learner.SeqBatch) (learner.UpdateStats, error) {
	var st learner.UpdateStats
	if err := tr.checkBatch(kind, b); err != nil {
		return st, err
	}
	total := float64(b.Rows * b.T)
	if b.Mask != nil {
		total = 0
		for _, m := range b.Mask {
			total += float64(m)
		}
	}
	if total <= 0 {
		return st, fmt.Errorf("%w: no trained positions (mask is all zero)", learner.ErrBadBatch)
	}
	scale := tensors.FromScalar(float32(1 / total))
	nMicro := (b.Rows + tr.cfg.MicroBatch - 1) / tr.cfg.MicroBatch
	var sums [numMetrics]float64
	mode := 0
	if nMicro > 1 {
		mode = 1
	}
	exec, err := tr.exec(kind, mode)
	if err != nil {
		return st, err
	}
	for m := range nMicro {
		r0 := m * tr.cfg.MicroBatch
		r1 := min(b.Rows, r0+tr.cfg.MicroBatch)
		args := tr.microArgs(kind, b, r0, r1, true)
		args = append(args, scale)
		var outs []*tensors.Tensor
		err := Catch(func() {
			var e error
			outs, e = exec.Exec(args...)
			if e != nil {
				panic(e)
			}
		})
		if err != nil {
			tr.resetAccumulators()
			return st, err
		}
		for i := range numMetrics {
			sums[i] += float64(tensors.ToScalar[float32](outs[i]))
		}
		if mode == 0 {
			st.GradNorm = float64(tensors.ToScalar[float32](outs[numMetrics]))
		}
		Finalize(outs)
	}
	if mode == 1 {
		apply, err := tr.exec(kind, 2)
		if err != nil {
			return st, err
		}
		var outs []*tensors.Tensor
		err = Catch(func() {
			var e error
			outs, e = apply.Exec()
			if e != nil {
				panic(e)
			}
		})
		if err != nil {
			tr.resetAccumulators()
			return st, err
		}
		st.GradNorm = float64(tensors.ToScalar[float32](outs[0]))
		Finalize(outs)
	}
	tr.step++
	n := sums[mMask]
	st.Loss = sums[mLoss]
	st.Positions = int(math.Round(n))
	st.ClipFrac = sums[mClip] / n
	st.ApproxKL = sums[mKL] / n
	st.MeanRatio = sums[mRatio] / n
	st.RefKL = sums[mRefKL] / n
	st.MeanAbsAdv = sums[mAdvAbs] / n
	st.Accuracy = sums[mCorrect] / n
	st.Entropy = sums[mEntropy] / n
	st.MicroBatches = nMicro
	st.Step = tr.step
	return st, nil
}

// resetAccumulators zeroes the gradient accumulators after a failed step.
func (tr *Trainer) resetAccumulators() {
	for _, a := range tr.acc {
		_ = a.SetValue(tensors.FromShape(a.Shape()))
	}
}

// Finalize frees the device memory of ts now rather than at garbage collection.
func Finalize(ts []*tensors.Tensor) {
	for _, t := range ts {
		_ = t.FinalizeAll()
	}
}

// LogProbs writes log π(Actions) at every position of b (Rows·T values, padding included; for a
// Tail batch of a model with TailLogits, positions before the tail window are 0) into dst and
// returns it: the forward pass only, micro-batched like the updates. Use it for reference-model
// log-probs or to recompute behaviour log-probs.
func (tr *Trainer) LogProbs(b *learner.SeqBatch, dst []float32) ([]float32, error) {
	if err := tr.checkBatch(lossBC, b); err != nil {
		return dst, err
	}
	exec, err := tr.exec(lossBC, 3)
	if err != nil {
		return dst, err
	}
	dst = slices.Grow(dst[:0], b.Rows*b.T)[:b.Rows*b.T]
	_, tw := tr.layout(b)
	off := tw.off
	for r0 := 0; r0 < b.Rows; r0 += tr.cfg.MicroBatch {
		r1 := min(b.Rows, r0+tr.cfg.MicroBatch)
		args := tr.microArgs(lossBC, b, r0, r1, false)
		var out *tensors.Tensor
		err := Catch(func() {
			outs, e := exec.Exec(args...)
			if e != nil {
				panic(e)
			}
			out = outs[0]
		})
		if err != nil {
			return dst, err
		}
		w := out.Shape().Dimensions[1]
		tensors.MustConstFlatData(out, func(flat []float32) {
			for r := r0; r < r1; r++ {
				row := dst[r*b.T : (r+1)*b.T]
				clear(row)
				for t := max(0, -off); t < b.T && t+off < w; t++ {
					row[t] = flat[(r-r0)*w+t+off]
				}
			}
		})
		_ = out.FinalizeAll()
	}
	return dst, nil
}

// microArgs builds the padded tensors of rows [r0, r1): model inputs, actions, mask, then for
// GRPO behaviour log-probs, advantages and (if present) reference log-probs.
func (tr *Trainer) microArgs(kind lossKind, b *learner.SeqBatch, r0, r1 int, withTargets bool) []any {
	bp, _ := tr.cfg.PaddedShape(r1-r0, 0)
	in, tw := tr.layout(b)
	args := make([]any, 0, tr.spec.NumInputs+6)
	for _, mi := range b.Inputs {
		inner := 1
		for _, d := range mi.Inner {
			inner *= d
		}
		dims := append([]int{bp, in.len}, mi.Inner...)
		if mi.F32 != nil {
			args = append(args, lrnWindow(mi.F32, b.T, inner, r0, r1, dims, in.off))
		} else {
			args = append(args, lrnWindow(mi.I32, b.T, inner, r0, r1, dims, in.off))
		}
	}
	args = append(args, lrnWindow(b.Actions, b.T, 1, r0, r1, []int{bp, tw.len}, tw.off))
	if !withTargets {
		return args
	}
	mask := b.Mask
	if mask == nil {
		mask = make([]float32, b.Rows*b.T) // only rows r0..r1 are read
		for i := r0 * b.T; i < r1*b.T; i++ {
			mask[i] = 1
		}
	}
	args = append(args, lrnWindow(mask, b.T, 1, r0, r1, []int{bp, tw.len}, tw.off))
	if kind == lossGRPO {
		args = append(args, lrnWindow(b.BehaviourLogProbs, b.T, 1, r0, r1, []int{bp, tw.len}, tw.off))
		adv := b.Advantages
		if len(adv) == b.Rows && b.T > 1 {
			adv = make([]float32, b.Rows*b.T)
			for r := r0; r < r1; r++ {
				for t := range b.T {
					adv[r*b.T+t] = b.Advantages[r]
				}
			}
		}
		args = append(args, lrnWindow(adv, b.T, 1, r0, r1, []int{bp, tw.len}, tw.off))
		if b.RefLogProbs != nil {
			args = append(args, lrnWindow(b.RefLogProbs, b.T, 1, r0, r1, []int{bp, tw.len}, tw.off))
		}
	}
	return args
}

// window is where a batch's per-position targets go in the padded tensors: len positions per
// row, source position t at t+off (positions outside [0, len) are dropped).
type window struct{ len, off int }

// layout returns where b's model inputs and its per-position targets go in the padded tensors.
// Inputs fill the length bucket, right-padded, or left-padded for a Tail batch (the tail stays
// at the row's end). Targets share the inputs' window, except for a Tail batch of a model with
// TailLogits: then only the last tail positions, tail = PadLen(Tail) (8, 16, 32, then a
// multiple of 32 up to 512, …; at most the bucket).
func (tr *Trainer) layout(b *learner.SeqBatch) (inputs, targets window) {
	_, tp := tr.cfg.PaddedShape(0, b.T)
	if b.Tail == 0 {
		return window{tp, 0}, window{tp, 0}
	}
	inputs = window{tp, tp - b.T}
	if tr.spec.TailLogits == nil {
		return inputs, inputs
	}
	w := min(learner.PadLen(b.Tail), tp)
	return inputs, window{w, w - b.T}
}

// lrnWindow copies rows [r0,r1) of src (laid out [rows, t, inner]) into a zero tensor of dims
// ([bp, w, inner...]), source position p of a row at p+off; positions outside [0, w) are
// dropped.
func lrnWindow[E float32 | int32](src []E, t, inner, r0, r1 int, dims []int, off int) *tensors.Tensor {
	out := tensors.FromShape(shapes.Make(dtypes.FromGenericsType[E](), dims...))
	w := dims[1]
	lo, hi := max(0, -off), min(t, w-off)
	tensors.MustMutableFlatData(out, func(flat []E) {
		if hi <= lo {
			return
		}
		for r := r0; r < r1; r++ {
			copy(flat[((r-r0)*w+lo+off)*inner:], src[(r*t+lo)*inner:(r*t+hi)*inner])
		}
	})
	return out
}

func (tr *Trainer) exec(kind lossKind, mode int) (*context.Exec, error) {
	key := trainerExecKey{kind, mode}
	if e, ok := tr.execs[key]; ok {
		return e, nil
	}
	var e *context.Exec
	var err error
	switch mode {
	case 0, 1:
		e, err = context.NewExec(tr.backend, tr.ctx, func(ctx *context.Context, inputs []*graph.Node) []*graph.Node {
			return tr.stepGraph(ctx, kind, mode, inputs)
		})
	case 2:
		e, err = context.NewExec(tr.backend, tr.ctx, func(ctx *context.Context, g *graph.Graph) []*graph.Node {
			grads := make([]*graph.Node, len(tr.acc))
			for i, a := range tr.acc {
				grads[i] = a.ValueGraph(g)
				a.SetValueGraph(graph.ZerosLike(grads[i]))
			}
			return []*graph.Node{tr.applyGraph(ctx, grads)}
		})
	case 3:
		e, err = context.NewExec(tr.backend, tr.ctx, func(ctx *context.Context, inputs []*graph.Node) *graph.Node {
			n := tr.spec.NumInputs
			return ChosenLogProbs(tr.logitsGraph(ctx, inputs[:n], inputs[n].Shape().Dimensions[1]), inputs[n])
		})
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %w", learner.ErrCompute, err)
	}
	// Shapes are bounded by the row and length buckets (and with/without reference log-probs);
	// GoMLX's default of 32 compiled graphs per executor is too few for all combinations.
	e.SetMaxCache(trainerMaxGraphs)
	tr.execs[key] = e
	return e, nil
}

// logitsGraph returns the logits [B, tail, V] of the last tail positions of inputs [B, T, ...]
// (tail == T: all positions).
func (tr *Trainer) logitsGraph(ctx *context.Context, inputs []*graph.Node, tail int) *graph.Node {
	var logits *graph.Node
	if tail < inputs[0].Shape().Dimensions[1] {
		logits = tr.spec.TailLogits(ctx, inputs, tail)
	} else {
		logits = tr.spec.Logits(ctx, inputs)
	}
	want := []int{inputs[0].Shape().Dimensions[0], tail, tr.spec.Vocab}
	if logits.Rank() != 3 || logits.Shape().Dimensions[0] != want[0] || logits.Shape().Dimensions[1] != want[1] || logits.Shape().Dimensions[2] != want[2] {
		panic(errors.New("learner: LogitsFunc returned " + logits.Shape().String() + fmt.Sprintf(", want %v", want)))
	}
	if logits.DType() != dtypes.Float32 {
		logits = graph.ConvertDType(logits, dtypes.Float32)
	}
	return logits
}

// lossGraph returns the scalar loss to differentiate and the numMetrics metric sums.
func (tr *Trainer) lossGraph(ctx *context.Context, kind lossKind, inputs []*graph.Node) (*graph.Node, []*graph.Node) {
	n := tr.spec.NumInputs
	actions, mask := inputs[n], inputs[n+1]
	logits := tr.logitsGraph(ctx, inputs[:n], actions.Shape().Dimensions[1])
	scale := inputs[len(inputs)-1]
	newLP := ChosenLogProbs(logits, actions)
	g := logits.Graph()
	zero := graph.ScalarZero(g, dtypes.Float32)
	metrics := make([]*graph.Node, numMetrics)
	for i := range metrics {
		metrics[i] = zero
	}
	var loss *graph.Node
	switch kind {
	case lossGRPO:
		in := GRPOLossInputs{
			NewLogProbs: newLP, BehaviourLogProbs: inputs[n+2], Advantages: inputs[n+3],
			Mask: mask, Scale: scale,
		}
		if len(inputs) == n+6 {
			in.RefLogProbs = inputs[n+4]
		}
		out := GRPOLoss(tr.cfg, in)
		loss = out.Loss
		metrics[mClip], metrics[mKL], metrics[mRatio] = out.ClipSum, out.KLSum, out.RatioSum
		metrics[mRefKL], metrics[mAdvAbs] = out.RefKLSum, out.AdvAbsSum
	case lossBC:
		loss = graph.Mul(graph.Neg(graph.ReduceAllSum(graph.Mul(newLP, mask))), scale)
		best := graph.ReduceMax(graph.StopGradient(graph.LogSoftmax(logits, -1)), -1)
		correct := graph.ConvertDType(graph.GreaterOrEqual(graph.StopGradient(newLP), graph.AddScalar(best, -1e-6)), dtypes.Float32)
		metrics[mCorrect] = graph.ReduceAllSum(graph.Mul(correct, mask))
	}
	metrics[mLoss] = graph.StopGradient(loss)
	metrics[mMask] = graph.ReduceAllSum(mask)
	metrics[mEntropy] = MaskedEntropySum(logits, mask)
	return loss, metrics
}

func (tr *Trainer) stepGraph(ctx *context.Context, kind lossKind, mode int, inputs []*graph.Node) []*graph.Node {
	loss, metrics := tr.lossGraph(ctx, kind, inputs)
	g := loss.Graph()
	nodes := make([]*graph.Node, len(tr.params))
	for i, p := range tr.params {
		nodes[i] = p.ValueGraph(g)
	}
	grads := graph.Gradient(loss, nodes...)
	if mode == 1 {
		for i, a := range tr.acc {
			a.SetValueGraph(graph.Add(a.ValueGraph(g), grads[i]))
		}
		return metrics
	}
	return append(metrics, tr.applyGraph(ctx, grads))
}

// applyGraph clips grads by global norm, applies AdamW and returns the pre-clip norm.
func (tr *Trainer) applyGraph(ctx *context.Context, grads []*graph.Node) *graph.Node {
	g := grads[0].Graph()
	for _, p := range tr.params {
		p.ValueGraph(g) // Adam updates the trainable variables in use by g.
	}
	var sq *graph.Node
	for _, gr := range grads {
		s := graph.ReduceAllSum(graph.Square(gr))
		if sq == nil {
			sq = s
		} else {
			sq = graph.Add(sq, s)
		}
	}
	norm := graph.Sqrt(sq)
	if tr.cfg.MaxGradNorm > 0 {
		maxN := graph.Scalar(g, norm.DType(), tr.cfg.MaxGradNorm)
		factor := graph.Min(graph.OnesLike(norm), graph.Div(maxN, graph.AddScalar(norm, 1e-6)))
		clipped := make([]*graph.Node, len(grads))
		for i, gr := range grads {
			clipped[i] = graph.Mul(gr, factor)
		}
		grads = clipped
	}
	tr.opt.UpdateGraphWithGradients(ctx, grads, dtypes.Float32)
	return norm
}
