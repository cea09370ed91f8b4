package qwen3

import (
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// Skinny matmuls on the pure-Go backend. GoMLX v0.26.0's simplego picks its DotGeneral kernel
// per batch example by lhsCross×rhsCross: above 16 blocks of blockDim² (blockDim = 32 for
// float32) it takes the "large" path, which pads both operands to blockDim×blockDim tiles and
// copies them into blocks on every call; below, the "small" path loops over the operands as
// they are, but spreads work over goroutines only across the batch axes. A decode step's
// products x [M, K]·Wᵀ with M = the batch (8) and W [N, K] a projection or the LM head
// (N = 151,936) thus take the large path with M padded from 8 to 32 (4× the work), or the small
// path on one core. dotT splits N into nc chunks of d rows, W [N, K] → [nc, d, K] (a reshape),
// and runs one DotGeneral with nc as a batch axis: every chunk is a small problem (M·d within
// the limit) and the chunks run in parallel. The sums over K are the same products in another
// order: the logits agree to float32 rounding.

const (
	// skinnyMinWork is the least M·N·K for which chunking pays (below, goroutine start-up is a
	// noticeable share).
	skinnyMinWork = 1 << 18
	// skinnyMinChunk is the fewest rows of W per chunk.
	skinnyMinChunk = 32
)

// dotT returns x [..., K] · wᵀ for w [N, K]: [..., N].
func (m *Model) dotT(x, w *graph.Node) *graph.Node {
	k := w.Shape().Dimensions[1]
	if nc := m.skinnyChunks(x.Shape().Size()/k, w.Shape()); nc > 1 {
		return chunkedDotT(x, w, nc)
	}
	return graph.DotGeneral(x, []int{x.Rank() - 1}, nil, w, []int{1}, nil)
}

// skinnyChunks returns how many chunks dotT splits the N rows of w [N, K] into for an x of rows
// rows (1: no split). It splits only on the pure-Go backend, when rows is below one kernel block
// (the large path would pad it), and picks the largest chunk size d dividing N with
// rows·d on the small path, d ≥ skinnyMinChunk and, if possible, at least 8 (else 4, else 2)
// chunks to share among the cores.
func (m *Model) skinnyChunks(rows int, w shapes.Shape) int {
	if m.noSplit || m.backend == nil || m.backend.String() != simplego.BackendName {
		return 1
	}
	return skinnySplit(rows, w.Dimensions[0], w.Dimensions[1], 1<<simplego.DotGeneralTargetBlockLog2Dim[w.DType])
}

// skinnySplit is skinnyChunks for a kernel block of blockDim×blockDim.
func skinnySplit(rows, n, k, blockDim int) int {
	if rows >= blockDim || rows*n*k < skinnyMinWork {
		return 1
	}
	maxChunk := 16 * blockDim * blockDim / rows // the largest d on the small path
	for _, minChunks := range []int{8, 4, 2} {
		for d := min(maxChunk, n/minChunks); d >= skinnyMinChunk; d-- {
			if n%d == 0 {
				return n / d
			}
		}
	}
	return 1
}

// chunkedDotT is x [..., K] · wᵀ computed as nc batched products of x with [N/nc, K] row blocks
// of w [N, K].
func chunkedDotT(x, w *graph.Node, nc int) *graph.Node {
	n, k := w.Shape().Dimensions[0], w.Shape().Dimensions[1]
	rows := x.Shape().Size() / k
	w3 := graph.Reshape(w, nc, n/nc, k)
	x3 := graph.BroadcastToDims(graph.Reshape(x, 1, rows, k), nc, rows, k)
	y := graph.DotGeneral(x3, []int{2}, []int{0}, w3, []int{2}, []int{0}) // [nc, rows, N/nc]
	dims := append(x.Shape().Clone().Dimensions[:x.Rank()-1], n)
	return graph.Reshape(graph.TransposeAllAxes(y, 1, 0, 2), dims...)
}
