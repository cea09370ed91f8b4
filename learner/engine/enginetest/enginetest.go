// Package enginetest checks an engine.Decoder implementation against the contract the
// scheduler relies on, the same suite for every engine: a request's greedy ids and log-probs
// are the same alone and inside batches that other requests join and leave at different
// steps, and equal (ids) or close (log-probs) to the engine's own GenerateStream.
package enginetest

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
)

// hookDecoder runs onStep at the start of each Step (from 1).
type hookDecoder struct {
	engine.Decoder
	n      int
	onStep func(n int)
}

func (h *hookDecoder) Step(slots []int, tokens []int32, logits []float32) error {
	h.n++
	if h.onStep != nil {
		h.onStep(h.n)
	}
	return h.Decoder.Step(slots, tokens, logits)
}

// Requests are greedy requests of various prompt lengths, row counts and lengths (vocab ≥ 2).
func Requests(seed uint64, vocab int) []engine.Request {
	rng := rand.New(rand.NewPCG(seed, 11))
	prompt := func(n int) []int32 {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(rng.IntN(vocab))
		}
		return p
	}
	return []engine.Request{
		{Prompts: [][]int32{prompt(5), prompt(9)}, Sample: engine.SampleConfig{MaxNewTokens: 10}},
		{Prompts: [][]int32{prompt(3)}, Sample: engine.SampleConfig{MaxNewTokens: 4}},
		{Prompts: [][]int32{prompt(12), prompt(1)}, Sample: engine.SampleConfig{MaxNewTokens: 7}},
	}
}

// BatchInvariance runs reqs alone (each on a fresh pool) and then together (request i
// submitted during decode step 2·i, so it joins a running batch; they leave at different
// steps), and fails unless every result has the same ids and log-probs within lpTol (0:
// identical; the torch engine's BLAS rounds a product differently for other batch shapes, in
// the last bits). It returns the results. open opens a
// pool of slots sequences of slotLen positions of model.
func BatchInvariance(t *testing.T, model engine.Model, open func(slots, slotLen int) (engine.Decoder, error), reqs []engine.Request, lpTol float64) []*engine.Generation {
	t.Helper()
	const slots, slotLen = 4, 32
	c := model.Config()
	alone := make([]*engine.Generation, len(reqs))
	for i, r := range reqs {
		d, err := open(slots, slotLen)
		if err != nil {
			t.Fatal(err)
		}
		s, err := engine.NewScheduler(c, d, engine.SchedulerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		alone[i], err = s.Submit(context.Background(), r)
		_ = s.Close()
		if err != nil {
			t.Fatalf("request %d alone: %v", i, err)
		}
	}
	d, err := open(slots, slotLen)
	if err != nil {
		t.Fatal(err)
	}
	h := &hookDecoder{Decoder: d}
	s, err := engine.NewScheduler(c, h, engine.SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	type result struct {
		g   *engine.Generation
		err error
	}
	res := make([]chan result, len(reqs))
	for i := range res {
		res[i] = make(chan result, 1)
	}
	var wg sync.WaitGroup
	submit := func(i int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			g, err := s.Submit(context.Background(), reqs[i])
			res[i] <- result{g, err}
		}()
	}
	h.onStep = func(n int) {
		if i := n / 2; n%2 == 0 && i < len(reqs) && i > 0 {
			before := s.Stats().Queued
			submit(i)
			deadline := time.Now().Add(30 * time.Second) // a hang guard
			for s.Stats().Queued == before && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
		}
	}
	submit(0)
	for i, ch := range res {
		r := <-ch
		if r.err != nil {
			t.Fatalf("request %d in a batch: %v", i, r.err)
		}
		for row := range r.g.Tokens {
			if !slices.Equal(r.g.Tokens[row], alone[i].Tokens[row]) || !closeTo(r.g.LogProbs[row], alone[i].LogProbs[row], lpTol) {
				t.Errorf("request %d row %d: in a batch %v %v, alone %v %v", i, row, r.g.Tokens[row], r.g.LogProbs[row], alone[i].Tokens[row], alone[i].LogProbs[row])
			}
		}
	}
	wg.Wait()
	if st := s.Stats(); st.StepRows <= st.Steps {
		t.Errorf("stats %+v: no step ran several rows", st)
	}
	return alone
}

// MatchesGenerate checks that each greedy result has the ids model.GenerateStream gives the
// same prompts and log-probs within tol.
func MatchesGenerate(t *testing.T, model engine.Model, reqs []engine.Request, got []*engine.Generation, tol float64) {
	t.Helper()
	for i, r := range reqs {
		want, err := model.GenerateStream(r.Prompts, r.Sample, 0, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		for row := range r.Prompts {
			if !slices.Equal(got[i].Tokens[row], want.Tokens[row]) {
				t.Errorf("request %d row %d: scheduler %v, GenerateStream %v", i, row, got[i].Tokens[row], want.Tokens[row])
				continue
			}
			for k, lp := range want.LogProbs[row] {
				if math.Abs(float64(lp-got[i].LogProbs[row][k])) > tol {
					t.Errorf("request %d row %d token %d: log-prob %v, GenerateStream %v", i, row, k, got[i].LogProbs[row][k], lp)
				}
			}
		}
	}
}

func closeTo(a, b []float32, tol float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > tol {
			return false
		}
	}
	return true
}
