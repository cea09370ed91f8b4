package textpolicy

import (
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/learner/engine"
)

// TestLMSchedulerSharesBatches: with the scheduler enabled, concurrent greedy generations get
// the ids of direct generations, share decode steps, and a request larger than the pool runs
// directly.
func TestLMSchedulerSharesBatches(t *testing.T) {
	seed := tpTestSeed(t)
	lm := tpLM(t, seed)
	defer lm.Close()
	rng := rand.New(rand.NewPCG(seed, 3))
	v := lm.Model.Config().VocabSize
	prompts := make([][][]int32, 4)
	for i := range prompts {
		prompts[i] = [][]int32{make([]int32, 3+i), make([]int32, 8-i)}
		for _, p := range prompts[i] {
			for j := range p {
				p[j] = int32(rng.IntN(v))
			}
		}
	}
	sc := engine.SampleConfig{MaxNewTokens: 6}
	want := make([]*engine.Generation, len(prompts))
	for i, p := range prompts {
		g, err := lm.Generate(p, sc, nil)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = g
	}
	if err := lm.EnableScheduler(8, 32); err != nil {
		t.Fatal(err)
	}
	got := make([]*engine.Generation, len(prompts))
	errs := make([]error, len(prompts))
	var wg sync.WaitGroup
	for i, p := range prompts {
		wg.Go(func() { got[i], errs[i] = lm.Generate(p, sc, nil) })
	}
	wg.Wait()
	for i := range prompts {
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
		for r := range prompts[i] {
			if !slices.Equal(got[i].Tokens[r], want[i].Tokens[r]) {
				t.Errorf("request %d row %d: scheduler %v, direct %v", i, r, got[i].Tokens[r], want[i].Tokens[r])
			}
		}
	}
	st, ok := lm.SchedulerStats()
	if !ok || st.Requests != int64(len(prompts)) || st.Steps == 0 {
		t.Errorf("stats %+v %v", st, ok)
	}
	big := make([][]int32, 9) // more rows than slots: the direct path
	for i := range big {
		big[i] = []int32{1, 2}
	}
	if g, err := lm.Generate(big, sc, nil); err != nil || len(g.Tokens) != 9 {
		t.Fatalf("9 rows: %v", err)
	}
	if st2, _ := lm.SchedulerStats(); st2.Requests != st.Requests {
		t.Errorf("the 9-row request went through the scheduler: %+v", st2)
	}
}

// TestPlaySubmitsOneRequestPerPool: with a scheduler whose slots hold a unit's rows, Play
// submits them as one request (the scheduler interleaves them with other callers' rows)
// instead of GenBatch-sized requests one after another.
func TestPlaySubmitsOneRequestPerPool(t *testing.T) {
	seed := tpTestSeed(t)
	lm := tpLM(t, seed)
	defer lm.Close()
	o := tpOptions()
	o.GenBatch = 4
	p, err := New(lm, o)
	if err != nil {
		t.Fatal(err)
	}
	ins := tpInstances(t, seed, 4)
	slotLen := 0
	for _, in := range ins {
		slotLen = max(slotLen, len(p.Prompt(in))+o.MaxNewTokens)
	}
	if err := lm.EnableScheduler(16, slotLen); err != nil {
		t.Fatal(err)
	}
	ro, err := p.Play(ins, 3, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	st, _ := lm.SchedulerStats()
	if len(ro.Episodes) != 12 || st.Requests != 1 || st.Admitted != 12 {
		t.Fatalf("%d episodes; scheduler %+v: want one request of 12 rows", len(ro.Episodes), st)
	}
}
