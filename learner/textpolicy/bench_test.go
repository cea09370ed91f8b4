package textpolicy

import (
	"testing"

	"github.com/t2t-lab/t2t/learner"
)

// BenchmarkPlay: 4 instances × 2 completions of ≤ 16 tokens on the tiny model (CPU).
func BenchmarkPlay(b *testing.B) {
	lm := tpLM(b, 1)
	p, err := New(lm, tpOptions())
	if err != nil {
		b.Fatal(err)
	}
	ins := tpInstances(b, 1, 4)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := p.Play(ins, 2, 1, uint64(i)); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkUpdate: one GRPO step on 4 groups of 2 completions of ≤ 16 tokens.
func BenchmarkUpdate(b *testing.B) {
	lm := tpLM(b, 1)
	p, err := New(lm, tpOptions())
	if err != nil {
		b.Fatal(err)
	}
	ins := tpInstances(b, 1, 4)
	ro, err := p.Play(ins, 2, 1, 1)
	if err != nil {
		b.Fatal(err)
	}
	groups := make([]learner.ReplayedGroup, len(ins))
	for e, ep := range ro.Episodes {
		g := &groups[e/2]
		g.Instance = ep.Instance
		g.Actions = append(g.Actions, ro.Actions[ep.Lo:ep.Hi])
		g.LogProbs = append(g.LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
		g.Rewards = append(g.Rewards, float32(e%2))
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := p.Update(groups); err != nil {
			b.Fatal(err)
		}
	}
}
