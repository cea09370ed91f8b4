package engine

import (
	"math"
	"math/rand/v2"
	"sort"
)

// Sampler picks tokens from logits on the host, as both engines' Generate do (greedy: the
// most likely token, the lowest id on ties; else temperature, top-k, top-p); its scratch is
// reused across calls, so one Sampler serves one goroutine.
type Sampler struct {
	sc   SampleConfig
	z    []float64
	cand []int32
}

// NewSampler returns a Sampler for sc over a vocabulary of vocab tokens.
func NewSampler(sc SampleConfig, vocab int) *Sampler {
	return &Sampler{sc: sc, z: make([]float64, vocab)}
}

// Sample returns a token and its log-probability under softmax(logits/T) (T = 1 when greedy).
func (s *Sampler) Sample(logits []float32, rng *rand.Rand) (int32, float32) {
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
func (s *Sampler) candidates(zmax, lse float64) []int32 {
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
		cand = s.nucleusPool(cand, zmax, lse, topP)
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

// nucleusPool returns, in dst, the ids above a probability threshold whose
// mass already reaches topP: the nucleus is a prefix of the sorted
// vocabulary, so only these need sorting. The threshold is lowered until
// the mass reaches topP.
func (s *Sampler) nucleusPool(dst []int32, zmax, lse, topP float64) []int32 {
	cand := dst
	for t := 1e-4; ; t *= 1e-4 {
		cand = cand[:0]
		var mass float64
		for i, z := range s.z {
			if p := math.Exp(z - lse); p >= t*math.Exp(zmax-lse) || t < 1e-300 {
				cand = append(cand, int32(i))
				mass += p
			}
		}
		if mass >= topP || len(cand) == len(s.z) {
			return cand
		}
	}
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

// Top returns the k most likely tokens of the distribution the last sample call drew from
// (softmax(z), z = logits/temperature, or the raw logits when greedy), most likely first.
func (s *Sampler) Top(k int, dst []TokenLogProb) []TokenLogProb {
	k = min(k, len(s.z))
	zmax := math.Inf(-1)
	for _, z := range s.z {
		zmax = max(zmax, z)
	}
	var sum float64
	for _, z := range s.z {
		sum += math.Exp(z - zmax)
	}
	lse := zmax + math.Log(sum)
	ids := topKIndices(s.z, k, nil)
	sort.Slice(ids, func(i, j int) bool {
		if s.z[ids[i]] != s.z[ids[j]] {
			return s.z[ids[i]] > s.z[ids[j]]
		}
		return ids[i] < ids[j]
	})
	dst = dst[:0]
	for _, id := range ids {
		dst = append(dst, TokenLogProb{Token: id, LogProb: float32(s.z[id] - lse)})
	}
	return dst
}
