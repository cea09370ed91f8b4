package env

import (
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// solvParse builds an instance from a picture: '.' free, 'H' hole; agents
// as (start, goal) pairs.
func solvParse(t testing.TB, rows []string, agents ...Agent) *Instance {
	t.Helper()
	n := len(rows)
	in := &Instance{Width: n, Height: n, Holes: make([]bool, n*n), Agents: agents}
	for r, row := range rows {
		for c := 0; c < len(row); c++ {
			in.Holes[r*n+c] = row[c] == 'H'
		}
	}
	if err := in.Validate(); err != nil {
		t.Fatalf("bad test instance: %v", err)
	}
	in.ID = in.ComputeID()
	return in
}

func solvAg(sr, sc, gr, gc int) Agent { return Agent{Start: Pos{sr, sc}, Goal: Pos{gr, gc}} }

func solvDump(in *Instance) string {
	var b strings.Builder
	for _, r := range in.GridRows() {
		b.WriteString(r)
		b.WriteByte('\n')
	}
	for i, a := range in.Agents {
		fmt.Fprintf(&b, "agent %d: %v -> %v\n", i, a.Start, a.Goal)
	}
	return b.String()
}

// solvCheckPlan checks a plan independently of the solver: right starts and
// goals, legal moves on free in-bounds cells, no vertex or swap conflicts
// (agents hold their last cell), each path ending at its final arrival, and
// with noWait no waits before arrival.
func solvCheckPlan(t testing.TB, in *Instance, p Plan, noWait bool) {
	t.Helper()
	if len(p.Paths) != len(in.Agents) {
		t.Fatalf("plan has %d paths for %d agents", len(p.Paths), len(in.Agents))
	}
	for i, path := range p.Paths {
		a := in.Agents[i]
		if len(path) == 0 || path[0] != a.Start || path[len(path)-1] != a.Goal {
			t.Fatalf("agent %d: path %v does not run %v -> %v", i, path, a.Start, a.Goal)
		}
		if PathCost(path, a.Goal) != len(path)-1 {
			t.Fatalf("agent %d: path %v does not end at its final arrival", i, path)
		}
		for s, q := range path {
			if !in.InBounds(q) || in.Hole(q) {
				t.Fatalf("agent %d: step %d on %v (out of bounds or hole)", i, s, q)
			}
			if s > 0 {
				m, ok := MoveBetween(path[s-1], q)
				if !ok {
					t.Fatalf("agent %d: illegal step %v -> %v", i, path[s-1], q)
				}
				if noWait && m == Wait {
					t.Fatalf("agent %d: waits at step %d in a no-wait plan", i, s)
				}
			}
		}
	}
	T := p.Horizon()
	for s := 0; s <= T; s++ {
		for i := range p.Paths {
			for j := i + 1; j < len(p.Paths); j++ {
				if p.At(i, s) == p.At(j, s) {
					t.Fatalf("vertex conflict: agents %d and %d at %v at t=%d", i, j, p.At(i, s), s)
				}
				if s > 0 && p.At(i, s) == p.At(j, s-1) && p.At(j, s) == p.At(i, s-1) {
					t.Fatalf("swap conflict: agents %d and %d at t=%d", i, j, s)
				}
			}
		}
	}
}

func TestSolverRules(t *testing.T) {
	cases := []struct {
		name      string
		rows      []string
		agents    []Agent
		soc, mk   int
		needsWait bool
		unsolv    bool
	}{
		{
			// Both shortest paths cross the centre at t=1: one agent
			// waits; no wait-free plan has an odd cost, so a wait is
			// needed.
			name:   "vertex conflict",
			rows:   []string{"...", "...", "..."},
			agents: []Agent{solvAg(1, 0, 1, 2), solvAg(0, 1, 2, 1)},
			soc:    5, mk: 3, needsWait: true,
		},
		{
			// Neighbours that want each other's cell: one walks round
			// the 2x2 cycle.
			name:   "swap conflict",
			rows:   []string{"..", ".."},
			agents: []Agent{solvAg(0, 0, 0, 1), solvAg(0, 1, 0, 0)},
			soc:    4, mk: 3,
		},
		{
			// Agent 0 starts on its goal, which agent 1 must cross:
			// agent 0 steps aside and comes back.
			name:   "target conflict on a parked agent",
			rows:   []string{"H.H", "...", "HHH"},
			agents: []Agent{solvAg(1, 1, 1, 1), solvAg(1, 0, 1, 2)},
			soc:    4, mk: 2,
		},
		{
			// Agent 0 could arrive at t=1, but agent 1 must cross its
			// goal then (it cannot wait or turn back without waiting);
			// agent 0 waits one step.
			name:   "target conflict needing a wait",
			rows:   []string{"H.H", "...", "HHH"},
			agents: []Agent{solvAg(0, 1, 1, 1), solvAg(1, 0, 1, 2)},
			soc:    4, mk: 2, needsWait: true,
		},
		{
			// A corridor with a side pocket: agent 1 ducks into the
			// pocket to let agent 0 through, without waiting.
			name:   "corridor with a pocket",
			rows:   []string{"HH.H", "....", "HHHH", "HHHH"},
			agents: []Agent{solvAg(1, 0, 1, 3), solvAg(1, 3, 1, 0)},
			soc:    8, mk: 5,
		},
		{
			// Agent 0's goal is agent 1's start: agent 1 leaves first.
			name:   "start on another agent's goal",
			rows:   []string{"...", "HH.", "HH."},
			agents: []Agent{solvAg(0, 0, 0, 1), solvAg(0, 1, 2, 2)},
			soc:    4, mk: 3,
		},
		{
			name:   "goal walled off by holes",
			rows:   []string{"...", "..H", ".H."},
			agents: []Agent{solvAg(0, 0, 2, 2)},
			unsolv: true,
		},
		{
			name:   "swap in a dead-end corridor",
			rows:   []string{"HHH", "...", "HHH"},
			agents: []Agent{solvAg(1, 0, 1, 1), solvAg(1, 1, 1, 0)},
			unsolv: true,
		},
		{
			name:   "parked agent blocking a dead end for good",
			rows:   []string{"HHHH", "....", "HHHH", "HHHH"},
			agents: []Agent{solvAg(1, 1, 1, 1), solvAg(1, 0, 1, 3)},
			unsolv: true,
		},
		{
			name:   "everyone already home",
			rows:   []string{"..", ".."},
			agents: []Agent{solvAg(0, 0, 0, 0), solvAg(1, 1, 1, 1)},
			soc:    0, mk: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := solvParse(t, tc.rows, tc.agents...)
			if len(in.Agents) <= solvBruteMaxAgents && in.Width <= 4 {
				want := solvBrute(in)
				if want.solvable == tc.unsolv || (want.solvable && (want.soc != tc.soc || want.mk != tc.mk || want.needsWait != tc.needsWait)) {
					t.Fatalf("table entry disagrees with the brute force: %+v", want)
				}
			}
			sol, err := Solve(in, SolveOptions{})
			if tc.unsolv {
				var ue *UnsolvableError
				if !errors.Is(err, ErrUnsolvable) || !errors.As(err, &ue) {
					t.Fatalf("want ErrUnsolvable, got sol=%+v err=%v", sol, err)
				}
				before := *in
				if err := Annotate(in, SolveOptions{}); !errors.Is(err, ErrUnsolvable) {
					t.Fatalf("Annotate: want ErrUnsolvable, got %v", err)
				}
				if in.SOC != before.SOC || in.Makespan != before.Makespan || in.NeedsWait != before.NeedsWait {
					t.Fatalf("Annotate changed the instance on error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			solvCheckPlan(t, in, sol.Plan, false)
			if sol.SOC != tc.soc {
				t.Errorf("SOC = %d, want %d", sol.SOC, tc.soc)
			}
			if soc, mk := sol.Plan.Costs(in); soc != sol.SOC || mk != sol.Makespan {
				t.Errorf("Solution costs %d/%d disagree with Plan.Costs %d/%d", sol.SOC, sol.Makespan, soc, mk)
			}
			msol, err := Solve(in, SolveOptions{Objective: MakespanObjective})
			if err != nil {
				t.Fatal(err)
			}
			solvCheckPlan(t, in, msol.Plan, false)
			if msol.Makespan != tc.mk {
				t.Errorf("makespan = %d, want %d", msol.Makespan, tc.mk)
			}
			if err := Annotate(in, SolveOptions{}); err != nil {
				t.Fatal(err)
			}
			if in.SOC != tc.soc || in.Makespan != tc.mk || in.NeedsWait != tc.needsWait {
				t.Errorf("Annotate: soc=%d mk=%d wait=%v, want %d %d %v", in.SOC, in.Makespan, in.NeedsWait, tc.soc, tc.mk, tc.needsWait)
			}
		})
	}
}

func TestSolverBudget(t *testing.T) {
	in := solvParse(t, []string{"...", "...", "..."}, solvAg(1, 0, 1, 2), solvAg(0, 1, 2, 1))
	_, err := Solve(in, SolveOptions{MaxNodes: 1})
	var be *BudgetError
	if !errors.Is(err, ErrBudget) || !errors.As(err, &be) {
		t.Fatalf("want a BudgetError, got %v", err)
	}
	if be.Nodes < 1 {
		t.Errorf("BudgetError reports %d nodes", be.Nodes)
	}
	_, err = Solve(in, SolveOptions{MaxExpansions: 2})
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("want ErrBudget for an expansion budget, got %v", err)
	}
	before := *in
	if err := Annotate(in, SolveOptions{MaxNodes: 1}); !errors.Is(err, ErrBudget) {
		t.Fatalf("Annotate: want ErrBudget, got %v", err)
	}
	if in.SOC != before.SOC || in.Makespan != before.Makespan || in.NeedsWait != before.NeedsWait {
		t.Fatalf("Annotate changed the instance on error")
	}
}

func TestSolverInvalidInstance(t *testing.T) {
	in := &Instance{Width: 3, Height: 3, Holes: make([]bool, 9), Agents: []Agent{solvAg(0, 0, 5, 5)}}
	_, err := Solve(in, SolveOptions{})
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("want a FieldError, got %v", err)
	}
}

// TestSolverConcurrent runs Solve from several goroutines on shared
// instances (run with -race).
func TestSolverConcurrent(t *testing.T) {
	ins := []*Instance{
		solvParse(t, []string{"...", "...", "..."}, solvAg(1, 0, 1, 2), solvAg(0, 1, 2, 1)),
		solvParse(t, []string{"HH.H", "....", "HHHH", "HHHH"}, solvAg(1, 0, 1, 3), solvAg(1, 3, 1, 0)),
	}
	want := make([]int, len(ins))
	for i, in := range ins {
		sol, err := Solve(in, SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want[i] = sol.SOC
	}
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 20; r++ {
				for i, in := range ins {
					sol, err := Solve(in, SolveOptions{})
					if err != nil || sol.SOC != want[i] {
						errs <- fmt.Errorf("instance %d: soc %d err %v", i, sol.SOC, err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestSolverAllocs holds a warmed Solver to its allocation budget: Annotate
// allocates nothing, Solve only the returned plan (two allocations).
func TestSolverAllocs(t *testing.T) {
	in := solvParse(t, []string{"H.H.", "....", "H.HH", "...."},
		solvAg(1, 0, 1, 3), solvAg(0, 1, 3, 1), solvAg(3, 0, 0, 3))
	s := NewSolver()
	if err := s.Annotate(in, SolveOptions{}); err != nil {
		t.Fatal(err)
	}
	if sol, err := s.Solve(in, SolveOptions{}); err != nil || sol.Nodes < 3 {
		t.Fatalf("want an instance that needs branching: %+v %v", sol, err)
	}
	if n := testing.AllocsPerRun(20, func() {
		if err := s.Annotate(in, SolveOptions{}); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("Annotate: %.1f allocations per run, want 0", n)
	}
	if n := testing.AllocsPerRun(20, func() {
		if _, err := s.Solve(in, SolveOptions{}); err != nil {
			t.Fatal(err)
		}
	}); n > 2 {
		t.Errorf("Solve: %.1f allocations per run, want at most 2", n)
	}
}

// solvFixedInstances returns count instances drawn from seed without the
// generator (so that changes to the generator do not change them): sides 5
// to 8, 3 to 6 agents, about 20% holes; starts and goals are distinct free
// cells (an agent's goal may be another's start). Some are unsolvable.
func solvFixedInstances(seed uint64, count int) []*Instance {
	rng := rand.New(rand.NewPCG(seed, 0x901d))
	var out []*Instance
	for len(out) < count {
		w := 5 + rng.IntN(4)
		k := 3 + rng.IntN(4)
		in := &Instance{Width: w, Height: w, Holes: make([]bool, w*w), Agents: make([]Agent, k)}
		var free []int
		for c := range in.Holes {
			in.Holes[c] = rng.IntN(10) < 2
			if !in.Holes[c] {
				free = append(free, c)
			}
		}
		if len(free) < k {
			continue
		}
		starts, goals := rng.Perm(len(free)), rng.Perm(len(free))
		for a := range in.Agents {
			in.Agents[a] = Agent{Start: in.PosOf(free[starts[a]]), Goal: in.PosOf(free[goals[a]])}
		}
		in.ID = in.ComputeID()
		out = append(out, in)
	}
	return out
}

// TestSolverWorkUnchanged pins the solver's behaviour: a hash of the plans,
// costs, node and expansion counts and outcomes of SOC-optimal, makespan
// and wait-free searches and of annotate on fixed instances. A change of
// the hash means a change of tie-breaking or pruning: if it is intended,
// check the other solver tests and update want.
func TestSolverWorkUnchanged(t *testing.T) {
	const want = uint64(0xe03fcbd6b65b5d65)
	// outcome describes err by its kind and numbers, not its wording.
	outcome := func(err error) string {
		var be *BudgetError
		var ue *UnsolvableError
		switch {
		case err == nil:
			return "ok"
		case errors.As(err, &be):
			return fmt.Sprintf("budget %d %d", be.Nodes, be.Expansions)
		case errors.As(err, &ue):
			return fmt.Sprintf("unsolvable %d", ue.Agent)
		}
		return "error"
	}
	h := fnv.New64a()
	s := NewSolver()
	for _, in := range solvFixedInstances(2026, 150) {
		for i, opt := range []SolveOptions{
			{MaxNodes: 2000},
			{Objective: MakespanObjective, MaxNodes: 2000},
			{NoWaitBeforeArrival: true, MaxNodes: 2000},
		} {
			sol, err := s.Solve(in, opt)
			fmt.Fprintf(h, "%s %d: %d %d %d %d %v %s\n", in.ID, i, sol.Nodes, sol.Expansions, sol.SOC, sol.Makespan, sol.Plan.Paths, outcome(err))
		}
		r, err := s.annotate(in, SolveOptions{MaxNodes: 2000}, nil)
		fmt.Fprintf(h, "%s annotate: %d %d %v %d %d %s\n", in.ID, r.soc, r.mk, r.needsWait, r.nodes, r.exp, outcome(err))
	}
	if got := h.Sum64(); got != want {
		t.Errorf("solver work hash %#x, want %#x", got, want)
	}
}
