package env

import (
	"math/rand/v2"
	"testing"
)

// planBenchInstance is a 6x6 instance with 3 agents and a few holes.
func planBenchInstance(b *testing.B) *Instance {
	in := planInst(b, []string{
		"......",
		".H..H.",
		"......",
		"..H...",
		"......",
		"...H..",
	}, planAg(0, 0, 4, 5), planAg(5, 0, 0, 5), planAg(2, 5, 5, 1))
	in.SOC, in.Makespan = 26, 10 // the bench answer's costs
	return in
}

// planBenchAnswer is a realistic response: a short think block, then the
// plan in answer tags with some of the usual decoration.
const planBenchAnswer = `<think>
Agent 0 starts at (0,0) and must reach (4,5). Agent 1 goes from (5,0) to (0,5),
agent 2 from (2,5) to (5,1). The hole at (1,1) blocks the diagonal, so agent 0
goes right along row 0 first, then down column 5. Agent 1 goes up column 0 and
then right along row 2? That crosses agent 2. Let agent 1 wait one step.
</think>

<answer>
Agent 0: RIGHT RIGHT RIGHT RIGHT RIGHT DOWN DOWN DOWN DOWN
Agent 1: UP, UP, UP, RIGHT, RIGHT, RIGHT, UP, UP, RIGHT, RIGHT
Agent 2: DOWN DOWN LEFT LEFT LEFT LEFT DOWN
</answer>`

func BenchmarkParseAnswer(b *testing.B) {
	in := planBenchInstance(b)
	if _, err := ParseAnswer(planBenchAnswer, in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(planBenchAnswer)))
	for b.Loop() {
		if _, err := ParseAnswer(planBenchAnswer, in); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkParseMoves(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ParseMoves(planBenchAnswer); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyAnswer parses and verifies, reusing one Report.
func BenchmarkVerifyAnswer(b *testing.B) {
	in := planBenchInstance(b)
	var rep Report
	VerifyAnswer(in, planBenchAnswer, &rep)
	b.ReportAllocs()
	for b.Loop() {
		VerifyAnswer(in, planBenchAnswer, &rep)
	}
}

// BenchmarkVerify verifies 3-agent 6x6 plans (the bench answer's plan and
// random rule-breaking plans), reusing one Report.
func BenchmarkVerify(b *testing.B) {
	in := planBenchInstance(b)
	good, err := ParseAnswer(planBenchAnswer, in)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("valid", func(b *testing.B) {
		var rep Report
		Verify(in, &good, &rep)
		if !rep.Valid {
			b.Fatalf("bench plan not valid: %v", rep.Failures)
		}
		b.ReportAllocs()
		for b.Loop() {
			Verify(in, &good, &rep)
		}
	})
	b.Run("random", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(1, 2))
		plans := make([]*Plan, 64)
		for i := range plans {
			plans[i] = planRandPlan(rng, in)
		}
		var rep Report
		for _, p := range plans {
			Verify(in, p, &rep)
		}
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			Verify(in, plans[i&63], &rep)
			i++
		}
	})
}

func BenchmarkFormatMoves(b *testing.B) {
	moves, err := ParseMoves(planBenchAnswer)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = FormatMoves(moves)
	}
}

func BenchmarkRenderPrompt(b *testing.B) {
	in := planBenchInstance(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = RenderPrompt(in, DefaultPromptOptions())
	}
}

// BenchmarkSimStep is one joint step plus one observation per agent.
func BenchmarkSimStep(b *testing.B) {
	in := planBenchInstance(b)
	s := NewSim(in, 1<<20)
	moves := []Move{Wait, Wait, Wait}
	obs := make([]float32, ObsSize(ObsRadius))
	b.ReportAllocs()
	for b.Loop() {
		if s.Done() {
			s.Reset()
		}
		s.Step(moves)
		for i := range 3 {
			obs = s.Observe(i, ObsRadius, obs)
		}
	}
}
