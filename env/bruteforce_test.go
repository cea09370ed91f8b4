package env

import (
	"container/heap"
	"errors"
	"flag"
	"math/rand/v2"
	"testing"
)

var solverSeed = flag.Uint64("solverseed", 0, "seed for the randomised solver tests (0: a fixed default)")

// solvTestSeed returns the seed for a randomised solver test and logs it.
func solvTestSeed(t testing.TB, def uint64) uint64 {
	t.Helper()
	seed := def
	if *solverSeed != 0 {
		seed = *solverSeed
	}
	t.Logf("seed %d (replay with -solverseed=%d)", seed, seed)
	return seed
}

// The brute-force reference: searches over joint states, written for
// obviousness rather than speed. It is meant for grids up to 4x4 and up to
// 3 agents.

const solvBruteMaxAgents = 3

// solvBruteState is a joint state: every agent's cell (row-major index) and
// the set of agents that have finished for good (they sit on their goals and
// no longer pay).
type solvBruteState struct {
	pos  [solvBruteMaxAgents]int
	done uint8
}

type solvBruteItem struct {
	st   solvBruteState
	cost int
}

type solvBruteQueue []solvBruteItem

func (q solvBruteQueue) Len() int           { return len(q) }
func (q solvBruteQueue) Less(i, j int) bool { return q[i].cost < q[j].cost }
func (q solvBruteQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *solvBruteQueue) Push(x any)        { *q = append(*q, x.(solvBruteItem)) }
func (q *solvBruteQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// solvBruteSteps lists every joint next position of the agents in pos: each
// agent not in frozen takes one of the five moves (no WAIT when noWait),
// frozen agents stay; moves leave no agent off the grid, on a hole, on the
// same cell as another, or swapping cells with another. The positions are
// appended to out, len(pos) numbers per successor.
func solvBruteSteps(in *Instance, pos []int, frozen uint8, noWait bool, out []int) []int {
	k := len(pos)
	var next [solvBruteMaxAgents]int
	var rec func(i int)
	rec = func(i int) {
		if i == k {
			for a := 0; a < k; a++ {
				for b := a + 1; b < k; b++ {
					if next[a] == next[b] {
						return
					}
					if next[a] == pos[b] && next[b] == pos[a] && pos[a] != pos[b] {
						return
					}
				}
			}
			out = append(out, next[:k]...)
			return
		}
		if frozen&(1<<i) != 0 {
			next[i] = pos[i]
			rec(i + 1)
			return
		}
		p := in.PosOf(pos[i])
		for m := Move(0); m < NumMoves; m++ {
			if m == Wait && noWait {
				continue
			}
			q := m.Apply(p)
			if !in.InBounds(q) || in.Hole(q) {
				continue
			}
			next[i] = in.Index(q)
			rec(i + 1)
		}
	}
	rec(0)
	return out
}

// solvBruteSOC returns the optimal sum of costs by Dijkstra over (positions,
// finished set). A step costs one per unfinished agent. After each step (and
// at time 0) any unfinished agent standing on its goal may finish; under
// noWait an unfinished agent must move at every step. ok is false when no
// state with every agent finished can be reached.
func solvBruteSOC(in *Instance, noWait bool) (soc int, ok bool) {
	return solvBruteCost(in, noWait, 0)
}

// solvBruteCost is solvBruteSOC where each step also costs stepCost; with
// a large stepCost the optimum is makespan*stepCost + SOC of the plan with
// the smallest SOC among the makespan-optimal ones.
func solvBruteCost(in *Instance, noWait bool, stepCost int) (soc int, ok bool) {
	k := len(in.Agents)
	all := uint8(1)<<k - 1
	var start solvBruteState
	for i, a := range in.Agents {
		start.pos[i] = in.Index(a.Start)
	}
	best := map[solvBruteState]int{}
	q := &solvBruteQueue{}
	var steps []int
	// finishOptions lists st with every subset of the unfinished agents
	// that stand on their goals marked finished.
	finishOptions := func(st solvBruteState) []solvBruteState {
		var can uint8
		for i := 0; i < k; i++ {
			if st.done&(1<<i) == 0 && st.pos[i] == in.Index(in.Agents[i].Goal) {
				can |= 1 << i
			}
		}
		var out []solvBruteState
		for sub := uint8(0); sub <= can; sub++ {
			if sub&^can != 0 {
				continue
			}
			s2 := st
			s2.done |= sub
			out = append(out, s2)
		}
		return out
	}
	for _, s0 := range finishOptions(start) {
		best[s0] = 0
		heap.Push(q, solvBruteItem{s0, 0})
	}
	for q.Len() > 0 {
		it := heap.Pop(q).(solvBruteItem)
		if it.cost > best[it.st] {
			continue
		}
		if it.st.done == all {
			return it.cost, true
		}
		pay := k - popcount8(it.st.done) + stepCost
		steps = solvBruteSteps(in, it.st.pos[:k], it.st.done, noWait, steps[:0])
		for len(steps) > 0 {
			var st solvBruteState
			copy(st.pos[:], steps[:k])
			steps = steps[k:]
			st.done = it.st.done
			for _, s2 := range finishOptions(st) {
				c := it.cost + pay
				if old, seen := best[s2]; !seen || c < old {
					best[s2] = c
					heap.Push(q, solvBruteItem{s2, c})
				}
			}
		}
	}
	return 0, false
}

func popcount8(x uint8) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

// solvBruteMakespan returns the optimal makespan: the breadth-first distance
// from the start configuration to the goal configuration (once every agent
// is on its goal they can all stay).
func solvBruteMakespan(in *Instance) (int, bool) {
	k := len(in.Agents)
	var start, goal [solvBruteMaxAgents]int
	for i, a := range in.Agents {
		start[i] = in.Index(a.Start)
		goal[i] = in.Index(a.Goal)
	}
	dist := map[[solvBruteMaxAgents]int]int{start: 0}
	queue := [][solvBruteMaxAgents]int{start}
	var steps []int
	for len(queue) > 0 {
		cur := queue[0]
		queue = queue[1:]
		if cur == goal {
			return dist[cur], true
		}
		steps = solvBruteSteps(in, cur[:k], 0, false, steps[:0])
		for len(steps) > 0 {
			var st [solvBruteMaxAgents]int
			copy(st[:], steps[:k])
			steps = steps[k:]
			if _, seen := dist[st]; !seen {
				dist[st] = dist[cur] + 1
				queue = append(queue, st)
			}
		}
	}
	return 0, false
}

// solvBruteAnswer is the reference annotation of an instance.
type solvBruteAnswer struct {
	solvable  bool
	soc, mk   int
	needsWait bool
	nwSOC     int  // optimal SOC without waits before arrival
	nwOK      bool // whether a plan without such waits exists
}

func solvBrute(in *Instance) solvBruteAnswer {
	soc, ok := solvBruteSOC(in, false)
	if !ok {
		return solvBruteAnswer{}
	}
	mk, ok2 := solvBruteMakespan(in)
	if !ok2 {
		panic("brute force: SOC search solved an instance that the makespan search did not")
	}
	nw, okNW := solvBruteSOC(in, true)
	return solvBruteAnswer{solvable: true, soc: soc, mk: mk, needsWait: !okNW || nw > soc, nwSOC: nw, nwOK: okNW}
}

// solvRandomTiny returns a random instance of side 2..4 with 1..3 agents:
// distinct starts, distinct goals, otherwise unconstrained (a start may be
// its own or another agent's goal) and a random number of holes. It may be
// unsolvable.
func solvRandomTiny(rng *rand.Rand) *Instance {
	for {
		n := 2 + rng.IntN(3)
		k := 1 + rng.IntN(min(n, solvBruteMaxAgents))
		if rng.IntN(2) == 0 {
			k = min(n, solvBruteMaxAgents) // crowded instances conflict more
		}
		cells := n * n
		in := &Instance{Width: n, Height: n, Holes: make([]bool, cells)}
		nh := rng.IntN(cells - k + 1)
		if rng.IntN(2) == 0 {
			nh = rng.IntN(cells/4 + 1)
		}
		perm := rng.Perm(cells)
		for _, c := range perm[:nh] {
			in.Holes[c] = true
		}
		free := perm[nh:]
		if len(free) < k {
			continue
		}
		st := rng.Perm(len(free))[:k]
		gl := rng.Perm(len(free))[:k]
		for i := 0; i < k; i++ {
			in.Agents = append(in.Agents, Agent{Start: in.PosOf(free[st[i]]), Goal: in.PosOf(free[gl[i]])})
		}
		if in.Validate() == nil {
			in.ID = in.ComputeID()
			return in
		}
	}
}

// TestSolverMatchesBruteForce checks optimal SOC, optimal makespan,
// NeedsWait and unsolvability against the brute-force reference on random
// tiny instances.
func TestSolverMatchesBruteForce(t *testing.T) {
	seed := solvTestSeed(t, 1)
	rng := rand.New(rand.NewPCG(seed, 0xb407e))
	count := 300
	if testing.Short() {
		count = 100
	}
	var nUnsolvable, nWait int
	s := NewSolver()
	for it := 0; it < count; it++ {
		in := solvRandomTiny(rng)
		want := solvBrute(in)
		sol, err := s.Solve(in, SolveOptions{})
		if !want.solvable {
			nUnsolvable++
			if !errors.Is(err, ErrUnsolvable) {
				t.Fatalf("instance %d %s: brute force says unsolvable, solver: sol=%+v err=%v\n%s", it, in.ID, sol, err, solvDump(in))
			}
			if aerr := s.Annotate(in, SolveOptions{}); !errors.Is(aerr, ErrUnsolvable) {
				t.Fatalf("instance %d: Annotate on unsolvable instance: %v", it, aerr)
			}
			continue
		}
		if err != nil {
			t.Fatalf("instance %d %s: solver error %v, brute force %+v\n%s", it, in.ID, err, want, solvDump(in))
		}
		solvCheckPlan(t, in, sol.Plan, false)
		if sol.SOC != want.soc {
			t.Fatalf("instance %d %s: SOC %d, brute force %d\n%s", it, in.ID, sol.SOC, want.soc, solvDump(in))
		}
		msol, err := s.Solve(in, SolveOptions{Objective: MakespanObjective})
		if err != nil {
			t.Fatalf("instance %d: makespan solve: %v", it, err)
		}
		solvCheckPlan(t, in, msol.Plan, false)
		if msol.Makespan != want.mk {
			t.Fatalf("instance %d %s: makespan %d, brute force %d\n%s", it, in.ID, msol.Makespan, want.mk, solvDump(in))
		}
		if lex, _ := solvBruteCost(in, false, 1000); msol.Makespan*1000+msol.SOC != lex {
			t.Fatalf("instance %d %s: makespan plan %d/%d is not the least SOC among makespan-optimal plans (%d)\n%s",
				it, in.ID, msol.Makespan, msol.SOC, lex, solvDump(in))
		}
		got := in.Clone()
		if err := s.Annotate(got, SolveOptions{}); err != nil {
			t.Fatalf("instance %d: Annotate: %v", it, err)
		}
		if got.SOC != want.soc || got.Makespan != want.mk || got.NeedsWait != want.needsWait {
			t.Fatalf("instance %d %s: Annotate soc=%d mk=%d wait=%v, brute force %+v\n%s",
				it, in.ID, got.SOC, got.Makespan, got.NeedsWait, want, solvDump(in))
		}
		if want.needsWait {
			nWait++
		}
		// The no-wait solver agrees with the no-wait reference.
		nw, okNW := want.nwSOC, want.nwOK
		nsol, err := s.Solve(in, SolveOptions{NoWaitBeforeArrival: true, MaxNodes: 20000})
		switch {
		case okNW && err == nil:
			solvCheckPlan(t, in, nsol.Plan, true)
			if nsol.SOC != nw {
				t.Fatalf("instance %d %s: no-wait SOC %d, brute force %d\n%s", it, in.ID, nsol.SOC, nw, solvDump(in))
			}
		case okNW:
			t.Fatalf("instance %d %s: no-wait solve failed (%v), brute force %d\n%s", it, in.ID, err, nw, solvDump(in))
		case err == nil:
			t.Fatalf("instance %d %s: no-wait solve found SOC %d, brute force: none\n%s", it, in.ID, nsol.SOC, solvDump(in))
		}
	}
	t.Logf("%d instances: %d unsolvable, %d need a wait", count, nUnsolvable, nWait)
	if nUnsolvable == 0 || nWait == 0 {
		t.Errorf("the random instances should include unsolvable ones and ones that need a wait")
	}
}

// TestSolverCBSAloneMatchesBruteForce turns off the joint-state fallback
// and checks that plain CBS is optimal wherever it finishes within a large
// budget, and that it rarely fails to.
func TestSolverCBSAloneMatchesBruteForce(t *testing.T) {
	seed := solvTestSeed(t, 2)
	rng := rand.New(rand.NewPCG(seed, 0xcb5))
	count := 200
	if testing.Short() {
		count = 80
	}
	s := NewSolver()
	s.noJoint = true
	var solved, budget int
	for it := 0; it < count; it++ {
		in := solvRandomTiny(rng)
		want := solvBrute(in)
		if !want.solvable {
			continue
		}
		for _, obj := range []Objective{SumOfCosts, MakespanObjective} {
			sol, err := s.Solve(in, SolveOptions{Objective: obj, MaxNodes: 5000})
			if errors.Is(err, ErrBudget) {
				budget++
				continue
			}
			if err != nil {
				t.Fatalf("instance %d %s: %v\n%s", it, in.ID, err, solvDump(in))
			}
			solved++
			solvCheckPlan(t, in, sol.Plan, false)
			if obj == SumOfCosts && sol.SOC != want.soc || obj == MakespanObjective && sol.Makespan != want.mk {
				t.Fatalf("instance %d %s (%v): soc %d mk %d, brute force %+v\n%s", it, in.ID, obj, sol.SOC, sol.Makespan, want, solvDump(in))
			}
		}
	}
	t.Logf("CBS alone: %d solved, %d out of budget", solved, budget)
	if budget*20 > solved {
		t.Errorf("CBS alone ran out of budget on %d of %d searches", budget, solved+budget)
	}
}

// TestSolverJointSearchMatchesBruteForce checks the exact joint-state
// search that the solver falls back on, in all its modes.
func TestSolverJointSearchMatchesBruteForce(t *testing.T) {
	seed := solvTestSeed(t, 3)
	rng := rand.New(rand.NewPCG(seed, 0x101))
	count := 200
	if testing.Short() {
		count = 80
	}
	s := NewSolver()
	for it := 0; it < count; it++ {
		in := solvRandomTiny(rng)
		want := solvBrute(in)
		if err := s.setup(in); err != nil {
			if want.solvable {
				t.Fatalf("instance %d: setup: %v", it, err)
			}
			continue
		}
		nw, okNW := want.nwSOC, want.nwOK
		for _, m := range []struct {
			obj    Objective
			noWait bool
		}{{SumOfCosts, false}, {MakespanObjective, false}, {SumOfCosts, true}} {
			s.search = searchSpec{objective: m.obj, noWait: m.noWait, maxSOC: solvInf, maxMakespan: solvInf, maxNodes: DefaultMaxNodes, maxExpansions: DefaultMaxExpansions}
			found, done, err := s.jointSolve()
			if err != nil || !done {
				t.Fatalf("instance %d: joint search: done=%v err=%v", it, done, err)
			}
			wantFound := want.solvable && (!m.noWait || okNW)
			if found != wantFound {
				t.Fatalf("instance %d %s (%+v): joint search found=%v, brute force %+v nw=%d/%v\n%s", it, in.ID, m, found, want, nw, okNW, solvDump(in))
			}
			if !found {
				continue
			}
			sol := s.solution(in)
			solvCheckPlan(t, in, sol.Plan, m.noWait)
			switch {
			case m.noWait && sol.SOC != nw,
				!m.noWait && m.obj == SumOfCosts && sol.SOC != want.soc,
				m.obj == MakespanObjective && sol.Makespan != want.mk:
				t.Fatalf("instance %d %s (%+v): soc %d mk %d, brute force %+v nw=%d\n%s", it, in.ID, m, sol.SOC, sol.Makespan, want, nw, solvDump(in))
			}
		}
	}
}

// solvJointAnswer annotates in with the exact joint-state search alone.
func solvJointAnswer(t *testing.T, s *Solver, in *Instance) (solvBruteAnswer, bool) {
	t.Helper()
	if err := s.setup(in); err != nil {
		return solvBruteAnswer{}, true
	}
	run := func(sp searchSpec) (bool, bool) {
		sp.maxNodes, sp.maxExpansions = DefaultMaxNodes, DefaultMaxExpansions
		s.search = sp
		found, done, err := s.jointSolve()
		if err != nil {
			t.Fatalf("joint search: %v", err)
		}
		return found, done
	}
	found, done := run(searchSpec{maxSOC: solvInf, maxMakespan: solvInf})
	if !done {
		return solvBruteAnswer{}, false
	}
	if !found {
		return solvBruteAnswer{}, true
	}
	var a solvBruteAnswer
	a.solvable = true
	a.soc, _ = s.solCosts()
	if found, done = run(searchSpec{objective: MakespanObjective, maxSOC: solvInf, maxMakespan: solvInf}); !found || !done {
		return a, false
	}
	_, a.mk = s.solCosts()
	found, done = run(searchSpec{noWait: true, maxSOC: int32(a.soc), maxMakespan: solvInf})
	if !done {
		return a, false
	}
	a.needsWait = !found
	return a, true
}

// TestSolverCBSMatchesJointSearch compares CBS alone with the exact
// joint-state search on instances too large for the brute force (4x4 and
// 5x5, 3 and 4 agents): optimal SOC, optimal makespan and NeedsWait.
func TestSolverCBSMatchesJointSearch(t *testing.T) {
	seed := solvTestSeed(t, 4)
	rng := rand.New(rand.NewPCG(seed, 0x5e7))
	count := 150
	if testing.Short() {
		count = 40
	}
	cbs := NewSolver()
	cbs.noJoint = true
	ref := NewSolver()
	var g genScratch
	var compared, budget, waits int
	for it := 0; it < count; it++ {
		n := 4 + rng.IntN(2)
		k := 3 + rng.IntN(2)
		nh := genIntN(rng, n*n*2/5)
		in := &Instance{Width: n, Height: n, Holes: make([]bool, n*n), Agents: make([]Agent, k)}
		for !g.place(rng, in, nh) {
		}
		want, ok := solvJointAnswer(t, ref, in)
		if !ok {
			continue
		}
		got := in.Clone()
		err := cbs.Annotate(got, SolveOptions{MaxNodes: 5000})
		switch {
		case errors.Is(err, ErrBudget):
			budget++
			continue
		case !want.solvable:
			if !errors.Is(err, ErrUnsolvable) {
				t.Fatalf("instance %d %s: joint search says unsolvable, CBS: %v\n%s", it, in.ID, err, solvDump(in))
			}
			continue
		case err != nil:
			t.Fatalf("instance %d %s: CBS: %v, joint search %+v\n%s", it, in.ID, err, want, solvDump(in))
		}
		compared++
		if want.needsWait {
			waits++
		}
		if got.SOC != want.soc || got.Makespan != want.mk || got.NeedsWait != want.needsWait {
			t.Fatalf("instance %d %s: CBS soc=%d mk=%d wait=%v, joint search %+v\n%s", it, in.ID, got.SOC, got.Makespan, got.NeedsWait, want, solvDump(in))
		}
	}
	t.Logf("compared %d instances (%d need a wait), CBS out of budget on %d", compared, waits, budget)
	if compared < count/2 || budget*10 > compared {
		t.Errorf("too few comparisons: %d compared, %d out of budget", compared, budget)
	}
}
