package gomlxtrain

import (
	"reflect"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

// The stock GoMLX v0.26.0 gradient of DotGeneral (and of Dot) materialises a broadcast product of
// size batch×lhsCross×rhsCross×contracted and reduces it: 6–9× slower on CPU and far beyond GPU
// memory for a 4B-parameter model (GOMLX.md, pitfall 1). The VJP registered here computes each
// input's gradient as one DotGeneral of the output cotangent with the other input, followed by one
// transpose.
//
// The axes of a DotGeneral node are unexported in v0.26.0, so they are read by reflection; that
// ties this file to the pinned version. If the fields cannot be read, the VJP falls back to the
// stock one, and TestFastMatMulGradient (which compares both on several shapes) fails.

var (
	fastMatMulOnce sync.Once
	stockDotGenVJP graph.VJP // the VJP found in the registry before ours; set once.
	stockDotVJP    graph.VJP
	// mmFallbacks counts DotGeneral nodes whose axes could not be read (tests require 0).
	mmFallbacks atomic.Int64
)

// RegisterFastMatMulGradient replaces the gradients of DotGeneral and Dot in graph.VJPRegistration
// with ones built from a single DotGeneral + transpose per input. It is idempotent and safe for
// concurrent calls; NewBackend calls it. Call it before building any gradient graph (the registry
// is a plain map, read while graphs are built).
func RegisterFastMatMulGradient() {
	fastMatMulOnce.Do(func() {
		stockDotGenVJP = graph.VJPRegistration[graph.NodeTypeDotGeneral]
		stockDotVJP = graph.VJPRegistration[graph.NodeTypeDot]
		graph.VJPRegistration[graph.NodeTypeDotGeneral] = fastDotGeneralVJP
		graph.VJPRegistration[graph.NodeTypeDot] = fastDotVJP
	})
}

// dotGeneralAxes reads the contracting and batch axes of a DotGeneral node.
func dotGeneralAxes(node *graph.Node) (lc, lb, rc, rb []int, ok bool) {
	if node == nil || node.Type() != graph.NodeTypeDotGeneral {
		return nil, nil, nil, nil, false
	}
	v := reflect.ValueOf(node).Elem().FieldByName("inputs")
	if !v.IsValid() || v.Kind() != reflect.Interface || v.IsNil() {
		return nil, nil, nil, nil, false
	}
	v = v.Elem()
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil, nil, nil, nil, false
	}
	read := func(name string) ([]int, bool) {
		f := v.FieldByName(name)
		if !f.IsValid() || f.Kind() != reflect.Slice || f.Type().Elem().Kind() != reflect.Int {
			return nil, false
		}
		out := make([]int, f.Len())
		for i := range out {
			out[i] = int(f.Index(i).Int())
		}
		return out, true
	}
	var ok1, ok2, ok3, ok4 bool
	lc, ok1 = read("lhsContractingAxes")
	lb, ok2 = read("lhsBatchAxes")
	rc, ok3 = read("rhsContractingAxes")
	rb, ok4 = read("rhsBatchAxes")
	if !(ok1 && ok2 && ok3 && ok4) || len(lc) != len(rc) || len(lb) != len(rb) {
		return nil, nil, nil, nil, false
	}
	return lc, lb, rc, rb, true
}

func fastDotGeneralVJP(node *graph.Node, vjps []*graph.Node, outShape shapes.Shape) []*graph.Node {
	lc, lb, rc, rb, ok := dotGeneralAxes(node)
	if !ok {
		mmFallbacks.Add(1)
		return stockDotGenVJP(node, vjps, outShape)
	}
	in := node.Inputs()
	l, r := dotGeneralGrads(in[0], lc, lb, in[1], rc, rb, vjps[0])
	return []*graph.Node{l, r}
}

func fastDotVJP(node *graph.Node, vjps []*graph.Node, outShape shapes.Shape) []*graph.Node {
	in := node.Inputs()
	lhs, rhs := in[0], in[1]
	if lhs.Rank() < 1 || lhs.Rank() > 2 || rhs.Rank() < 1 || rhs.Rank() > 2 {
		return stockDotVJP(node, vjps, outShape)
	}
	// Dot contracts the last axis of lhs with the first axis of rhs.
	l, r := dotGeneralGrads(lhs, []int{lhs.Rank() - 1}, nil, rhs, []int{0}, nil, vjps[0])
	return []*graph.Node{l, r}
}

// mmCrossAxes lists, ascending, the axes of a rank-r operand that are neither contracted nor batch.
func mmCrossAxes(rank int, contracting, batch []int) []int {
	out := make([]int, 0, rank)
	for a := range rank {
		if !slices.Contains(contracting, a) && !slices.Contains(batch, a) {
			out = append(out, a)
		}
	}
	return out
}

func mmIota(start, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = start + i
	}
	return out
}

// mmTranspose returns x with its axes permuted so that output axis a is input axis src[a]; it
// emits no node for the identity permutation.
func mmTranspose(x *graph.Node, src []int) *graph.Node {
	for a, s := range src {
		if a != s {
			return graph.TransposeAllAxes(x, src...)
		}
	}
	return x
}

// dotGeneralGrads returns the gradients of out = DotGeneral(lhs, lc, lb, rhs, rc, rb) with
// respect to lhs and rhs, given the cotangent v of out. out's axes are
// [batch..., lhsCross..., rhsCross...].
func dotGeneralGrads(lhs *graph.Node, lc, lb []int, rhs *graph.Node, rc, rb []int, v *graph.Node) (gl, gr *graph.Node) {
	nb := len(lb)
	lCross := mmCrossAxes(lhs.Rank(), lc, lb)
	rCross := mmCrossAxes(rhs.Rank(), rc, rb)
	vBatch := mmIota(0, nb)
	vL := mmIota(nb, len(lCross))
	vR := mmIota(nb+len(lCross), len(rCross))

	// d lhs: contract v's rhs-cross axes with rhs's cross axes. Result axes:
	// [batch..., lhsCross..., rhs's contracting axes in ascending rhs order].
	gl = graph.DotGeneral(v, vR, vBatch, rhs, rCross, rb)
	src := make([]int, lhs.Rank())
	for k, a := range lb {
		src[a] = k
	}
	for k, a := range lCross {
		src[a] = nb + k
	}
	rcSorted := slices.Sorted(slices.Values(rc))
	for j, ra := range rcSorted {
		src[lc[slices.Index(rc, ra)]] = nb + len(lCross) + j
	}
	gl = mmTranspose(gl, src)

	// d rhs: contract lhs's cross axes with v's lhs-cross axes. Result axes:
	// [batch..., lhs's contracting axes in ascending lhs order, rhsCross...].
	gr = graph.DotGeneral(lhs, lCross, lb, v, vL, vBatch)
	src = make([]int, rhs.Rank())
	for k, a := range rb {
		src[a] = k
	}
	lcSorted := slices.Sorted(slices.Values(lc))
	for j, la := range lcSorted {
		src[rc[slices.Index(lc, la)]] = nb + j
	}
	for k, a := range rCross {
		src[a] = nb + len(lc) + k
	}
	gr = mmTranspose(gr, src)
	return gl, gr
}
