package env

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// trimRepeats drops the copies of each path's last cell that end it: what the steps form cannot
// tell from an agent standing at its goal.
func trimRepeats(paths [][]Pos) [][]Pos {
	out := make([][]Pos, len(paths))
	for i, p := range paths {
		n := len(p)
		for n > 1 && p[n-2] == p[n-1] {
			n--
		}
		out[i] = p[:n:n]
	}
	return out
}

func TestFormatStepsRoundTrip(t *testing.T) {
	p := Plan{Paths: [][]Pos{{{0, 0}, {1, 0}, {1, 1}}, {{12, 3}}, {{2, 0}, {2, 0}, {2, 1}}}}
	want := "<answer>\nT0: [0,0] [12,3] [2,0]\nT1: [1,0] [12,3] [2,0]\nT2: [1,1] [12,3] [2,1]\n</answer>"
	if got, err := FormatSteps(&p); err != nil || got != want {
		t.Fatalf("FormatSteps = %q, %v; want %q", got, err, want)
	}
	if _, err := FormatSteps(&Plan{Paths: [][]Pos{{{0, 0}}, {}}}); err == nil {
		t.Fatal("FormatSteps of an empty path: no error")
	}
	// Random 3-agent paths, a wait in the middle kept and the repeats that end a path dropped.
	rng := planRNG(t)
	in := planOpen4(t)
	for range 200 {
		paths := make([][]Pos, 3)
		for i := range paths {
			paths[i] = make([]Pos, 1+rng.IntN(12))
			for j := range paths[i] {
				paths[i][j] = Pos{rng.IntN(12), rng.IntN(12)}
				if j > 0 && rng.IntN(4) == 0 {
					paths[i][j] = paths[i][j-1]
				}
			}
		}
		text, err := FormatSteps(&Plan{Paths: paths})
		if err != nil {
			t.Fatal(err)
		}
		got, err := ParseAnswer(text, in)
		if err != nil {
			t.Fatalf("ParseAnswer(FormatSteps) of %v: %v\n%s", paths, err, text)
		}
		if want := trimRepeats(paths); !reflect.DeepEqual(got.Paths, want) {
			t.Fatalf("steps round trip: got %v want %v", got.Paths, want)
		}
	}
}

// TestStepsAnswersOfTheSolver: the steps answer of an optimal plan verifies as valid and optimal,
// on generated 2..5-agent instances with waits, the SFT targets of --prompt steps.
func TestStepsAnswersOfTheSolver(t *testing.T) {
	_, ins := planStyleInstances(t, PromptSteps, 47)
	waits := 0
	for _, in := range ins {
		sol, err := Solve(in, SolveOptions{})
		if err != nil {
			continue
		}
		plan, err := CanonicalPlan(in, &sol.Plan)
		if err != nil {
			t.Fatal(err)
		}
		text, err := FormatSteps(plan)
		if err != nil {
			t.Fatal(err)
		}
		var rep Report
		VerifyAnswer(in, text, &rep)
		if !rep.Valid || !rep.Optimal || rep.SOC != sol.SOC {
			t.Fatalf("%s: the solver's plan in steps: valid %v, cost %d want %d\n%s", in.ID, rep.Valid, rep.SOC, sol.SOC, text)
		}
		if in.NeedsWait {
			waits++
		}
	}
	if waits == 0 {
		t.Fatal("no instance needs a wait: the test does not reach the waits")
	}
}

func TestParseStepsRejects(t *testing.T) {
	in := planOpen4(t) // 3 agents
	for _, c := range []struct{ name, answer, reason string }{
		{"skipped step", "<answer>\nT0: [0,0] [3,3] [2,0]\nT2: [0,1] [3,2] [2,0]\n</answer>", "step 2 where step 1 comes"},
		{"too few cells", "<answer>\nT0: [0,0] [3,3] [2,0]\nT1: [0,1] [3,2]\n</answer>", "step 1 has 2 cells for 3 agents"},
		{"a move", "<answer>\nT0: [0,0] [3,3] [2,0]\nT1: [0,1] UP [2,0]\n</answer>", "cells only"},
		{"an agent line after steps", "<answer>\nT0: [0,0] [3,3] [2,0]\nAgent 0: [0,0] [0,1]\n</answer>", `expected "T1: <cells>"`},
		{"prose", "<answer>\nT0: [0,0] [3,3] [2,0]\nthen they stop\n</answer>", `expected "T1: <cells>"`},
		{"a bad cell", "<answer>\nT0: [0,0] [3,3] [2,0\n</answer>", "cells only"},
	} {
		_, err := ParseAnswer(c.answer, in)
		var pe *ParseError
		if !errors.As(err, &pe) || !errors.Is(err, ErrParse) || pe.Line == 0 || !strings.Contains(pe.Reason, c.reason) {
			t.Errorf("%s: %v, want a *ParseError at a line saying %q", c.name, err, c.reason)
		}
		var rep Report
		VerifyAnswer(in, c.answer, &rep)
		if rep.Valid || rep.ParseErr == nil {
			t.Errorf("%s: VerifyAnswer passed it", c.name)
		}
	}
	if _, err := ParseMoves("<answer>\nT0: [0,0]\n</answer>"); !errors.Is(err, ErrParse) {
		t.Fatalf("ParseMoves of steps: %v", err)
	}
	// Labels in any case, "Step", emphasis and spaces.
	got, err := ParseAnswer("<answer>\n**Step 0:** [0,0] [3,3] [2,0]\nt 1: [0,1], [3,2], [2,0]\n</answer>", in)
	if want := [][]Pos{{{0, 0}, {0, 1}}, {{3, 3}, {3, 2}}, {{2, 0}}}; err != nil || !reflect.DeepEqual(got.Paths, want) {
		t.Fatalf("got %v, %v; want %v", got.Paths, err, want)
	}
}

// TestStepsPrompt: the steps prompt is the cells prompt with the answer line asking for steps.
func TestStepsPrompt(t *testing.T) {
	opt, ins := planStyleInstances(t, PromptSteps, 31)
	cells, _ := PromptStyle(PromptCells)
	for _, in := range ins[:5] {
		s, c := RenderPrompt(in, opt), RenderPrompt(in, cells)
		si, ci := strings.LastIndex(s, "Answer:"), strings.LastIndex(c, "Answer:")
		if si < 0 || s[:si] != c[:ci] || !strings.Contains(s[si:], "Tt: the cells of agents 0..") {
			t.Fatalf("%s: steps prompt\n%s\ncells prompt\n%s", in.ID, s, c)
		}
	}
}
