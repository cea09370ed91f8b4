package gomlxtrain

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/internal/testseed"
	"github.com/t2t-lab/t2t/learner"
)

// lrnRefGRPO is the plain float64 hand computation of GRPOLoss on logits [n][V] (n = B·T
// positions, advantages already per position).
type lrnRefOut struct{ loss, maskSum, clip, kl, ratio, refKL float64 }

func lrnRefLogSoftmax(row []float64) []float64 {
	m := math.Inf(-1)
	for _, x := range row {
		m = math.Max(m, x)
	}
	var s float64
	for _, x := range row {
		s += math.Exp(x - m)
	}
	out := make([]float64, len(row))
	for i, x := range row {
		out[i] = x - m - math.Log(s)
	}
	return out
}

func lrnRefGRPO(cfg learner.GRPOConfig, logits [][]float64, actions []int32, old, adv, mask, ref []float64) lrnRefOut {
	var o lrnRefOut
	var sum float64
	for i, row := range logits {
		lp := lrnRefLogSoftmax(row)[actions[i]]
		r := math.Exp(lp - old[i])
		u := r
		if cfg.ISCap > 0 {
			u = math.Min(r, cfg.ISCap)
		}
		c := math.Min(math.Max(r, 1-cfg.ClipEps), 1+cfg.ClipEps)
		l := -math.Min(u*adv[i], c*adv[i])
		var k3 float64
		if ref != nil {
			d := ref[i] - lp
			k3 = math.Exp(d) - d - 1
			l += cfg.KLCoef * k3
		}
		sum += mask[i] * l
		o.maskSum += mask[i]
		cut := u*adv[i] > c*adv[i] || (cfg.ISCap > 0 && adv[i] < 0 && r > cfg.ISCap)
		if cut {
			o.clip += mask[i]
		}
		o.kl += mask[i] * ((r - 1) - (lp - old[i]))
		o.ratio += mask[i] * r
		o.refKL += mask[i] * k3
	}
	o.loss = sum / math.Max(o.maskSum, 1)
	return o
}

// lrnLossCase builds a tiny batch: B=2 rows, T=3 positions, V=4, with ratios that hit the clip
// range on both sides and the IS cap.
func lrnLossCase(rng *rand.Rand) (logits [][]float64, actions []int32, old, advRow, mask, ref []float64) {
	const B, T, V = 2, 3, 4
	logits = make([][]float64, B*T)
	for i := range logits {
		logits[i] = make([]float64, V)
		for j := range logits[i] {
			logits[i][j] = rng.NormFloat64()
		}
		actions = append(actions, int32(rng.IntN(V)))
		lp := lrnRefLogSoftmax(logits[i])[actions[i]]
		// log-ratios: −0.5 (clipped low), 0.05 (inside), 0.4 (clipped high), 1.5 (past the cap).
		shift := []float64{-0.5, 0.05, 0.4, 1.5, -0.3, 0.1}[i]
		old = append(old, lp-shift)
		ref = append(ref, lp+0.3*rng.NormFloat64())
	}
	advRow = []float64{1.3, -0.7}
	mask = []float64{1, 1, 1, 1, 1, 0}
	return
}

func lrnF32(x []float64) []float32 {
	out := make([]float32, len(x))
	for i, v := range x {
		out[i] = float32(v)
	}
	return out
}

func lrnGRPOLossExec(t *testing.T, cfg learner.GRPOConfig) *graph.Exec {
	return graph.MustNewExec(lrnBackend(t), func(logits, actions, old, adv, mask, ref *graph.Node) []*graph.Node {
		newLP := ChosenLogProbs(logits, actions)
		out := GRPOLoss(cfg, GRPOLossInputs{NewLogProbs: newLP, BehaviourLogProbs: old, Advantages: adv, Mask: mask, RefLogProbs: ref})
		grad := graph.Gradient(out.Loss, logits)[0]
		return []*graph.Node{out.Loss, out.MaskSum, out.ClipSum, out.KLSum, out.RatioSum, out.RefKLSum, grad}
	})
}

func TestGRPOLossMatchesHand(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 21), 2))
	logits, actions, old, advRow, mask, ref := lrnLossCase(rng)
	const B, T, V = 2, 3, 4
	advPos := make([]float64, B*T)
	for i := range advPos {
		advPos[i] = advRow[i/T]
	}
	flat := make([]float64, 0, B*T*V)
	for _, r := range logits {
		flat = append(flat, r...)
	}
	for _, cfg := range []learner.GRPOConfig{
		func() learner.GRPOConfig { c := learner.DefaultGRPOConfig(); c.KLCoef = 0.1; return c }(),
		func() learner.GRPOConfig { c := learner.DefaultGRPOConfig(); c.ISCap = 0; c.ClipEps = 0.1; return c }(),
	} {
		want := lrnRefGRPO(cfg, logits, actions, old, advPos, mask, ref)
		if want.clip == 0 || want.clip == want.maskSum {
			t.Fatalf("test case must mix clipped and unclipped positions: %+v", want)
		}
		outs := lrnGRPOLossExec(t, cfg).MustExec(
			tensors.FromFlatDataAndDimensions(lrnF32(flat), B, T, V),
			tensors.FromFlatDataAndDimensions(actions, B, T),
			tensors.FromFlatDataAndDimensions(lrnF32(old), B, T),
			tensors.FromFlatDataAndDimensions(lrnF32(advRow), B), // [B]: broadcast over T
			tensors.FromFlatDataAndDimensions(lrnF32(mask), B, T),
			tensors.FromFlatDataAndDimensions(lrnF32(ref), B, T))
		got := make([]float64, 6)
		for i := range got {
			got[i] = float64(tensors.ToScalar[float32](outs[i]))
		}
		for i, w := range []float64{want.loss, want.maskSum, want.clip, want.kl, want.ratio, want.refKL} {
			if math.Abs(got[i]-w) > 1e-5*math.Max(1, math.Abs(w)) {
				t.Errorf("cfg %+v output %d: got %.7g, hand %.7g", cfg, i, got[i], w)
			}
		}
		// Finite differences of the float64 hand computation vs the graph gradient wrt logits.
		grad := tensors.MustCopyFlatData[float32](outs[6])
		const h = 1e-5
		for i := range logits {
			for j := range logits[i] {
				x := logits[i][j]
				logits[i][j] = x + h
				up := lrnRefGRPO(cfg, logits, actions, old, advPos, mask, ref).loss
				logits[i][j] = x - h
				dn := lrnRefGRPO(cfg, logits, actions, old, advPos, mask, ref).loss
				logits[i][j] = x
				fd := (up - dn) / (2 * h)
				if g := float64(grad[i*V+j]); math.Abs(g-fd) > 1e-4 {
					t.Errorf("d loss/d logits[%d][%d]: graph %.6g, finite difference %.6g", i, j, g, fd)
				}
			}
		}
	}
}

type lrnToy struct {
	ctx   *context.Context
	table *context.Variable
	tr    *Trainer
}

func newLrnToy(t testing.TB, cfg learner.GRPOConfig) *lrnToy {
	ctx := context.New()
	toy := &lrnToy{ctx: ctx}
	toy.table = ctx.In("toy").VariableWithValue("table", tensors.FromShape(lrnShapeF32(toyT, toyV)))
	spec := ModelSpec{NumInputs: 1, Vocab: toyV, Logits: func(ctx *context.Context, in []*graph.Node) *graph.Node {
		// in[0] is a one-hot position [B, T, toyT]; padded positions are all-zero.
		return graph.DotGeneral(in[0], []int{2}, nil, toy.table.ValueGraph(in[0].Graph()), []int{0}, nil)
	}}
	tr, err := NewTrainer(lrnBackend(t), ctx, cfg, spec)
	if err != nil {
		t.Fatal(err)
	}
	toy.tr = tr
	return toy
}

// rollout samples rows episodes from the current table, returning the batch and the rewards.
func (toy *lrnToy) rollout(rng *rand.Rand, rows int) (*learner.SeqBatch, []float32) {
	table := tensors.MustCopyFlatData[float32](toy.table.MustValue())
	b := &learner.SeqBatch{Rows: rows, T: toyT}
	pos := make([]float32, rows*toyT*toyT)
	rewards := make([]float32, rows)
	for r := range rows {
		for p := range toyT {
			pos[(r*toyT+p)*toyT+p] = 1
			row := make([]float64, toyV)
			for a := range toyV {
				row[a] = float64(table[p*toyV+a])
			}
			lp := lrnRefLogSoftmax(row)
			u, a := rng.Float64(), 0
			for acc := math.Exp(lp[0]); u > acc && a < toyV-1; acc += math.Exp(lp[a]) {
				a++
			}
			b.Actions = append(b.Actions, int32(a))
			b.BehaviourLogProbs = append(b.BehaviourLogProbs, float32(lp[a]))
			if a == toyTarget {
				rewards[r] += 1.0 / toyT
			}
		}
	}
	b.Inputs = []learner.ModelInput{{F32: pos, Inner: []int{toyT}}}
	return b, rewards
}

func TestGRPOToyTaskLearns(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 31), 3))
	cfg := learner.DefaultGRPOConfig()
	cfg.LR = 0.1
	cfg.MicroBatch = 16 // 32 rows: exercises gradient accumulation over 2 micro-batches
	toy := newLrnToy(t, cfg)
	const groups = 4
	var first, last float64
	for it := range 60 {
		b, rewards := toy.rollout(rng, groups*cfg.GroupSize)
		b.Advantages = learner.GroupAdvantages(rewards, cfg.GroupSize, cfg.ScaleByStd, nil)
		var mean float64
		for _, r := range rewards {
			mean += float64(r) / float64(len(rewards))
		}
		if it == 0 {
			first = mean
		}
		last = mean
		if mean >= 0.9 {
			t.Logf("iteration %d: mean reward %.3f (first %.3f)", it, mean, first)
			break
		}
		st, err := toy.tr.GRPOStep(b)
		if err != nil {
			t.Fatal(err)
		}
		if it == 0 && (math.Abs(st.MeanRatio-1) > 1e-4 || st.ClipFrac != 0 || st.MicroBatches != 2) {
			t.Fatalf("first on-policy step: %+v", st)
		}
	}
	if first > 0.4 || last < 0.9 {
		t.Fatalf("mean reward went %.3f → %.3f, want from chance (~0.2) to ≥ 0.9", first, last)
	}
}

// TestTrainerAccumulationMatchesFused checks that splitting a batch into micro-batches (summed
// gradients in accumulator variables) gives the same step as one fused pass.
func TestTrainerAccumulationMatchesFused(t *testing.T) {
	seed := testseed.Get(t, 41)
	var tables [2][]float32
	var stats [2]learner.UpdateStats
	for i, micro := range []int{64, 5} {
		cfg := learner.DefaultGRPOConfig()
		cfg.MicroBatch = micro
		cfg.KLCoef = 0.05
		cfg.MaxGradNorm = 0.05 // make clipping active
		toy := newLrnToy(t, cfg)
		rng := rand.New(rand.NewPCG(seed, 4))
		init := make([]float32, toyT*toyV)
		for j := range init {
			init[j] = float32(rng.NormFloat64())
		}
		if err := toy.table.SetValue(tensors.FromFlatDataAndDimensions(init, toyT, toyV)); err != nil {
			t.Fatal(err)
		}
		b, rewards := toy.rollout(rng, 24)
		b.Advantages = learner.GroupAdvantages(rewards, cfg.GroupSize, true, nil)
		b.RefLogProbs = make([]float32, len(b.BehaviourLogProbs))
		for j := range b.RefLogProbs {
			b.RefLogProbs[j] = b.BehaviourLogProbs[j] - 0.2
			b.BehaviourLogProbs[j] += float32(0.3 * rng.NormFloat64()) // off-policy: some clipping
		}
		st, err := toy.tr.GRPOStep(b)
		if err != nil {
			t.Fatal(err)
		}
		stats[i] = st
		tables[i] = tensors.MustCopyFlatData[float32](toy.table.MustValue())
	}
	if stats[0].MicroBatches != 1 || stats[1].MicroBatches != 5 {
		t.Fatalf("micro-batches: %d, %d", stats[0].MicroBatches, stats[1].MicroBatches)
	}
	if stats[0].GradNorm <= 0.05 || stats[0].ClipFrac == 0 {
		t.Fatalf("test must clip the gradient and the ratio: %+v", stats[0])
	}
	for _, p := range [][2]float64{
		{stats[0].Loss, stats[1].Loss}, {stats[0].GradNorm, stats[1].GradNorm},
		{stats[0].ClipFrac, stats[1].ClipFrac}, {stats[0].RefKL, stats[1].RefKL},
	} {
		if math.Abs(p[0]-p[1]) > 1e-5*math.Max(1, math.Abs(p[0])) {
			t.Fatalf("stats differ: fused %+v, accumulated %+v", stats[0], stats[1])
		}
	}
	for j := range tables[0] {
		if math.Abs(float64(tables[0][j]-tables[1][j])) > 1e-5 {
			t.Fatalf("weight %d: fused %v, accumulated %v", j, tables[0][j], tables[1][j])
		}
	}
}

func TestTrainerRejectsBadBatch(t *testing.T) {
	toy := newLrnToy(t, learner.DefaultGRPOConfig())
	rng := rand.New(rand.NewPCG(1, 1))
	b, _ := toy.rollout(rng, 4)
	b.Advantages = []float32{1, 2, 3} // neither Rows nor Rows·T
	if _, err := toy.tr.GRPOStep(b); !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("got %v", err)
	}
	b.Advantages = make([]float32, 4)
	b.Actions[0] = toyV
	if _, err := toy.tr.GRPOStep(b); !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("got %v", err)
	}
	b.Actions[0] = 0
	b.Mask = make([]float32, 4*toyT)
	if _, err := toy.tr.GRPOStep(b); !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("all-zero mask: got %v", err)
	}
}

// BenchmarkGRPOToyIteration times one toy iteration: rollout of 32 episodes × 8 positions and
// one GRPO step.
func BenchmarkGRPOToyIteration(b *testing.B) {
	cfg := learner.DefaultGRPOConfig()
	cfg.LR = 0.1
	toy := newLrnToy(b, cfg)
	rng := rand.New(rand.NewPCG(1, 1))
	for i := range b.N + 1 {
		if i == 1 {
			b.ResetTimer() // the first iteration compiles
		}
		batch, rewards := toy.rollout(rng, 32)
		batch.Advantages = learner.GroupAdvantages(rewards, cfg.GroupSize, true, nil)
		if _, err := toy.tr.GRPOStep(batch); err != nil {
			b.Fatal(err)
		}
	}
}

const (
	toyT, toyV, toyTarget = 8, 5, 2
)
