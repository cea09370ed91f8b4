package gomlxtrain

import (
	"math"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/t2t-lab/t2t/internal/testseed"
)

var (
	lrnBackendOnce sync.Once
	lrnBackendVal  backends.Backend
	lrnBackendErr  error
)

// lrnBackend returns one shared pure-Go backend for the package's tests.
func lrnBackend(t testing.TB) backends.Backend {
	t.Helper()
	lrnBackendOnce.Do(func() { lrnBackendVal, lrnBackendErr = NewBackend("cpu") })
	if lrnBackendErr != nil {
		t.Fatal(lrnBackendErr)
	}
	return lrnBackendVal
}

func lrnRandTensor(rng *rand.Rand, dims ...int) *tensors.Tensor {
	n := 1
	for _, d := range dims {
		n *= d
	}
	data := make([]float32, n)
	for i := range data {
		data[i] = float32(rng.NormFloat64())
	}
	return tensors.FromFlatDataAndDimensions(data, dims...)
}

type mmCase struct {
	name           string
	lhs, rhs       []int
	lc, lb, rc, rb []int
}

var mmCases = []mmCase{
	{"matmul", []int{5, 7}, []int{7, 3}, []int{1}, nil, []int{0}, nil},
	{"matmul_rhsT", []int{5, 7}, []int{3, 7}, []int{1}, nil, []int{1}, nil},
	{"matmul_lhsT", []int{7, 5}, []int{7, 3}, []int{0}, nil, []int{0}, nil},
	{"dense_rank3", []int{2, 4, 6}, []int{6, 3}, []int{2}, nil, []int{0}, nil},
	{"batched", []int{3, 4, 5}, []int{3, 5, 2}, []int{2}, []int{0}, []int{1}, []int{0}},
	{"attention_like", []int{2, 3, 4, 8}, []int{2, 3, 5, 8}, []int{3}, []int{0, 1}, []int{3}, []int{0, 1}},
	{"batch_not_first", []int{4, 3, 5}, []int{5, 3, 2}, []int{2}, []int{1}, []int{0}, []int{1}},
	{"two_contracting_swapped", []int{3, 4, 6}, []int{6, 4, 2}, []int{1, 2}, nil, []int{1, 0}, nil},
	{"vector_out", []int{5, 7}, []int{7}, []int{1}, nil, []int{0}, nil},
	{"outer_product", []int{4}, []int{3}, nil, nil, nil, nil},
}

// TestFastMatMulGradient compares the registered DotGeneral VJP with GoMLX's stock one on several
// shapes and axes configurations.
func TestFastMatMulGradient(t *testing.T) {
	backend := lrnBackend(t)
	rng := rand.New(rand.NewPCG(testseed.Get(t, 11), 1))
	before := mmFallbacks.Load()
	for _, c := range mmCases {
		t.Run(c.name, func(t *testing.T) {
			lhsT := lrnRandTensor(rng, c.lhs...)
			rhsT := lrnRandTensor(rng, c.rhs...)
			var outDims []int
			exec := graph.MustNewExec(backend, func(lhs, rhs *graph.Node) *graph.Node {
				return graph.DotGeneral(lhs, c.lc, c.lb, rhs, c.rc, c.rb)
			})
			out := exec.MustExec(lhsT, rhsT)[0]
			outDims = out.Shape().Dimensions
			vT := lrnRandTensor(rng, outDims...)
			grads := graph.MustNewExec(backend, func(lhs, rhs, v *graph.Node) []*graph.Node {
				node := graph.DotGeneral(lhs, c.lc, c.lb, rhs, c.rc, c.rb)
				stock := stockDotGenVJP(node, []*graph.Node{v}, shapes.Make(v.DType()))
				fast := fastDotGeneralVJP(node, []*graph.Node{v}, shapes.Make(v.DType()))
				// Through the registry: d/d(lhs,rhs) of sum(out*v) is the VJP of v.
				auto := graph.Gradient(graph.ReduceAllSum(graph.Mul(node, v)), lhs, rhs)
				return []*graph.Node{stock[0], stock[1], fast[0], fast[1], auto[0], auto[1]}
			}).MustExec(lhsT, rhsT, vT)
			for i := range 2 {
				want := tensors.MustCopyFlatData[float32](grads[i])
				for j, got := range [][]float32{tensors.MustCopyFlatData[float32](grads[2+i]), tensors.MustCopyFlatData[float32](grads[4+i])} {
					if !grads[i].Shape().Equal(grads[2+i+2*j].Shape()) {
						t.Fatalf("input %d: shape %s, stock %s", i, grads[2+i+2*j].Shape(), grads[i].Shape())
					}
					for k := range want {
						if d := math.Abs(float64(got[k] - want[k])); d > 1e-5*math.Max(1, math.Abs(float64(want[k]))) {
							t.Fatalf("input %d variant %d elem %d: got %g, stock %g", i, j, k, got[k], want[k])
						}
					}
				}
			}
		})
	}
	if n := mmFallbacks.Load() - before; n != 0 {
		t.Fatalf("%d DotGeneral nodes fell back to the stock VJP: reflection no longer reads the axes", n)
	}
}

// TestFastDotGradient checks the Dot (rank ≤ 2) VJP against a float64 hand computation.
func TestFastDotGradient(t *testing.T) {
	backend := lrnBackend(t)
	rng := rand.New(rand.NewPCG(testseed.Get(t, 12), 1))
	const m, k, n = 4, 6, 3
	a, b, v := lrnRandTensor(rng, m, k), lrnRandTensor(rng, k, n), lrnRandTensor(rng, m, n)
	out := graph.MustNewExec(backend, func(a, b, v *graph.Node) []*graph.Node {
		return graph.Gradient(graph.ReduceAllSum(graph.Mul(graph.Dot(a, b), v)), a, b)
	}).MustExec(a, b, v)
	A, B, V := tensors.MustCopyFlatData[float32](a), tensors.MustCopyFlatData[float32](b), tensors.MustCopyFlatData[float32](v)
	gA, gB := tensors.MustCopyFlatData[float32](out[0]), tensors.MustCopyFlatData[float32](out[1])
	for i := range m {
		for j := range k {
			var s float64
			for c := range n {
				s += float64(V[i*n+c]) * float64(B[j*n+c])
			}
			if math.Abs(s-float64(gA[i*k+j])) > 1e-5 {
				t.Fatalf("dA[%d,%d]=%g want %g", i, j, gA[i*k+j], s)
			}
		}
	}
	for j := range k {
		for c := range n {
			var s float64
			for i := range m {
				s += float64(A[i*k+j]) * float64(V[i*n+c])
			}
			if math.Abs(s-float64(gB[j*n+c])) > 1e-5 {
				t.Fatalf("dB[%d,%d]=%g want %g", j, c, gB[j*n+c], s)
			}
		}
	}
}

// BenchmarkMatMulGradient times forward+backward of a dense layer stack with the stock and the
// fast VJP (the ratio is the speedup).
func BenchmarkMatMulGradient(b *testing.B) {
	backend := lrnBackend(b)
	rng := rand.New(rand.NewPCG(7, 1))
	const tokens, din, dout = 256, 128, 128
	x, w, v := lrnRandTensor(rng, tokens, din), lrnRandTensor(rng, din, dout), lrnRandTensor(rng, tokens, dout)
	for _, variant := range []string{"stock", "fast"} {
		b.Run(variant, func(b *testing.B) {
			exec := graph.MustNewExec(backend, func(x, w, v *graph.Node) []*graph.Node {
				node := graph.DotGeneral(x, []int{1}, nil, w, []int{0}, nil)
				vjp := fastDotGeneralVJP
				if variant == "stock" {
					vjp = stockDotGenVJP
				}
				return vjp(node, []*graph.Node{v}, shapes.Make(v.DType()))
			})
			exec.MustExec(x, w, v) // compile
			b.ResetTimer()
			for range b.N {
				for _, t := range exec.MustExec(x, w, v) {
					t.FinalizeAll()
				}
			}
		})
	}
}

func lrnShapeF32(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }
