package env

import "fmt"

// Solver budgets used when SolveOptions leaves them at zero.
const (
	// DefaultMaxNodes is the default budget of constraint-tree nodes per search.
	DefaultMaxNodes = 100_000
	// DefaultMaxExpansions is the default budget of low-level (space-time A*)
	// expansions per search.
	DefaultMaxExpansions = 50_000_000
)

// SolveOptions configures Solve. The zero value asks for a sum-of-costs
// optimal plan under the default budgets.
type SolveOptions struct {
	// Objective is SumOfCosts (default) or MakespanObjective. With
	// MakespanObjective the plan has the smallest makespan and, among the
	// plans with that makespan, the smallest sum of costs.
	Objective Objective
	// MaxNodes is the budget of constraint-tree nodes generated per search;
	// 0 means DefaultMaxNodes.
	MaxNodes int
	// MaxExpansions is the budget of low-level expansions per search; 0
	// means DefaultMaxExpansions.
	MaxExpansions int
	// NoWaitBeforeArrival forbids every agent to wait before its final
	// arrival. Moving back and forth is allowed, and staying on the goal
	// after the final arrival is not a wait.
	NoWaitBeforeArrival bool
}

// Solution is an optimal plan with its costs and the work it took.
type Solution struct {
	// Plan has one path per agent; path i ends at agent i's final arrival
	// (len = cost+1), and the agent stays on its goal afterwards.
	Plan Plan
	// SOC and Makespan are the plan's sum of costs and makespan.
	SOC, Makespan int
	// Nodes is the number of constraint-tree nodes generated and
	// Expansions the number of low-level expansions, over all searches
	// that the call ran.
	Nodes, Expansions int
}

// BudgetError reports that a search ran out of its node or expansion
// budget before it could find a solution or prove that none exists. It
// wraps ErrBudget.
type BudgetError struct {
	Nodes, Expansions int
}

// Error describes the budget that ran out.
func (e *BudgetError) Error() string {
	return fmt.Sprintf("env: solver budget exceeded after %d nodes and %d expansions", e.Nodes, e.Expansions)
}

// Unwrap returns ErrBudget.
func (e *BudgetError) Unwrap() error { return ErrBudget }

// UnsolvableError reports a proof that an instance has no solution. Agent
// is the agent that cannot reach its goal, or -1 when the agents block
// each other for good. It wraps ErrUnsolvable.
type UnsolvableError struct {
	Agent  int
	Reason string
}

// Error says which agent cannot reach its goal, or why no plan exists.
func (e *UnsolvableError) Error() string {
	if e.Agent >= 0 {
		return fmt.Sprintf("env: instance has no solution: agent %d: %s", e.Agent, e.Reason)
	}
	return "env: instance has no solution: " + e.Reason
}

// Unwrap returns ErrUnsolvable.
func (e *UnsolvableError) Unwrap() error { return ErrUnsolvable }

// Solve returns an optimal plan for in under opt. It fails with an error
// wrapping ErrUnsolvable (an *UnsolvableError) when it proves that no plan
// exists, with a *BudgetError when it runs out of budget first, and with the
// validation error when in is malformed. It allocates a fresh Solver; use a
// Solver to reuse scratch memory across calls.
func Solve(in *Instance, opt SolveOptions) (Solution, error) {
	return NewSolver().Solve(in, opt)
}

// Annotate fills in.SOC (the optimal sum of costs), in.Makespan (the
// optimal makespan) and in.NeedsWait: true when no plan at the optimal sum
// of costs avoids every agent waiting before its final arrival (moving back
// and forth is not waiting, nor is staying on the goal after the final
// arrival). It changes nothing when it fails. Objective and
// NoWaitBeforeArrival in opt are ignored; the budgets apply to each of the
// (up to three) searches: the SOC-optimal one, a wait-free one bounded by
// the optimal SOC (only if the SOC-optimal plan waits), and a makespan one
// bounded by the SOC-optimal plan's makespan (only if that exceeds the
// largest single-agent distance).
func Annotate(in *Instance, opt SolveOptions) error {
	return NewSolver().Annotate(in, opt)
}

// Solver is an optimal multi-agent path finder with scratch memory that is
// reused across calls (a warmed Solver's Annotate allocates nothing, Solve
// only the returned plan). The zero value is ready to use. A Solver is not
// safe for concurrent use; use one per goroutine.
//
// Algorithm: Conflict-Based Search (Sharon et al. 2015) over vertex, edge
// (swap) and target conflicts, with the improvements of ICBS and CBSH:
// conflict prioritisation by MDD cardinality, bypassing, the
// cardinal-conflict-graph heuristic (minimum vertex cover) with pathmax,
// and the symmetry reasoning of Li et al. (2021): corridor reasoning (range
// constraints, see corridor) and target reasoning. A target conflict —
// agent i is on its goal for good by time t and agent j is on that goal at
// t — splits into "i's cost exceeds t" and "i's cost is at most t and no
// other agent is on i's goal from t on", a partition of the solutions. The
// low level is space-time A* with the true distance to the goal (BFS over
// free cells) as heuristic and a conflict-avoidance table for tie-breaking.
//
// Joint-state search complements CBS on small state spaces: a
// breadth-first search over joint configurations proves unsolvability
// before CBS starts when there are at most 2,048 configurations (and after
// 200 CT nodes up to 60,000), and when CBS has generated 200 nodes on an
// instance with at most 4M (configuration, finished-agents) states, an
// exact A* over those states takes over (it also proves unsolvability by
// exhausting them). Without such a proof the solver reports a BudgetError,
// never ErrUnsolvable, unless an agent cannot reach its goal at all.
//
// Objectives: SumOfCosts finds a plan of least sum of costs;
// MakespanObjective a plan of least makespan and, among those, least sum
// of costs (CBS ordered by (makespan, SOC lower bound)). NeedsWait (see
// Annotate) is decided by a second search restricted to wait-free plans
// whose sum of costs is at most the optimum: it is true exactly when that
// search proves there is none.
type Solver struct {
	problem
	search searchSpec // the running search's objective, bounds and budgets

	// Scratch space, one struct per concern (each in its own file).
	ctScratch       // solve_cbs.go: the constraint tree
	lowLevelScratch // solve_lowlevel.go: space-time A* and MDDs
	targetScratch   // solve_target.go: cells blocked by target constraints
	corridorScratch // solve_corridor.go: corridor reasoning
	jointScratch    // solve_joint.go: joint-configuration searches

	// generated is the number of constraint-tree nodes generated and
	// expansions the number of low-level expansions (and joint states
	// examined) in the current search; Solution reports them.
	generated, expansions int

	// solPaths holds the plan of the last successful search, one path of
	// cells per agent, copied out of the arena.
	solPaths [][]int32

	// noJoint turns off the joint-state fallback, noCorridor the corridor
	// reasoning and noTarget the target reasoning (tests check CBS without
	// them).
	noJoint, noCorridor, noTarget bool
}

// problem is the instance loaded by setup, in the solver's representation:
// cells are row-major indices, agents are numbered 0..numAgents-1.
type problem struct {
	numCells, width int
	numAgents       int
	// neighbours holds 4 entries per cell, in Move order Up, Down, Left,
	// Right: the free neighbour's cell, or -1 if none.
	neighbours  []int32
	start, goal []int32 // per agent
	// goalDist holds numAgents x numCells distances: goalDist[a*numCells+c]
	// is the distance from cell c to agent a's goal over free cells, -1 if
	// unreachable. It is the low level's heuristic.
	goalDist []int32
	holes    []bool
	// jointStatus records what the joint-configuration check found
	// (solvJointUnknown, solvJointReachable or solvJointTooBig) and
	// jointConfigs the number of joint configurations, capped at solvInf.
	jointStatus  uint8
	jointConfigs int
	// socLB and makespanLB are the sum and the largest of the agents'
	// start-to-goal distances: lower bounds on SOC and makespan.
	socLB, makespanLB int32
}

// NewSolver returns a Solver with empty scratch.
func NewSolver() *Solver { return &Solver{} }

// solvInf stands for an unbounded cost or time.
const solvInf = int32(1 << 28)

// Solve returns an optimal plan for in; see the package-level Solve.
func (s *Solver) Solve(in *Instance, opt SolveOptions) (Solution, error) {
	if err := s.setup(in); err != nil {
		return Solution{}, err
	}
	sp := searchSpec{objective: opt.Objective, noWait: opt.NoWaitBeforeArrival, maxSOC: solvInf, maxMakespan: solvInf}
	sp.maxNodes, sp.maxExpansions = solvBudgets(opt)
	if s.allAtGoal() {
		return s.solution(in), nil
	}
	found, err := s.run(sp)
	if err != nil {
		return Solution{}, err
	}
	if !found {
		return Solution{}, &UnsolvableError{Agent: -1, Reason: "the constraint tree is exhausted"}
	}
	return s.solution(in), nil
}

// Annotate fills in.SOC, in.Makespan and in.NeedsWait; see the
// package-level Annotate.
func (s *Solver) Annotate(in *Instance, opt SolveOptions) error {
	r, err := s.annotate(in, opt, nil)
	if err != nil {
		return err
	}
	in.SOC, in.Makespan, in.NeedsWait = r.soc, r.mk, r.needsWait
	return nil
}

// solvAnnotation is the result of annotate, with the work it took.
type solvAnnotation struct {
	soc, mk   int
	needsWait bool
	nodes     int
	exp       int
}

// annotate computes the three annotations. When wantWait is not nil it
// stops after NeedsWait is known and differs from *wantWait, returning
// errSolvMismatch (the generator's early rejection).
func (s *Solver) annotate(in *Instance, opt SolveOptions, wantWait *bool) (solvAnnotation, error) {
	var r solvAnnotation
	if err := s.setup(in); err != nil {
		return r, err
	}
	if s.allAtGoal() {
		if wantWait != nil && *wantWait {
			return r, errSolvMismatch
		}
		return r, nil
	}
	maxN, maxE := solvBudgets(opt)
	sp := searchSpec{objective: SumOfCosts, maxSOC: solvInf, maxMakespan: solvInf, maxNodes: maxN, maxExpansions: maxE}
	found, err := s.run(sp)
	r.nodes, r.exp = s.generated, s.expansions
	if err != nil {
		return r, err
	}
	if !found {
		return r, &UnsolvableError{Agent: -1, Reason: "the constraint tree is exhausted"}
	}
	soc, mkSOC := s.solCosts()
	r.soc = soc
	if s.solHasWait() {
		// Is there a plan without waits at the same sum of costs?
		nw := searchSpec{objective: SumOfCosts, noWait: true, maxSOC: int32(soc), maxMakespan: solvInf, maxNodes: maxN, maxExpansions: maxE}
		found, err := s.run(nw)
		r.nodes, r.exp = r.nodes+s.generated, r.exp+s.expansions
		if err != nil {
			return r, err
		}
		r.needsWait = !found
	}
	if wantWait != nil && *wantWait != r.needsWait {
		return r, errSolvMismatch
	}
	r.mk = mkSOC
	if int32(mkSOC) > s.makespanLB {
		// Look for a plan with a smaller makespan than the SOC-optimal one.
		ms := searchSpec{objective: MakespanObjective, maxSOC: solvInf, maxMakespan: int32(mkSOC) - 1, maxNodes: maxN, maxExpansions: maxE}
		found, err := s.run(ms)
		r.nodes, r.exp = r.nodes+s.generated, r.exp+s.expansions
		if err != nil {
			return r, err
		}
		if found {
			_, r.mk = s.solCosts()
		}
	}
	return r, nil
}

var errSolvMismatch = fmt.Errorf("env: needs_wait differs from the target")

// solvBudgets returns the node and expansion budgets of opt, with the
// defaults filled in.
func solvBudgets(opt SolveOptions) (int, int) {
	n, e := opt.MaxNodes, opt.MaxExpansions
	if n <= 0 {
		n = DefaultMaxNodes
	}
	if e <= 0 {
		e = DefaultMaxExpansions
	}
	return n, e
}

// allAtGoal reports whether every agent starts on its goal; if so it
// stores the trivial plan in s.solPaths.
func (s *Solver) allAtGoal() bool {
	for a := 0; a < s.numAgents; a++ {
		if s.start[a] != s.goal[a] {
			return false
		}
	}
	if len(s.solPaths) < s.numAgents {
		s.solPaths = make([][]int32, s.numAgents)
	}
	s.solPaths = s.solPaths[:s.numAgents]
	for a := 0; a < s.numAgents; a++ {
		s.solPaths[a] = append(s.solPaths[a][:0], s.start[a])
	}
	s.generated, s.expansions = 0, 0
	return true
}

// solution converts the plan in s.solPaths to a Solution for in.
func (s *Solver) solution(in *Instance) Solution {
	sol := Solution{Nodes: s.generated, Expansions: s.expansions}
	total := 0
	for _, p := range s.solPaths[:s.numAgents] {
		total += len(p)
	}
	all := make([]Pos, total)
	sol.Plan.Paths = make([][]Pos, s.numAgents)
	for a, p := range s.solPaths[:s.numAgents] {
		path := all[:len(p):len(p)]
		all = all[len(p):]
		for t, c := range p {
			path[t] = in.PosOf(int(c))
		}
		sol.Plan.Paths[a] = path
	}
	sol.SOC, sol.Makespan = s.solCosts()
	return sol
}

// solvQuickValid is Instance.Validate without building error messages: it
// reports whether in passes every check of Validate.
func solvQuickValid(in *Instance) bool {
	w := in.Width
	if w != in.Height || w < MinSize || w > MaxSize || len(in.Holes) != w*w {
		return false
	}
	k := len(in.Agents)
	if k < 1 || k > min(w, MaxAgents) {
		return false
	}
	for i, a := range in.Agents {
		if !in.InBounds(a.Start) || !in.InBounds(a.Goal) || in.Hole(a.Start) || in.Hole(a.Goal) {
			return false
		}
		for j := 0; j < i; j++ {
			if in.Agents[j].Start == a.Start || in.Agents[j].Goal == a.Goal {
				return false
			}
		}
	}
	return true
}

// solCosts returns the sum of costs and the makespan of s.solPaths.
func (s *Solver) solCosts() (soc, mk int) {
	for _, p := range s.solPaths[:s.numAgents] {
		c := len(p) - 1
		soc += c
		mk = max(mk, c)
	}
	return soc, mk
}

// solHasWait reports whether some agent waits before its final arrival in
// the current solution.
func (s *Solver) solHasWait() bool {
	for _, p := range s.solPaths[:s.numAgents] {
		for t := 1; t < len(p); t++ {
			if p[t] == p[t-1] {
				return true
			}
		}
	}
	return false
}

// solvGrow returns b resized to n, reallocating (without copying) when
// its capacity is too small; the contents are unspecified.
func solvGrow[T any](b []T, n int) []T {
	if cap(b) < n {
		return make([]T, n)
	}
	return b[:n]
}

// setup loads the instance: adjacency, per-agent goal distances.
func (s *Solver) setup(in *Instance) error {
	if !solvQuickValid(in) {
		err := in.Validate()
		if err == nil {
			err = &FieldError{Field: "instance", Value: in.ID, Reason: "malformed"}
		}
		return fmt.Errorf("solve: %w", err)
	}
	w, h := in.Width, in.Height
	n := w * h
	s.numCells, s.width, s.numAgents = n, w, len(in.Agents)
	s.holes = in.Holes
	s.neighbours = solvGrow(s.neighbours, 4*n)
	for cell := 0; cell < n; cell++ {
		r, c := cell/w, cell%w
		nb := [4]int{cell - w, cell + w, cell - 1, cell + 1}
		ok := [4]bool{r > 0, r < h-1, c > 0, c < w-1}
		for d := 0; d < 4; d++ {
			if ok[d] && !in.Holes[cell] && !in.Holes[nb[d]] {
				s.neighbours[cell*4+d] = int32(nb[d])
			} else {
				s.neighbours[cell*4+d] = -1
			}
		}
	}
	s.start = solvGrow(s.start, s.numAgents)
	s.goal = solvGrow(s.goal, s.numAgents)
	s.avoid.goalArrival = solvGrow(s.avoid.goalArrival, n)
	s.blockedFrom = solvGrow(s.blockedFrom, n)
	for i := range s.avoid.goalArrival {
		s.avoid.goalArrival[i] = -1
		s.blockedFrom[i] = -1
	}
	s.blockedCells = s.blockedCells[:0]
	for a, ag := range in.Agents {
		s.start[a] = int32(in.Index(ag.Start))
		s.goal[a] = int32(in.Index(ag.Goal))
	}
	s.goalDist = solvGrow(s.goalDist, s.numAgents*n)
	s.layerCells = solvGrow(s.layerCells, n)
	s.socLB, s.makespanLB = 0, 0
	for a := 0; a < s.numAgents; a++ {
		d := s.goalDist[a*n : (a+1)*n]
		s.bfs(s.goal[a], d)
		if d[s.start[a]] < 0 {
			return &UnsolvableError{Agent: a, Reason: "its goal cannot be reached from its start"}
		}
		s.socLB += d[s.start[a]]
		s.makespanLB = max(s.makespanLB, d[s.start[a]])
	}
	s.jointStatus = solvJointUnknown
	s.jointConfigs = s.jointCount()
	return nil
}

// bfs fills d with distances from src over free cells (-1 unreachable).
func (s *Solver) bfs(src int32, d []int32) {
	for i := range d {
		d[i] = -1
	}
	q := s.layerCells[:0]
	d[src] = 0
	q = append(q, src)
	for h := 0; h < len(q); h++ {
		u := q[h]
		for m := 0; m < 4; m++ {
			v := s.neighbours[u*4+int32(m)]
			if v >= 0 && d[v] < 0 {
				d[v] = d[u] + 1
				q = append(q, v)
			}
		}
	}
	s.layerCells = q[:0]
}
