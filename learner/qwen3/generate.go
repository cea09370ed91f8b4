package qwen3

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

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

// sampler picks tokens from logits on the host; its scratch is reused across calls.
type sampler struct {
	sc   engine.SampleConfig
	z    []float64
	cand []int32
}

func newSampler(sc engine.SampleConfig, vocab int) *sampler {
	return &sampler{sc: sc, z: make([]float64, vocab)}
}

// sample returns a token and its log-probability under softmax(logits/T) (T = 1 when greedy).
func (s *sampler) sample(logits []float32, rng *rand.Rand) (int32, float32) {
	temp := s.sc.Temperature
	greedy := temp == 0
	if greedy {
		temp = 1
	}
	zmax := math.Inf(-1)
	best := 0
	for i, x := range logits {
		z := float64(x) / temp
		s.z[i] = z
		if z > zmax {
			zmax, best = z, i
		}
	}
	var sum float64
	for _, z := range s.z {
		sum += math.Exp(z - zmax)
	}
	lse := zmax + math.Log(sum)
	if greedy {
		return int32(best), float32(s.z[best] - lse)
	}
	cand := s.candidates(zmax, lse)
	var total float64
	for _, c := range cand {
		total += math.Exp(s.z[c] - zmax)
	}
	u := rng.Float64() * total
	pick := cand[len(cand)-1]
	for _, c := range cand {
		u -= math.Exp(s.z[c] - zmax)
		if u < 0 {
			pick = c
			break
		}
	}
	return pick, float32(s.z[pick] - lse)
}

// candidates returns the ids that top-k and top-p keep (all ids when both are off), most likely
// first when either is on.
func (s *sampler) candidates(zmax, lse float64) []int32 {
	v := len(s.z)
	topK := s.sc.TopK
	if topK <= 0 || topK > v {
		topK = v
	}
	topP := s.sc.TopP
	nucleus := topP > 0 && topP < 1
	cand := s.cand[:0]
	byZ := func(c []int32) {
		sort.Slice(c, func(i, j int) bool {
			if s.z[c[i]] != s.z[c[j]] {
				return s.z[c[i]] > s.z[c[j]]
			}
			return c[i] < c[j]
		})
	}
	switch {
	case topK < v:
		cand = topKIndices(s.z, topK, cand)
	case nucleus:
		// The nucleus is a prefix of the sorted vocabulary; sort only tokens above a threshold
		// whose mass already reaches topP (lowering it until it does).
		for t := 1e-4; ; t *= 1e-4 {
			cand = cand[:0]
			var mass float64
			for i, z := range s.z {
				if p := math.Exp(z - lse); p >= t*math.Exp(zmax-lse) || t < 1e-300 {
					cand = append(cand, int32(i))
					mass += p
				}
			}
			if mass >= topP || len(cand) == v {
				break
			}
		}
	default:
		for i := range v {
			cand = append(cand, int32(i))
		}
		s.cand = cand
		return cand
	}
	byZ(cand)
	if nucleus {
		var total float64 // mass of the top-k set (1 without top-k)
		if topK < v {
			for _, c := range cand {
				total += math.Exp(s.z[c] - lse)
			}
		} else {
			total = 1
		}
		var cum float64
		for i, c := range cand {
			cum += math.Exp(s.z[c]-lse) / total
			if cum >= topP {
				cand = cand[:i+1]
				break
			}
		}
	}
	s.cand = cand
	return cand
}

// topKIndices returns the k ids with the largest z (ties: lower id first), using a min-heap.
func topKIndices(z []float64, k int, dst []int32) []int32 {
	h := dst[:0]
	worse := func(a, b int32) bool { // a ranks below b
		if z[a] != z[b] {
			return z[a] < z[b]
		}
		return a > b
	}
	down := func(i int) {
		for {
			l, r, m := 2*i+1, 2*i+2, i
			if l < len(h) && worse(h[l], h[m]) {
				m = l
			}
			if r < len(h) && worse(h[r], h[m]) {
				m = r
			}
			if m == i {
				return
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	for i := range z {
		id := int32(i)
		if len(h) < k {
			h = append(h, id)
			for j := len(h) - 1; j > 0; {
				p := (j - 1) / 2
				if !worse(h[j], h[p]) {
					break
				}
				h[j], h[p] = h[p], h[j]
				j = p
			}
			continue
		}
		if worse(h[0], id) {
			h[0] = id
			down(0)
		}
	}
	return h
}
