package gomlxtrain

import (
	"errors"
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/t2t-lab/t2t/learner"
)

func TestNewBackend(t *testing.T) {
	for _, dev := range []string{"", "cpu"} {
		b, err := NewBackend(dev)
		if err != nil {
			t.Fatalf("%q: %v", dev, err)
		}
		if b.String() != "go" || IsXLA(b) {
			t.Fatalf("%q: backend %s", dev, b)
		}
		b.Finalize()
	}
	for _, dev := range []string{"gpu", "xla:relative/plugin.so", "go"} {
		if _, err := NewBackend(dev); !errors.Is(err, learner.ErrBadDevice) {
			t.Errorf("%q: got %v, want ErrBadDevice", dev, err)
		}
	}
	_, err := NewBackend("xla:/nonexistent/t2t/pjrt_plugin.so")
	switch {
	case err == nil:
		t.Fatal("a missing plugin must fail")
	case xlaAvailable && errors.Is(err, learner.ErrNoXLA):
		t.Fatalf("cgo build reports no XLA: %v", err)
	case !xlaAvailable && !errors.Is(err, learner.ErrNoXLA):
		t.Fatalf("non-cgo build: got %v, want ErrNoXLA", err)
	}
	// Options after the path are parsed, not taken for part of it.
	_, err2 := NewBackend("xla:/nonexistent/t2t/pjrt_plugin.so," + OptNoPreallocate + ",tf32")
	if err2 == nil || errors.Is(err2, learner.ErrBadDevice) || (!xlaAvailable && !errors.Is(err2, learner.ErrNoXLA)) {
		t.Fatalf("missing plugin with options: %v", err2)
	}
	t.Logf("xla compiled in: %v; missing plugin: %v; with options: %v", xlaAvailable, err, err2)
}

// Twelve independent batched matmuls are ready at once: the graph that deadlocks the pure-Go
// backend with a bounded worker pool and parallel op scheduling ("parallelism=2": this test then
// hangs until go test's -timeout). NewBackend's configuration must run it, correctly.
func TestGoBackendManyReadyMatmuls(t *testing.T) {
	b, err := NewBackend(DeviceCPU)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	const n = 128
	x := make([]float32, 4*n*n)
	for i := range x {
		x[i] = float32(i%5) * 0.01
	}
	xt := tensors.FromFlatDataAndDimensions(x, 4, n, n)
	e := graph.MustNewExec(b, func(x *graph.Node) *graph.Node {
		var outs []*graph.Node
		for i := range 12 {
			y := graph.AddScalar(x, float64(i))
			outs = append(outs, graph.ReduceAllSum(graph.DotGeneral(y, []int{2}, []int{0}, x, []int{1}, []int{0})))
		}
		return graph.Stack(outs, 0)
	})
	defer e.Finalize()
	// Σ_{b,i,j} Σ_k (x[b,i,k]+c)·x[b,k,j] = Σ_{b,k} (Σ_i x[b,i,k]+c)·(Σ_j x[b,k,j]), in float64.
	want := make([]float64, 12)
	for c := range want {
		for bb := range 4 {
			for k := range n {
				var colK, rowK float64 // Σ_i (x[bb,i,k]+c) and Σ_j x[bb,k,j]
				for i := range n {
					colK += float64(x[bb*n*n+i*n+k]) + float64(c)
					rowK += float64(x[bb*n*n+k*n+i])
				}
				want[c] += colK * rowK
			}
		}
	}
	for range 3 {
		out := e.MustExec(xt)[0]
		got := tensors.MustCopyFlatData[float32](out)
		_ = out.FinalizeAll()
		for c := range want {
			if d := float64(got[c]) - want[c]; d > 1e-3*want[c] || d < -1e-3*want[c] { // float32 sums of 2^16 terms
				t.Fatalf("matmul %d: sum %v, want %v", c, got[c], want[c])
			}
		}
	}
}
