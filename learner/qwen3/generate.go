package qwen3

import (
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/learner/engine"
)

// Generate continues each prompt (token ids) by sampling, with a KV cache: one prefill call on
// the left-padded prompts fills the cache, then one decode call per new token writes that
// token's keys and values into the cache and returns the next logits (GoMLX graphs have no
// loop: the loop runs here). Sampling happens in Go from the logits; rng is needed when
// Temperature > 0. All rows run until every row has stopped or MaxNewTokens is reached.
func (m *Model) Generate(prompts [][]int32, sc engine.SampleConfig, rng *rand.Rand) (*engine.Generation, error) {
	return m.GenerateStream(prompts, sc, 0, rng, nil)
}

// buildGenExecs creates the prefill and decode executables (graphs compile per shape bucket).
func (m *Model) buildGenExecs() error {
	if m.prefillExec == nil {
		e, err := m.newExec(func(_ *context.Context, in []*graph.Node) []*graph.Node { return m.prefillGraph(in) })
		if err != nil {
			return err
		}
		m.prefillExec = e
	}
	if m.decodeExec == nil {
		e, err := m.newExec(func(_ *context.Context, in []*graph.Node) []*graph.Node { return m.decodeGraph(in) })
		if err != nil {
			return err
		}
		m.decodeExec = e
	}
	return nil
}

// prefillGraph: inputs tokens [B, P] and valid [B, P] (int32, left-padded prompts) and a
// [S] placeholder giving the cache length. Outputs: the logits [B, V] of the last position and,
// per layer, the key and value caches [B, S, KVH, D] holding the prompt in columns [0, P).
func (m *Model) prefillGraph(in []*graph.Node) []*graph.Node {
	tokens, valid := in[0], in[1]
	b, p := tokens.Shape().Dimensions[0], tokens.Shape().Dimensions[1]
	s := in[2].Shape().Dimensions[0]
	g := tokens.Graph()
	pos, bias := seqMask(valid)
	cos, sin := m.ropeTables(pos)
	caches := make([]*graph.Node, 0, 2*m.cfg.NumHiddenLayers)
	padTo := func(x *graph.Node) *graph.Node {
		if s == p {
			return x
		}
		dims := slices.Clone(x.Shape().Dimensions)
		dims[1] = s - p
		return graph.Concatenate([]*graph.Node{x, graph.Zeros(g, shapes.Make(x.DType(), dims...))}, 1)
	}
	x := m.blocks(m.embedTokens(tokens), cos, sin, bias, func(_ int, k, v *graph.Node) (*graph.Node, *graph.Node) {
		caches = append(caches, padTo(k), padTo(v))
		return k, v
	})
	last := graph.SliceAxis(x, 1, graph.AxisElem(p-1)) // not differentiated: Slice is fine here
	logits := graph.Reshape(m.head(last), b, m.cfg.VocabSize)
	return append([]*graph.Node{logits}, caches...)
}

// decodeGraph: inputs the new tokens [B], the left padding of each row [B], the cache column
// to write (scalar) and the 2·layers caches. Cache column c holds the token at position
// c − pad of its row; keys in [pad, col] are visible. Outputs the next logits [B, V] and the
// updated caches.
func (m *Model) decodeGraph(in []*graph.Node) []*graph.Node {
	tokens, pad, col, caches := in[0], in[1], in[2], in[3:]
	g := tokens.Graph()
	b := tokens.Shape().Dimensions[0]
	s := caches[0].Shape().Dimensions[1]
	pos := graph.ConvertDType(graph.Sub(graph.BroadcastToDims(col, b), pad), dtypes.Float32)
	cols := graph.Iota(g, shapes.Make(dtypes.Int32, b, s), 1)
	visible := graph.LogicalAnd(
		graph.GreaterOrEqual(cols, graph.BroadcastToDims(graph.Reshape(pad, b, 1), b, s)),
		graph.LessOrEqual(cols, graph.BroadcastToDims(col, b, s)))
	bias := graph.Reshape(graph.Where(visible, graph.ScalarZero(g, dtypes.Float32), graph.Scalar(g, dtypes.Float32, maskBias)), b, 1, s)
	at := graph.Equal(cols, graph.BroadcastToDims(col, b, s))
	cos, sin := m.ropeTables(graph.Reshape(pos, b, 1))
	out := make([]*graph.Node, 1, 1+len(caches))
	write := func(cache, x *graph.Node) *graph.Node {
		if m.dynSlice {
			zero := graph.ScalarZero(g, dtypes.Int32)
			return graph.DynamicUpdateSlice(cache, x, []*graph.Node{zero, col, zero, zero})
		}
		// Without DynamicUpdateSlice (the pure-Go backend): select the column.
		return graph.Where(at, graph.BroadcastToDims(x, cache.Shape().Dimensions...), cache)
	}
	x := m.blocks(m.embedTokens(graph.Reshape(tokens, b, 1)), cos, sin, bias, func(l int, k, v *graph.Node) (*graph.Node, *graph.Node) {
		kc, vc := write(caches[2*l], k), write(caches[2*l+1], v)
		out = append(out, kc, vc)
		return kc, vc
	})
	out[0] = graph.Reshape(m.head(x), b, m.cfg.VocabSize)
	return out
}
