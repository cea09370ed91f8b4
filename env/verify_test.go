package env

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

func planF(kind FailureKind, agent, other, t int, cell Pos) Failure {
	return Failure{Check: kind.Check(), Kind: kind, Agent: agent, Other: other, T: t, Cell: cell}
}

func TestVerifyTable(t *testing.T) {
	// 4x4, hole at (1,2).
	rows := []string{"....", "..H.", "....", "...."}
	two := func(t *testing.T) *Instance {
		in := planInst(t, rows, planAg(0, 0, 0, 3), planAg(0, 3, 0, 0))
		return in
	}
	type tc struct {
		name  string
		in    func(t *testing.T) *Instance
		paths [][]Pos
		want  []Failure
	}
	cases := []tc{
		{"valid", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 1), planAg(3, 3, 2, 3))
		}, [][]Pos{{{0, 0}, {0, 1}}, {{3, 3}, {2, 3}}}, nil},
		{"edge conflict", two, [][]Pos{
			{{0, 0}, {0, 1}, {0, 2}, {0, 3}},
			{{0, 3}, {0, 2}, {0, 1}, {0, 0}},
		}, []Failure{
			planF(KindEdgeConflict, 0, 1, 2, Pos{0, 2}),
		}},
		{"vertex conflict mid-cell", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 2), planAg(0, 2, 0, 0))
		}, [][]Pos{
			{{0, 0}, {0, 1}, {0, 2}},
			{{0, 2}, {0, 1}, {0, 0}},
		}, []Failure{
			planF(KindVertexConflict, 0, 1, 1, Pos{0, 1}),
		}},
		{"parked agent blocks", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 1), planAg(2, 1, 0, 1+0*9))
		}, nil, nil}, // replaced below (goals must differ)
		{"out of bounds is not an illegal move", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 1))
		}, [][]Pos{{{0, 0}, {-1, 0}, {-1, 1}, {0, 1}}}, []Failure{
			planF(KindOutOfBounds, 0, -1, 1, Pos{-1, 0}),
			planF(KindOutOfBounds, 0, -1, 2, Pos{-1, 1}),
		}},
		{"jumps and diagonals", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 3, 3))
		}, [][]Pos{{{0, 0}, {0, 2}, {1, 3}, {1, 3}, {3, 3}}}, []Failure{
			planF(KindIllegalStep, 0, -1, 1, Pos{0, 2}),
			planF(KindIllegalStep, 0, -1, 2, Pos{1, 3}),
			planF(KindIllegalStep, 0, -1, 4, Pos{3, 3}),
		}},
		{"jump off the grid", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 0))
		}, [][]Pos{{{0, 0}, {-2, 0}, {-1, 0}, {0, 0}}}, []Failure{
			planF(KindOutOfBounds, 0, -1, 1, Pos{-2, 0}),
			planF(KindIllegalStep, 0, -1, 1, Pos{-2, 0}),
			planF(KindOutOfBounds, 0, -1, 2, Pos{-1, 0}),
		}},
		{"hole", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(1, 1, 1, 3))
		}, [][]Pos{{{1, 1}, {1, 2}, {1, 3}}}, []Failure{
			planF(KindHole, 0, -1, 1, Pos{1, 2}),
		}},
		{"ends in a hole", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(1, 1, 1, 3))
		}, [][]Pos{{{1, 1}, {1, 2}}}, []Failure{
			planF(KindHole, 0, -1, 1, Pos{1, 2}),
			planF(KindNotAtGoal, 0, -1, 1, Pos{1, 2}),
		}},
		{"wrong start and goal", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 3, 3))
		}, [][]Pos{{{0, 1}, {0, 0}}}, []Failure{
			planF(KindWrongStart, 0, -1, 0, Pos{0, 1}),
			planF(KindNotAtGoal, 0, -1, 1, Pos{0, 0}),
		}},
		{"missing agents", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 1), planAg(3, 3, 3, 2), planAg(2, 0, 2, 0))
		}, [][]Pos{{{0, 0}, {0, 1}}, {}}, []Failure{
			planF(KindMissingAgent, 2, -1, 0, Pos{2, 0}),
			planF(KindMissingAgent, 1, -1, 0, Pos{3, 3}),
		}},
		{"extra agents are counted, not checked", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 1))
		}, [][]Pos{{{0, 0}, {0, 1}}, {{0, 1}, {9, 9}}, {}}, []Failure{
			planF(KindExtraAgent, 1, -1, 0, Pos{0, 1}),
			planF(KindExtraAgent, 2, -1, 0, Pos{}),
		}},
		{"three in one cell", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 1, 2, 1), planAg(1, 0, 0, 0), planAg(1, 1, 3, 3))
		}, [][]Pos{{{0, 1}, {1, 1}, {2, 1}}, {{1, 0}, {1, 1}, {0, 1}, {0, 0}}, {{1, 1}, {1, 1}, {2, 1}, {3, 1}, {3, 2}, {3, 3}}}, []Failure{
			planF(KindVertexConflict, 0, 1, 1, Pos{1, 1}),
			planF(KindVertexConflict, 1, 2, 1, Pos{1, 1}),
			planF(KindVertexConflict, 0, 2, 1, Pos{1, 1}),
			planF(KindVertexConflict, 0, 2, 2, Pos{2, 1}),
		}},
		{"off-grid agents do not conflict", func(t *testing.T) *Instance {
			return planInst(t, rows, planAg(0, 0, 0, 0), planAg(0, 1, 0, 1))
		}, [][]Pos{{{0, 0}, {-1, 0}, {-1, 1}, {-1, 0}, {0, 0}}, {{0, 1}, {-1, 1}, {-1, 0}, {-1, 1}, {0, 1}}}, []Failure{
			planF(KindOutOfBounds, 0, -1, 1, Pos{-1, 0}),
			planF(KindOutOfBounds, 0, -1, 2, Pos{-1, 1}),
			planF(KindOutOfBounds, 0, -1, 3, Pos{-1, 0}),
			planF(KindOutOfBounds, 1, -1, 1, Pos{-1, 1}),
			planF(KindOutOfBounds, 1, -1, 2, Pos{-1, 0}),
			planF(KindOutOfBounds, 1, -1, 3, Pos{-1, 1}),
		}},
	}
	// Parked agent: agent 0 stops on (0,1) at t=1; agent 1 walks through it at t=3.
	cases[3] = tc{"parked agent blocks", func(t *testing.T) *Instance {
		return planInst(t, rows, planAg(0, 0, 0, 1), planAg(2, 1, 0, 2))
	}, [][]Pos{{{0, 0}, {0, 1}}, {{2, 1}, {2, 1}, {1, 1}, {0, 1}, {0, 2}}}, []Failure{
		planF(KindVertexConflict, 0, 1, 3, Pos{0, 1}),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := c.in(t)
			p := &Plan{Paths: c.paths}
			var rep Report
			Verify(in, p, &rep)
			if !reflect.DeepEqual(rep.Failures, append([]Failure{}, c.want...)) {
				t.Fatalf("failures:\n got %v\nwant %v", rep.Failures, c.want)
			}
			for ch := range NumChecks {
				want := true
				for _, f := range c.want {
					if f.Check == ch {
						want = false
					}
				}
				if rep.Passed[ch] != want {
					t.Errorf("Passed[%v] = %v, want %v", ch, rep.Passed[ch], want)
				}
			}
			if rep.Valid != (len(c.want) == 0) {
				t.Errorf("Valid = %v", rep.Valid)
			}
			planCheckNaive(t, in, p, &rep)
		})
	}
}

func TestVerifyCostsAndOptimal(t *testing.T) {
	rows := []string{"....", "....", "....", "...."}
	in := planInst(t, rows, planAg(0, 0, 0, 2), planAg(3, 0, 3, 1))
	in.SOC, in.Makespan = 3, 2
	cases := []struct {
		name                  string
		paths                 [][]Pos
		soc, mk, gapS, gapM   int
		optimal, optMk, valid bool
	}{
		{"optimal", [][]Pos{{{0, 0}, {0, 1}, {0, 2}}, {{3, 0}, {3, 1}, {3, 1}}}, 3, 2, 0, 0, true, true, true},
		{"late wait", [][]Pos{{{0, 0}, {0, 1}, {0, 2}}, {{3, 0}, {3, 0}, {3, 1}}}, 4, 2, 1, 0, false, true, true},
		{"detour", [][]Pos{{{0, 0}, {1, 0}, {1, 1}, {1, 2}, {0, 2}}, {{3, 0}, {3, 1}}}, 5, 4, 2, 2, false, false, true},
		{"goal visited then left", [][]Pos{{{0, 0}, {0, 1}, {0, 2}, {0, 3}, {0, 2}}, {{3, 0}, {3, 1}}}, 5, 4, 2, 2, false, false, true},
		{"invalid has costs but no gap", [][]Pos{{{0, 0}, {0, 1}, {0, 2}}, {{3, 0}, {2, 0}}}, 2 + 1, 2, 0, 0, false, false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var rep Report
			Verify(in, &Plan{Paths: c.paths}, &rep)
			if rep.SOC != c.soc || rep.Makespan != c.mk || rep.GapSOC != c.gapS || rep.GapMakespan != c.gapM ||
				rep.Optimal != c.optimal || rep.Valid != c.valid {
				t.Fatalf("got soc %d mk %d gaps %d/%d optimal %v valid %v; want %d %d %d/%d %v %v (%v)",
					rep.SOC, rep.Makespan, rep.GapSOC, rep.GapMakespan, rep.Optimal, rep.Valid,
					c.soc, c.mk, c.gapS, c.gapM, c.optimal, c.valid, rep.Failures)
			}
			if rep.OptimalFor(in, SumOfCosts) != c.optimal || rep.OptimalFor(in, MakespanObjective) != c.optMk {
				t.Fatalf("OptimalFor soc %v mk %v", rep.OptimalFor(in, SumOfCosts), rep.OptimalFor(in, MakespanObjective))
			}
		})
	}
	// Unsolved instance: valid but never optimal, no gaps.
	un := in.Clone()
	un.SOC, un.Makespan = 0, 0
	var rep Report
	Verify(un, &Plan{Paths: cases[0].paths}, &rep)
	if !rep.Valid || rep.Optimal || rep.OptimalFor(un, SumOfCosts) || rep.GapSOC != 0 {
		t.Fatalf("unsolved: %+v", rep)
	}
	// All agents start on their goals: optimum 0 is known.
	triv := planInst(t, rows, planAg(1, 1, 1, 1))
	Verify(triv, &Plan{Paths: [][]Pos{{{1, 1}}}}, &rep)
	if !rep.Valid || !rep.Optimal || !rep.OptimalFor(triv, MakespanObjective) {
		t.Fatalf("trivial: %+v", rep)
	}
}

func TestVerifyNilAndTruncation(t *testing.T) {
	in := planOpen4(t)
	var rep Report
	Verify(in, nil, &rep)
	if rep.Valid || rep.Counts[CheckAgentCount] != 3 || len(rep.Failures) != 3 || rep.Passed[CheckAgentCount] || !rep.Passed[CheckParsable] {
		t.Fatalf("nil plan: %+v", rep)
	}
	// One agent far off the grid for 100 steps: 100 out-of-bounds failures.
	path := []Pos{{0, 0}}
	for i := range 100 {
		path = append(path, Pos{-1 - i, 0})
	}
	Verify(in, &Plan{Paths: [][]Pos{path, {{3, 3}, {3, 2}, {3, 1}}, {{2, 0}}}}, &rep)
	if len(rep.Failures) != MaxFailures || rep.Truncated != 100+1-MaxFailures || rep.Counts[CheckInBounds] != 100 {
		t.Fatalf("stored %d truncated %d counts %v", len(rep.Failures), rep.Truncated, rep.Counts)
	}
	cats := rep.Categories()
	if cats[CategoryOutOfBounds] != 100 || cats[CategoryGoal] != 1 || cats[CategoryIllegalMove] != 0 {
		t.Fatalf("categories %v", cats)
	}
	// Reuse resets everything.
	Verify(in, &Plan{Paths: [][]Pos{{{0, 0}, {0, 1}, {1, 1}}, {{3, 3}, {3, 2}, {3, 1}}, {{2, 0}}}}, &rep)
	if !rep.Valid || rep.Truncated != 0 || len(rep.Failures) != 0 || rep.Counts != [NumChecks]int{} {
		t.Fatalf("reuse: %+v", rep)
	}
}

func TestCheckNames(t *testing.T) {
	want := []string{"parsable", "legal_move", "conflict_free", "goal_reached", "start_correct", "agent_count", "hole_free", "in_bounds"}
	for c := range NumChecks {
		if c.String() != want[c] {
			t.Errorf("Check(%d) = %q want %q", c, c.String(), want[c])
		}
	}
	cat := map[Check]string{CheckParsable: "parse", CheckLegalMove: "illegal_move", CheckConflictFree: "conflict",
		CheckHoleFree: "hole", CheckInBounds: "out_of_bounds", CheckGoalReached: "goal", CheckStartCorrect: "start", CheckAgentCount: "agent_count"}
	seen := map[Category]bool{}
	for c, name := range cat {
		if got := CategoryOf(c).String(); got != name {
			t.Errorf("CategoryOf(%v) = %q want %q", c, got, name)
		}
		seen[CategoryOf(c)] = true
	}
	if len(seen) != int(NumCategories) {
		t.Errorf("categories not one per check: %v", seen)
	}
	for k := range NumFailureKinds {
		if k.Check() >= NumChecks || k.String() == "" {
			t.Errorf("kind %d: check %v name %q", k, k.Check(), k)
		}
	}
	if NumChecks.String() != "Check(8)" || CategoryOf(NumChecks) != NumCategories {
		t.Error("out-of-range names")
	}
}

// planNaiveFailures is the slow reference: every rule checked directly,
// conflicts over all pairs.
func planNaiveFailures(in *Instance, p *Plan) []Failure {
	var out []Failure
	k := len(in.Agents)
	for i := range max(k, len(p.Paths)) {
		switch {
		case i >= len(p.Paths):
			out = append(out, planF(KindMissingAgent, i, -1, 0, in.Agents[i].Start))
		case i >= k:
			var c Pos
			if len(p.Paths[i]) > 0 {
				c = p.Paths[i][0]
			}
			out = append(out, planF(KindExtraAgent, i, -1, 0, c))
		case len(p.Paths[i]) == 0:
			out = append(out, planF(KindMissingAgent, i, -1, 0, in.Agents[i].Start))
		default:
			path := p.Paths[i]
			if path[0] != in.Agents[i].Start {
				out = append(out, planF(KindWrongStart, i, -1, 0, path[0]))
			}
			for t, q := range path {
				if !in.InBounds(q) {
					out = append(out, planF(KindOutOfBounds, i, -1, t, q))
				} else if in.Hole(q) {
					out = append(out, planF(KindHole, i, -1, t, q))
				}
				if t > 0 {
					d := planAbs(q.R-path[t-1].R) + planAbs(q.C-path[t-1].C)
					if d > 1 {
						out = append(out, planF(KindIllegalStep, i, -1, t, q))
					}
				}
			}
			if path[len(path)-1] != in.Agents[i].Goal {
				out = append(out, planF(KindNotAtGoal, i, -1, len(path)-1, path[len(path)-1]))
			}
		}
	}
	n := min(k, len(p.Paths))
	h := 0
	for i := range n {
		h = max(h, len(p.Paths[i])-1)
	}
	for t := 0; t <= h; t++ {
		for i := range n {
			for j := i + 1; j < n; j++ {
				if len(p.Paths[i]) == 0 || len(p.Paths[j]) == 0 {
					continue
				}
				a, b := p.At(i, t), p.At(j, t)
				if !in.InBounds(a) || !in.InBounds(b) {
					continue
				}
				if a == b {
					out = append(out, planF(KindVertexConflict, i, j, t, a))
				}
				if t > 0 {
					a0, b0 := p.At(i, t-1), p.At(j, t-1)
					if a != a0 && a0 == b && b0 == a {
						out = append(out, planF(KindEdgeConflict, i, j, t, a))
					}
				}
			}
		}
	}
	return out
}

func planAbs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func planSortFailures(fs []Failure) []Failure {
	if len(fs) == 0 {
		return nil
	}
	fs = slices.Clone(fs)
	slices.SortFunc(fs, func(a, b Failure) int {
		return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Agent, b.Agent), cmp.Compare(a.Other, b.Other),
			cmp.Compare(a.T, b.T), cmp.Compare(a.Cell.R, b.Cell.R), cmp.Compare(a.Cell.C, b.Cell.C))
	})
	return fs
}

// planCheckNaive compares rep (from Verify) with the naive reference.
func planCheckNaive(t *testing.T, in *Instance, p *Plan, rep *Report) {
	t.Helper()
	want := planNaiveFailures(in, p)
	var counts [NumChecks]int
	for _, f := range want {
		counts[f.Check]++
	}
	if counts != rep.Counts {
		t.Fatalf("counts %v, naive %v\nplan %v", rep.Counts, counts, p.Paths)
	}
	if rep.Truncated == 0 && !reflect.DeepEqual(planSortFailures(rep.Failures), planSortFailures(want)) {
		t.Fatalf("failures differ from the naive reference\n got %v\nwant %v\nplan %v", planSortFailures(rep.Failures), planSortFailures(want), p.Paths)
	}
	if rep.Valid != (len(want) == 0) {
		t.Fatalf("valid %v with %d naive failures", rep.Valid, len(want))
	}
}

// planRandPlan draws a plan that often breaks rules: random walks with
// waits, occasional jumps, wrong starts, odd lengths, missing or extra paths.
func planRandPlan(rng *rand.Rand, in *Instance) *Plan {
	k := len(in.Agents)
	n := k
	switch rng.IntN(10) {
	case 0:
		n = rng.IntN(k + 1)
	case 1:
		n = k + 1 + rng.IntN(2)
	}
	p := &Plan{Paths: make([][]Pos, n)}
	for i := range n {
		if rng.IntN(30) == 0 {
			continue // empty path
		}
		var cur Pos
		if i < k && rng.IntN(15) != 0 {
			cur = in.Agents[i].Start
		} else {
			cur = Pos{rng.IntN(in.Height+2) - 1, rng.IntN(in.Width+2) - 1}
		}
		path := []Pos{cur}
		steps := rng.IntN(3 * in.Width)
		for range steps {
			switch r := rng.IntN(40); {
			case r == 0:
				cur = Pos{cur.R + rng.IntN(5) - 2, cur.C + rng.IntN(5) - 2}
			case r < 8:
			default:
				cur = Move(1 + rng.IntN(4)).Apply(cur)
			}
			path = append(path, cur)
		}
		if i < k && rng.IntN(3) == 0 {
			path = append(path, in.Agents[i].Goal)
		}
		p.Paths[i] = path
	}
	return p
}

func TestVerifyAgainstNaive(t *testing.T) {
	rng := planRNG(t)
	var rep Report
	valid := 0
	for range 3000 {
		n := 2 + rng.IntN(6)
		k := 1 + rng.IntN(min(n, 6))
		in := planRandInstance(rng, n, k, 0.25*rng.Float64())
		p := planRandPlan(rng, in)
		Verify(in, p, &rep)
		planCheckNaive(t, in, p, &rep)
		if rep.Valid {
			valid++
		}
	}
	t.Logf("%d valid plans", valid)
}

func TestVerifyAnswerMatchesVerify(t *testing.T) {
	rng := planRNG(t)
	var r1, r2 Report
	for range 500 {
		n := 3 + rng.IntN(6)
		k := 1 + rng.IntN(min(n, 4))
		in := planRandInstance(rng, n, k, 0.2)
		p := planRandPlan(rng, in)
		if len(p.Paths) > k {
			p.Paths = p.Paths[:k]
		}
		for len(p.Paths) < k {
			p.Paths = append(p.Paths, []Pos{in.Agents[len(p.Paths)].Start})
		}
		for i := range p.Paths {
			if len(p.Paths[i]) == 0 || p.Paths[i][0] != in.Agents[i].Start {
				p.Paths[i] = []Pos{in.Agents[i].Start}
			}
			// Drop jumps: the text form can only say 4-neighbour moves.
			for t := 1; t < len(p.Paths[i]); t++ {
				if _, ok := MoveBetween(p.Paths[i][t-1], p.Paths[i][t]); !ok {
					p.Paths[i] = p.Paths[i][:t]
					break
				}
			}
		}
		moves, err := PlanMoves(p)
		if err != nil {
			t.Fatal(err)
		}
		Verify(in, p, &r1)
		VerifyAnswer(in, "<think>ok</think>"+FormatMoves(moves), &r2)
		if !reflect.DeepEqual(r1.Failures, r2.Failures) || r1.Passed != r2.Passed || r1.SOC != r2.SOC || r1.Makespan != r2.Makespan {
			t.Fatalf("Verify and VerifyAnswer differ:\n%v\n%v", r1.Failures, r2.Failures)
		}
	}
}

func TestVerifyZeroAllocs(t *testing.T) {
	rng := planRNG(t)
	in := planRandInstance(rng, 6, 3, 0.2)
	plans := make([]*Plan, 16)
	for i := range plans {
		plans[i] = planRandPlan(rng, in)
	}
	var rep Report
	for _, p := range plans {
		Verify(in, p, &rep)
	}
	i := 0
	if a := testing.AllocsPerRun(200, func() {
		Verify(in, plans[i%len(plans)], &rep)
		i++
	}); a != 0 {
		t.Fatalf("Verify: %v allocs per call", a)
	}
	answer := "<think>\nAgent 0 goes right.\n</think>\n<answer>\nAgent 0: RIGHT DOWN UP\nAgent 1: WAIT, LEFT\n**Agent 2**: UP -> UP\n</answer>"
	VerifyAnswer(in, answer, &rep)
	if a := testing.AllocsPerRun(200, func() { VerifyAnswer(in, answer, &rep) }); a != 0 {
		t.Fatalf("VerifyAnswer: %v allocs per call", a)
	}
}

func ExampleVerifyAnswer() {
	in := &Instance{Width: 3, Height: 3, Holes: make([]bool, 9),
		Agents: []Agent{{Start: Pos{0, 0}, Goal: Pos{0, 2}}, {Start: Pos{0, 2}, Goal: Pos{2, 2}}}}
	in.Holes[4] = true // (1,1)
	in.SOC, in.Makespan = 4, 2

	var rep Report
	VerifyAnswer(in, "<think>agent 1 clears the way first</think>\n<answer>\nAgent 0: RIGHT RIGHT\nAgent 1: DOWN DOWN\n</answer>", &rep)
	fmt.Println(rep.Valid, rep.Optimal, rep.SOC, rep.Makespan)

	VerifyAnswer(in, "<answer>\nAgent 0: DOWN RIGHT\nAgent 1: LEFT\n</answer>", &rep)
	fmt.Println(rep.Valid)
	for _, f := range rep.Failures {
		fmt.Println(f)
	}
	fmt.Println(rep.Categories()[CategoryConflict], AccuracyReward(in, &rep, SumOfCosts))
	// Output:
	// true true 4 2
	// false
	// hole: agent 0 at t=2 (1,1)
	// not_at_goal: agent 0 at t=2 (1,1)
	// not_at_goal: agent 1 at t=1 (0,1)
	// 0 0
}

func ExampleSim() {
	in := &Instance{Width: 3, Height: 3, Holes: make([]bool, 9),
		Agents: []Agent{{Start: Pos{0, 0}, Goal: Pos{0, 2}}, {Start: Pos{2, 0}, Goal: Pos{2, 2}}}}
	s := NewSim(in, 10)
	for !s.Done() {
		s.Step([]Move{Right, Right})
	}
	p := s.Plan()
	var rep Report
	Verify(in, &p, &rep)
	ms, _ := PlanMoves(&p)
	fmt.Println(s.T(), rep.Valid, rep.SOC)
	fmt.Println(FormatMoves(ms))
	// Output:
	// 2 true 4
	// <answer>
	// Agent 0: RIGHT RIGHT
	// Agent 1: RIGHT RIGHT
	// </answer>
}
