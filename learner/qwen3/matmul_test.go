package qwen3

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
)

func TestSkinnySplit(t *testing.T) {
	t.Logf("simplego float32 block: %d", 1<<simplego.DotGeneralTargetBlockLog2Dim[dtypes.Float32])
	for _, tc := range []struct{ rows, n, k, want int }{
		{8, 151936, 1024, 128}, // 0.6b LM head at decode, batch 8: chunks of 1,187 tokens
		{1, 151936, 1024, 16},  // batch 1: chunks of 9,496
		{8, 3072, 1024, 8},     // 0.6b gate/up
		{8, 9728, 2560, 8},     // 4b gate/up
		{8, 1228, 256, 4},      // no 8 chunks of ≥ 32 rows: 4 of 307
		{32, 3072, 1024, 1},    // rows fill a kernel block: the large path pads nothing
		{8, 64, 64, 1},         // too little work
		{8, 1031, 1024, 1},     // prime N: no chunk size
	} {
		if got := skinnySplit(tc.rows, tc.n, tc.k, 32); got != tc.want {
			t.Errorf("skinnySplit(%d, %d, %d) = %d, want %d", tc.rows, tc.n, tc.k, got, tc.want)
		} else if got > 1 && (tc.n%got != 0 || tc.rows*(tc.n/got) > 16*32*32) {
			t.Errorf("skinnySplit(%d, %d, %d) = %d: chunks off the small path", tc.rows, tc.n, tc.k, got)
		}
	}
}

func skinnyRand(rng *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(v, dims...)
}

func skinnyMaxDiff(t *testing.T, what string, got, want *tensors.Tensor) {
	t.Helper()
	g, w := tensors.MustCopyFlatData[float32](got), tensors.MustCopyFlatData[float32](want)
	if len(g) != len(w) {
		t.Fatalf("%s: %d values, want %d", what, len(g), len(w))
	}
	var d, scale float64
	for i := range g {
		d = math.Max(d, math.Abs(float64(g[i])-float64(w[i])))
		scale = math.Max(scale, math.Abs(float64(w[i])))
	}
	if d > 1e-5*math.Max(1, scale) {
		t.Errorf("%s: max |Δ| %.3g (max |value| %.3g)", what, d, scale)
	}
	t.Logf("%s: max |Δ| %.3g (max |value| %.3g)", what, d, scale)
}

// chunkedDotT equals the plain product, and so do its gradients.
func TestChunkedDotTMatchesPlain(t *testing.T) {
	rng := rand.New(rand.NewPCG(qwenTestSeed(t), 11))
	backend := qwenBackend(t)
	const n, k = 4096, 64
	x, w, c := skinnyRand(rng, 2, 4, k), skinnyRand(rng, n, k), skinnyRand(rng, 2, 4, n)
	plain := func(x, w *graph.Node) *graph.Node { return graph.DotGeneral(x, []int{2}, nil, w, []int{1}, nil) }
	chunked := func(x, w *graph.Node) *graph.Node { return chunkedDotT(x, w, 8) }
	run := func(f func(x, w *graph.Node) *graph.Node) []*tensors.Tensor {
		return graph.MustNewExec(backend, func(x, w, c *graph.Node) []*graph.Node {
			y := f(x, w)
			grads := graph.Gradient(graph.ReduceAllSum(graph.Mul(y, c)), x, w)
			return []*graph.Node{y, grads[0], grads[1]}
		}).MustExec(x, w, c)
	}
	want, got := run(plain), run(chunked)
	if d := got[0].Shape().Dimensions; len(d) != 3 || d[0] != 2 || d[1] != 4 || d[2] != n {
		t.Fatalf("chunked shape %v", got[0].Shape())
	}
	for i, what := range []string{"product", "d/dx", "d/dw"} {
		skinnyMaxDiff(t, what, got[i], want[i])
	}
}

// The model's logits at decode shape (8 rows: the head is split over the vocabulary) equal those
// of the unsplit graph.
func TestSplitHeadLogitsUnchanged(t *testing.T) {
	seed := qwenTestSeed(t)
	cfg := qwenTiny(t)
	cfg.VocabSize = 4096
	m, err := NewRandom(qwenBackend(t), cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	if nc := m.skinnyChunks(8, m.embed.Shape()); nc < 2 {
		t.Fatalf("the head of vocab %d is not split at 8 rows (%d chunks): the test compares nothing", cfg.VocabSize, nc)
	}
	rng := rand.New(rand.NewPCG(seed, 12))
	tok := make([]int32, 8)
	for i := range tok {
		tok[i] = int32(rng.IntN(cfg.VocabSize))
	}
	valid := []int32{1, 1, 1, 1, 1, 1, 1, 1}
	logits := func() *tensors.Tensor {
		e, err := context.NewExec(m.backend, m.ctx, func(_ *context.Context, tok, valid *graph.Node) *graph.Node {
			return m.forward(tok, valid, 1)
		})
		if err != nil {
			t.Fatal(err)
		}
		defer e.Finalize()
		return e.MustExec(tensors.FromFlatDataAndDimensions(tok, 8, 1), tensors.FromFlatDataAndDimensions(valid, 8, 1))[0]
	}
	split := logits()
	m.noSplit = true
	plain := logits()
	skinnyMaxDiff(t, "logits [8, 1, 4096]", split, plain)
}

// BenchmarkSkinnyMatMul: decode-shaped products x [M, K]·Wᵀ on the pure-Go backend, as one
// DotGeneral ("plain", the large path for these shapes) and split over N ("split", dotT).
// Run with -bench SkinnyMatMul -benchtime 3x (the 0.6b head weight is 622 MB).
func BenchmarkSkinnyMatMul(b *testing.B) {
	backend := qwenBackend(b)
	for _, sh := range []struct {
		name    string
		m, k, n int
	}{
		{"head-0.6b-B8", 8, 1024, 151936},
		{"head-0.6b-B1", 1, 1024, 151936},
		{"gate-0.6b-B8", 8, 1024, 3072},
		{"gate-4b-B8", 8, 2560, 9728},
	} {
		rng := rand.New(rand.NewPCG(1, 2))
		x, w := skinnyRand(rng, sh.m, sh.k), skinnyRand(rng, sh.n, sh.k)
		nc := skinnySplit(sh.m, sh.n, sh.k, 1<<simplego.DotGeneralTargetBlockLog2Dim[dtypes.Float32])
		for _, v := range []struct {
			name string
			f    func(x, w *graph.Node) *graph.Node
		}{
			{"plain", func(x, w *graph.Node) *graph.Node { return graph.DotGeneral(x, []int{1}, nil, w, []int{1}, nil) }},
			{fmt.Sprintf("split%d", nc), func(x, w *graph.Node) *graph.Node { return chunkedDotT(x, w, nc) }},
		} {
			b.Run(sh.name+"/"+v.name, func(b *testing.B) {
				e := graph.MustNewExec(backend, v.f)
				defer e.Finalize()
				_ = e.MustExec(x, w)[0].FinalizeAll() // compile
				b.ResetTimer()
				for range b.N {
					_ = e.MustExec(x, w)[0].FinalizeAll()
				}
				b.ReportMetric(2*float64(sh.m*sh.k*sh.n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
			})
		}
	}
}
