package qwen3

import (
	"flag"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

var qwenSeed = flag.Uint64("seed", 0, "qwen3 tests: seed for randomised tests (0 = fixed default)")

func qwenTestSeed(t testing.TB) uint64 {
	s := *qwenSeed
	if s == 0 {
		s = 424242
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

func qwenBackend(t testing.TB) backends.Backend {
	t.Helper()
	b, err := gomlxtrain.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func qwenTiny(t testing.TB) hfmodel.Config {
	t.Helper()
	c, err := hfmodel.Preset(hfmodel.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// qwenSharpWeights are random weights larger than transformers' initialisation (projections
// N(0, 0.25²), norms 1 ± 0.2), so that attention is far from uniform and every part of the
// model (RoPE, masks, norms) moves the logits visibly.
func qwenSharpWeights(t testing.TB, cfg hfmodel.Config, seed uint64) []safetensors.Tensor {
	t.Helper()
	ts, err := hfmodel.InitRandom(cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 99))
	for i, x := range ts {
		f, _ := x.Float32(nil)
		for j := range f {
			if hfmodel.IsNormWeight(x.Name) {
				f[j] = float32(1 + 0.2*rng.NormFloat64())
			} else {
				f[j] *= 12.5
			}
		}
		ts[i] = safetensors.F32Tensor(x.Name, x.Shape, f)
	}
	return ts
}

// refModel is an independent float64 implementation of Qwen3 written from the architecture's
// definition: loops over positions and heads, RoPE by its pairwise rotation formula.
type refModel struct {
	cfg hfmodel.Config
	w   map[string][]float64
}

func newRefModel(t testing.TB, cfg hfmodel.Config, ts []safetensors.Tensor) *refModel {
	t.Helper()
	r := &refModel{cfg: cfg, w: map[string][]float64{}}
	for _, x := range ts {
		f, err := x.Float32(nil)
		if err != nil {
			t.Fatal(err)
		}
		d := make([]float64, len(f))
		for i, v := range f {
			d[i] = float64(v)
		}
		r.w[x.Name] = d
	}
	return r
}

func refRMS(x, w []float64, eps float64) []float64 {
	var ss float64
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+eps)
	out := make([]float64, len(x))
	for i := range x {
		out[i] = x[i] * inv * w[i]
	}
	return out
}

// refMatVec returns W·x for W [out, in].
func refMatVec(w []float64, x []float64, out int) []float64 {
	in := len(x)
	y := make([]float64, out)
	for o := range out {
		var s float64
		for i := range in {
			s += w[o*in+i] * x[i]
		}
		y[o] = s
	}
	return y
}

func (r *refModel) rope(x []float64, pos int) {
	d := len(x)
	for i := range d / 2 {
		theta := float64(pos) / math.Pow(r.cfg.RopeTheta, float64(2*i)/float64(d))
		c, s := math.Cos(theta), math.Sin(theta)
		a, b := x[i], x[i+d/2]
		x[i], x[i+d/2] = a*c-b*s, b*c+a*s
	}
}

// logits returns [T][V] for one unpadded sequence.
func (r *refModel) logits(tokens []int32) [][]float64 {
	c := r.cfg
	h, d, nh, kvh := c.HiddenSize, c.HeadDim, c.NumAttentionHeads, c.NumKeyValueHeads
	T := len(tokens)
	x := make([][]float64, T)
	for t, id := range tokens {
		x[t] = append([]float64(nil), r.w[hfmodel.NameEmbed][int(id)*h:(int(id)+1)*h]...)
	}
	for l := range c.NumHiddenLayers {
		W := func(mod string) []float64 { return r.w[hfmodel.LayerName(l, mod)] }
		q := make([][][]float64, T) // [t][head][d]
		k := make([][][]float64, T)
		v := make([][][]float64, T)
		for t := range T {
			hn := refRMS(x[t], W("input_layernorm"), c.RMSNormEps)
			qa := refMatVec(W("self_attn.q_proj"), hn, nh*d)
			ka := refMatVec(W("self_attn.k_proj"), hn, kvh*d)
			va := refMatVec(W("self_attn.v_proj"), hn, kvh*d)
			for hh := range nh {
				qh := refRMS(qa[hh*d:(hh+1)*d], W("self_attn.q_norm"), c.RMSNormEps)
				r.rope(qh, t)
				q[t] = append(q[t], qh)
			}
			for hh := range kvh {
				kh := refRMS(ka[hh*d:(hh+1)*d], W("self_attn.k_norm"), c.RMSNormEps)
				r.rope(kh, t)
				k[t] = append(k[t], kh)
				v[t] = append(v[t], va[hh*d:(hh+1)*d])
			}
		}
		for t := range T {
			att := make([]float64, nh*d)
			for hh := range nh {
				kv := hh / (nh / kvh)
				scores := make([]float64, t+1)
				m := math.Inf(-1)
				for s := 0; s <= t; s++ {
					var dot float64
					for i := range d {
						dot += q[t][hh][i] * k[s][kv][i]
					}
					scores[s] = dot / math.Sqrt(float64(d))
					m = math.Max(m, scores[s])
				}
				var z float64
				for s := range scores {
					scores[s] = math.Exp(scores[s] - m)
					z += scores[s]
				}
				for s := range scores {
					for i := range d {
						att[hh*d+i] += scores[s] / z * v[s][kv][i]
					}
				}
			}
			o := refMatVec(W("self_attn.o_proj"), att, h)
			for i := range h {
				x[t][i] += o[i]
			}
			hn := refRMS(x[t], W("post_attention_layernorm"), c.RMSNormEps)
			gate := refMatVec(W("mlp.gate_proj"), hn, c.IntermediateSize)
			up := refMatVec(W("mlp.up_proj"), hn, c.IntermediateSize)
			for i := range gate {
				gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i]
			}
			down := refMatVec(W("mlp.down_proj"), gate, h)
			for i := range h {
				x[t][i] += down[i]
			}
		}
	}
	head := r.w[hfmodel.NameEmbed]
	if !c.TieWordEmbeddings {
		head = r.w[hfmodel.NameLMHead]
	}
	out := make([][]float64, T)
	for t := range T {
		out[t] = refMatVec(head, refRMS(x[t], r.w[hfmodel.NameNorm], c.RMSNormEps), c.VocabSize)
	}
	return out
}

// qwenRelErr is max|got − want| / max|want| over a sequence's logits.
func qwenRelErr(got []float32, want [][]float64) float64 {
	var num, den float64
	v := len(want[0])
	for t := range want {
		for i := range v {
			num = math.Max(num, math.Abs(float64(got[t*v+i])-want[t][i]))
			den = math.Max(den, math.Abs(want[t][i]))
		}
	}
	return num / den
}

func TestForwardMatchesReference(t *testing.T) {
	seed := qwenTestSeed(t)
	backend := qwenBackend(t)
	for _, tied := range []bool{true, false} {
		cfg := qwenTiny(t)
		cfg.TieWordEmbeddings = tied
		ts := qwenSharpWeights(t, cfg, seed)
		m, err := New(backend, cfg, ts)
		if err != nil {
			t.Fatal(err)
		}
		ref := newRefModel(t, cfg, ts)
		rng := rand.New(rand.NewPCG(seed, 5))
		var seqs [][]int32
		for _, n := range []int{1, 5, 13, 24} {
			s := make([]int32, n)
			for i := range s {
				s[i] = int32(rng.IntN(cfg.VocabSize))
			}
			seqs = append(seqs, s)
		}
		got, err := m.Logits(seqs) // right-padded to 32 in one batch
		if err != nil {
			t.Fatal(err)
		}
		for i, s := range seqs {
			want := ref.logits(s)
			rel := qwenRelErr(got[i], want)
			t.Logf("tied=%v len %d: max relative error %.2e", tied, len(s), rel)
			if rel > 1e-5 {
				t.Errorf("tied=%v sequence %d (len %d): relative error %.3e > 1e-5", tied, i, len(s), rel)
			}
		}
	}
}
