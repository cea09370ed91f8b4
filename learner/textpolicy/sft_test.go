package textpolicy

import (
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// The SFT target is an optimal answer; steps on it lower its cross-entropy.
func TestSFTStep(t *testing.T) {
	seed := tpTestSeed(t)
	lm := tpLM(t, seed)
	ins := tpInstances(t, seed, 3)
	for _, thinking := range []bool{false, true} {
		o := tpOptions()
		o.Thinking = thinking
		p, err := New(lm, o)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			target, err := p.Target(in)
			if err != nil {
				t.Fatal(err)
			}
			if !lm.IsStop(target[len(target)-1]) {
				t.Fatalf("target does not end with a stop token")
			}
			var rep env.Report
			Judge(in, lm.CompletionText(target), &rep)
			if !rep.Valid || !rep.Optimal {
				t.Fatalf("thinking %v: target %q judged %+v", thinking, lm.CompletionText(target), rep.Passed)
			}
		}
	}
	p, err := New(lm, tpOptions())
	if err != nil {
		t.Fatal(err)
	}
	var first, last float64
	for i := range 4 {
		st, err := p.SFTStep(ins)
		if err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = st.Loss
		}
		last = st.Loss
		if st.Positions < len(ins) || st.Step != int64(i+1) {
			t.Fatalf("step %d: %+v", i, st)
		}
	}
	if !(last < first-0.1) {
		t.Fatalf("cross-entropy %v → %v over 4 steps on the same batch", first, last)
	}
	if p.Version() != 4 {
		t.Fatalf("version %d after 4 SFT steps", p.Version())
	}
}

// A short SFT run on two instances teaches the tiny model their answers: teacher-forced
// token accuracy reaches 1, and then greedy decoding writes valid, optimal plans (the target,
// prompt, generation and judge agree end to end).
func TestSFTLearnsAnswers(t *testing.T) {
	seed := tpTestSeed(t)
	lm := tpLM(t, seed)
	o := tpOptions()
	o.MaxNewTokens = 32
	o.GRPO.LR = 3e-3
	p, err := New(lm, o)
	if err != nil {
		t.Fatal(err)
	}
	ins := tpInstances(t, seed, 2)
	before, err := p.Evaluate(ins)
	if err != nil {
		t.Fatal(err)
	}
	var first, acc float64
	for step := range 80 {
		st, err := p.SFTStep(ins)
		if err != nil {
			t.Fatal(err)
		}
		if step == 0 {
			first = st.Accuracy
		}
		if acc = st.Accuracy; acc == 1 {
			t.Logf("token accuracy %.2f → 1 in %d steps", first, step+1)
			break
		}
	}
	if acc != 1 {
		t.Fatalf("token accuracy %.2f → %.2f after 80 steps on the same two instances", first, acc)
	}
	after, err := p.Evaluate(ins)
	if err != nil {
		t.Fatal(err)
	}
	var sizes int
	for _, n := range after.BySize {
		sizes += n[0]
		if n[0] != n[1] {
			t.Errorf("by size: %v", after.BySize)
		}
	}
	if after.Valid != 1 || after.Optimal != 1 || after.FailureSummary() != "none" || sizes != 2 {
		t.Fatalf("greedy answers after SFT: %+v (before: %+v)", after, before)
	}
	// Before training the random model's answers do not parse, which is all that is counted.
	if before.FailureSummary() != "parsable 2" {
		t.Errorf("random model: failed checks %v (%s)", before.Failed, before.FailureSummary())
	}
}

func TestRatesFailureSummary(t *testing.T) {
	var r Rates
	r.Failed[env.CheckHoleFree], r.Failed[env.CheckGoalReached], r.Failed[env.CheckConflictFree] = 3, 7, 3
	if got, want := r.FailureSummary(), "goal_reached 7, conflict_free 3, hole_free 3"; got != want {
		t.Errorf("FailureSummary() = %q, want %q", got, want)
	}
	r.BySize = map[int][2]int{5: {0, 16}, 3: {4, 16}}
	if got, want := r.SizeSummary(), "3x3 4/16, 5x5 0/16"; got != want {
		t.Errorf("SizeSummary() = %q, want %q", got, want)
	}
}
