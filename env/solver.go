package env

import (
	"fmt"
	"math/bits"
)

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
	// instance
	n, w   int
	k      int
	adj    []int32 // 4 per cell, in Move order Up, Down, Left, Right; -1 if none
	start  []int32
	goal   []int32
	dist   []int32 // k*n distances to goal, -1 unreachable
	holes  []bool
	joint  uint8 // solvJoint*
	jointN int   // number of joint configurations (capped)
	sumLB  int32
	maxLB  int32
	search solvSpec

	// counters for the current call
	gen, exp int

	// constraint tree
	nodes []ctNode
	refs  []pathRef // k per node
	cells []int32   // arena of paths and MDD summaries
	cons  []ctCons
	open  []int32
	confs []ctConflict

	// low-level scratch
	vtab, etab        []uint32
	vstamp            uint32
	cMaxT, cLB, cLast int32
	seen              []uint32
	seenIdx           []int32
	seenStamp         uint32
	pool              []llNode
	heap              []llItem
	cat               []uint16
	catH              int32
	goalT             []int32 // per cell: cost of the agent whose goal it is (others only), -1
	mark              []uint32
	markStamp         uint32
	layer             []int32
	layerOff          []int32

	// joint-configuration check scratch
	jSeen  map[uint64]struct{}
	jQueue []uint64
	jFree  []int32 // cell -> free index, -1 hole
	jCells []int32 // free index -> cell
	jPos   []int32
	jNew   []int32
	jNew2  []int32
	jOld   []int32 // cell -> agent in the current configuration, -1
	jAt    []int32 // cell -> agent assigned there in the next configuration, -1
	jNext  []uint64
	jRec   map[uint64]jRec
	jHeap  []jItem

	// solution paths copied out of the arena
	solPaths [][]int32

	// noJoint turns off the joint-state fallback and noCorridor the
	// corridor reasoning (tests check CBS without them).
	noJoint, noCorridor, noTarget bool

	// target reasoning scratch: blocked cells for the agent being planned
	cUB       int32
	cBlockT   int32
	blockFrom []int32 // per cell: first blocked time, -1
	blockList []int32
	hb        []int32 // distances to the goal avoiding blocked cells
	hEnd      []int32 // the distances the low level finishes paths along

	// corridor scratch
	corr     []int32
	inCorr   []uint32
	corrMark uint32
	sdist    []int32
}

// NewSolver returns a Solver with empty scratch.
func NewSolver() *Solver { return &Solver{} }

const (
	solvInf = int32(1 << 28)
	// Joint-configuration solvability check: run it before CBS when the
	// number of joint configurations is at most solvJointEager, and after
	// solvJointLateNodes CT nodes when it is at most solvJointLate.
	solvJointEager     = 2048
	solvJointLate      = 60_000
	solvJointLateNodes = 200
)

const (
	solvJointUnknown uint8 = iota
	solvJointReachable
	solvJointTooBig
)

type solvSpec struct {
	obj    Objective
	noWait bool
	ubSOC  int32 // prune nodes whose SOC lower bound exceeds it; solvInf = none
	ubMk   int32 // prune nodes whose makespan exceeds it; solvInf = none
	maxN   int
	maxE   int
}

func (sp *solvSpec) bounded() bool { return sp.ubSOC < solvInf || sp.ubMk < solvInf }

type ctNode struct {
	parent, con, refs int32
	g, f, mk, h       int32
	nconf             int32
	evaluated         bool
	best              ctConflict
}

type pathRef struct {
	off, n, mdd int32 // path cells[off:off+n]; mdd summary at cells[mdd:mdd+n] or -1
}

const (
	consVertex uint8 = iota
	consEdge
	consLength
	consRange
	consBlock
)

type ctCons struct {
	agent int32
	kind  uint8
	a, b  int32 // vertex, range: cell a; edge: a -> b
	t     int32 // vertex/edge: time; length: the agent's cost must exceed t; range: the agent is not on a during [0,t]; block: the agent's cost is at most t and no other agent is on a (its goal) from t on
}

const (
	confVertex uint8 = iota
	confEdge
	confTarget
)

type ctConflict struct {
	kind  uint8
	class int8 // 2 cardinal, 1 semi-cardinal, 0 non-cardinal
	i, j  int32
	a, b  int32
	t     int32
}

type llNode struct {
	cell, t, parent, conf, f int32
	closed, term             bool
}

type llItem struct {
	key uint64
	idx int32
}

// Solve returns an optimal plan for in; see the package-level Solve.
func (s *Solver) Solve(in *Instance, opt SolveOptions) (Solution, error) {
	if err := s.setup(in); err != nil {
		return Solution{}, err
	}
	sp := solvSpec{obj: opt.Objective, noWait: opt.NoWaitBeforeArrival, ubSOC: solvInf, ubMk: solvInf}
	sp.maxN, sp.maxE = solvBudgets(opt)
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
	sp := solvSpec{obj: SumOfCosts, ubSOC: solvInf, ubMk: solvInf, maxN: maxN, maxE: maxE}
	found, err := s.run(sp)
	r.nodes, r.exp = s.gen, s.exp
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
		nw := solvSpec{obj: SumOfCosts, noWait: true, ubSOC: int32(soc), ubMk: solvInf, maxN: maxN, maxE: maxE}
		found, err := s.run(nw)
		r.nodes, r.exp = r.nodes+s.gen, r.exp+s.exp
		if err != nil {
			return r, err
		}
		r.needsWait = !found
	}
	if wantWait != nil && *wantWait != r.needsWait {
		return r, errSolvMismatch
	}
	r.mk = mkSOC
	if int32(mkSOC) > s.maxLB {
		// Look for a plan with a smaller makespan than the SOC-optimal one.
		ms := solvSpec{obj: MakespanObjective, ubSOC: solvInf, ubMk: int32(mkSOC) - 1, maxN: maxN, maxE: maxE}
		found, err := s.run(ms)
		r.nodes, r.exp = r.nodes+s.gen, r.exp+s.exp
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

func (s *Solver) allAtGoal() bool {
	for a := 0; a < s.k; a++ {
		if s.start[a] != s.goal[a] {
			return false
		}
	}
	if len(s.solPaths) < s.k {
		s.solPaths = make([][]int32, s.k)
	}
	s.solPaths = s.solPaths[:s.k]
	for a := 0; a < s.k; a++ {
		s.solPaths[a] = append(s.solPaths[a][:0], s.start[a])
	}
	s.gen, s.exp = 0, 0
	return true
}

func (s *Solver) solution(in *Instance) Solution {
	sol := Solution{Nodes: s.gen, Expansions: s.exp}
	total := 0
	for _, p := range s.solPaths[:s.k] {
		total += len(p)
	}
	all := make([]Pos, total)
	sol.Plan.Paths = make([][]Pos, s.k)
	for a, p := range s.solPaths[:s.k] {
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

func (s *Solver) solCosts() (soc, mk int) {
	for _, p := range s.solPaths[:s.k] {
		c := len(p) - 1
		soc += c
		mk = max(mk, c)
	}
	return soc, mk
}

// solHasWait reports whether some agent waits before its final arrival in
// the current solution.
func (s *Solver) solHasWait() bool {
	for _, p := range s.solPaths[:s.k] {
		for t := 1; t < len(p); t++ {
			if p[t] == p[t-1] {
				return true
			}
		}
	}
	return false
}

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
	s.n, s.w, s.k = n, w, len(in.Agents)
	s.holes = in.Holes
	s.adj = solvGrow(s.adj, 4*n)
	for cell := 0; cell < n; cell++ {
		r, c := cell/w, cell%w
		nb := [4]int{cell - w, cell + w, cell - 1, cell + 1}
		ok := [4]bool{r > 0, r < h-1, c > 0, c < w-1}
		for d := 0; d < 4; d++ {
			if ok[d] && !in.Holes[cell] && !in.Holes[nb[d]] {
				s.adj[cell*4+d] = int32(nb[d])
			} else {
				s.adj[cell*4+d] = -1
			}
		}
	}
	s.start = solvGrow(s.start, s.k)
	s.goal = solvGrow(s.goal, s.k)
	s.goalT = solvGrow(s.goalT, n)
	s.blockFrom = solvGrow(s.blockFrom, n)
	for i := range s.goalT {
		s.goalT[i] = -1
		s.blockFrom[i] = -1
	}
	s.blockList = s.blockList[:0]
	for a, ag := range in.Agents {
		s.start[a] = int32(in.Index(ag.Start))
		s.goal[a] = int32(in.Index(ag.Goal))
	}
	s.dist = solvGrow(s.dist, s.k*n)
	s.layer = solvGrow(s.layer, n)
	s.sumLB, s.maxLB = 0, 0
	for a := 0; a < s.k; a++ {
		d := s.dist[a*n : (a+1)*n]
		s.bfs(s.goal[a], d)
		if d[s.start[a]] < 0 {
			return &UnsolvableError{Agent: a, Reason: "its goal cannot be reached from its start"}
		}
		s.sumLB += d[s.start[a]]
		s.maxLB = max(s.maxLB, d[s.start[a]])
	}
	s.joint = solvJointUnknown
	s.jointN = s.jointCount()
	return nil
}

// bfs fills d with distances from src over free cells (-1 unreachable).
func (s *Solver) bfs(src int32, d []int32) {
	for i := range d {
		d[i] = -1
	}
	q := s.layer[:0]
	d[src] = 0
	q = append(q, src)
	for h := 0; h < len(q); h++ {
		u := q[h]
		for m := 0; m < 4; m++ {
			v := s.adj[u*4+int32(m)]
			if v >= 0 && d[v] < 0 {
				d[v] = d[u] + 1
				q = append(q, v)
			}
		}
	}
	s.layer = q[:0]
}

// run performs one CBS search; on success the plan is in s.solPaths. It
// returns found=false when the constraint tree is exhausted (within the
// bounds of sp, if any).
func (s *Solver) run(sp solvSpec) (bool, error) {
	s.search = sp
	s.gen, s.exp = 0, 0
	s.nodes = s.nodes[:0]
	s.refs = s.refs[:0]
	s.cells = s.cells[:0]
	s.cons = s.cons[:0]
	s.open = s.open[:0]
	if !sp.bounded() && s.joint == solvJointUnknown && s.jointN <= solvJointEager {
		if err := s.jointCheck(); err != nil {
			return false, err
		}
	}

	root := s.newNode(-1, -1)
	lb := s.sumLB
	for a := int32(0); a < int32(s.k); a++ {
		s.refs[s.nodes[root].refs+a] = pathRef{off: -1, n: 0, mdd: -1}
	}
	for a := int32(0); a < int32(s.k); a++ {
		ub := s.agentUB(a, lb-s.dist[int(a)*s.n+int(s.start[a])])
		off, ln, ok, err := s.lowLevel(a, root, ub)
		if err != nil {
			return false, err
		}
		if !ok {
			if sp.bounded() {
				return false, nil
			}
			return false, &UnsolvableError{Agent: int(a), Reason: "no path under the constraints"}
		}
		s.refs[s.nodes[root].refs+a] = pathRef{off: off, n: ln, mdd: -1}
	}
	s.finishNode(root, -1)
	if s.pruned(root) {
		return false, nil
	}
	s.push(root)

	jointTried := false
	for len(s.open) > 0 {
		x := s.pop()
		nd := &s.nodes[x]
		if nd.nconf == 0 {
			s.extract(x)
			return true, nil
		}
		if !nd.evaluated {
			if err := s.evaluate(x); err != nil {
				return false, err
			}
			nd = &s.nodes[x]
			if f := nd.g + nd.h; f > nd.f {
				nd.f = f
				if !s.pruned(x) {
					s.push(x)
				}
				continue
			}
		}
		if !jointTried && !s.noJoint && s.gen >= solvJointLateNodes && s.jointSolvable() {
			// CBS is struggling on a small joint space: solve it exactly
			// over joint states instead.
			jointTried = true
			found, done, err := s.jointSolve()
			if err != nil || done {
				if err == nil && !found && !sp.bounded() {
					err = &UnsolvableError{Agent: -1, Reason: "the joint state space is exhausted"}
				}
				return found, err
			}
		}
		if !sp.bounded() && s.joint == solvJointUnknown && s.gen >= solvJointLateNodes && s.jointN <= solvJointLate {
			if err := s.jointCheck(); err != nil {
				return false, err
			}
		}
		if s.gen >= sp.maxN {
			return false, &BudgetError{Nodes: s.gen, Expansions: s.exp}
		}
		bypassed, err := s.expand(x)
		if err != nil {
			return false, err
		}
		if bypassed {
			s.push(x)
		}
	}
	return false, nil
}

// agentUB is the largest cost agent a may have, given that the other agents
// cost at least others in total.
func (s *Solver) agentUB(a, others int32) int32 {
	ub := solvInf
	if s.search.ubSOC < solvInf {
		ub = s.search.ubSOC - others
	}
	if s.search.ubMk < solvInf {
		ub = min(ub, s.search.ubMk)
	}
	return ub
}

func (s *Solver) pruned(x int32) bool {
	nd := &s.nodes[x]
	return nd.f > s.search.ubSOC || nd.mk > s.search.ubMk
}

func (s *Solver) newNode(parent, con int32) int32 {
	x := int32(len(s.nodes))
	off := int32(len(s.refs))
	if parent >= 0 {
		p := s.nodes[parent].refs
		s.refs = append(s.refs, s.refs[p:p+int32(s.k)]...)
	} else {
		for a := 0; a < s.k; a++ {
			s.refs = append(s.refs, pathRef{off: -1, mdd: -1})
		}
	}
	s.nodes = append(s.nodes, ctNode{parent: parent, con: con, refs: off})
	s.gen++
	return x
}

// dropLast removes node x, which must be the last one created.
func (s *Solver) dropLast(x int32) {
	s.refs = s.refs[:s.nodes[x].refs]
	s.nodes = s.nodes[:x]
}

// finishNode computes the costs and conflict count of node x; parent is its
// parent (for pathmax) or -1.
func (s *Solver) finishNode(x, parent int32) {
	nd := &s.nodes[x]
	var g, mk int32
	for a := int32(0); a < int32(s.k); a++ {
		c := s.refs[nd.refs+a].n - 1
		g += c
		mk = max(mk, c)
	}
	nd.g, nd.mk, nd.f = g, mk, g
	if parent >= 0 {
		p := &s.nodes[parent]
		nd.mk = max(nd.mk, p.mk)
		if s.search.obj == SumOfCosts || nd.mk == p.mk {
			nd.f = max(nd.f, p.f)
		}
	}
	nd.nconf = s.conflicts(x, false)
	nd.evaluated = false
}

func (s *Solver) path(x int32, a int32) []int32 {
	r := s.refs[s.nodes[x].refs+a]
	return s.cells[r.off : r.off+r.n]
}

func (s *Solver) extract(x int32) {
	if len(s.solPaths) < s.k {
		s.solPaths = make([][]int32, s.k)
	}
	s.solPaths = s.solPaths[:s.k]
	for a := int32(0); a < int32(s.k); a++ {
		s.solPaths[a] = append(s.solPaths[a][:0], s.path(x, a)...)
	}
}

// ctLess orders the open list: by makespan first under MakespanObjective,
// then by the SOC lower bound, then by fewer conflicts, then by age.
func (s *Solver) ctLess(x, y int32) bool {
	a, b := &s.nodes[x], &s.nodes[y]
	if s.search.obj == MakespanObjective && a.mk != b.mk {
		return a.mk < b.mk
	}
	if a.f != b.f {
		return a.f < b.f
	}
	if a.nconf != b.nconf {
		return a.nconf < b.nconf
	}
	return x > y
}

func (s *Solver) push(x int32) {
	s.open = append(s.open, x)
	i := len(s.open) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s.ctLess(s.open[i], s.open[p]) {
			break
		}
		s.open[i], s.open[p] = s.open[p], s.open[i]
		i = p
	}
}

func (s *Solver) pop() int32 {
	h := s.open
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		c := l
		if r := l + 1; r < len(h) && s.ctLess(h[r], h[l]) {
			c = r
		}
		if !s.ctLess(h[c], h[i]) {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	s.open = h
	return top
}

// expand splits node x on its chosen conflict. It reports true when it
// bypassed the conflict instead (x then holds a better path and must be
// pushed again).
func (s *Solver) expand(x int32) (bool, error) {
	cf := s.nodes[x].best
	var cs [2]ctCons
	switch cf.kind {
	case confVertex:
		cs[0] = ctCons{agent: cf.i, kind: consVertex, a: cf.a, t: cf.t}
		cs[1] = ctCons{agent: cf.j, kind: consVertex, a: cf.a, t: cf.t}
	case confEdge:
		cs[0] = ctCons{agent: cf.i, kind: consEdge, a: cf.a, b: cf.b, t: cf.t}
		cs[1] = ctCons{agent: cf.j, kind: consEdge, a: cf.b, b: cf.a, t: cf.t}
	case confTarget:
		// Agent i is on its goal for good by t and agent j is there at t:
		// either i's cost exceeds t, or i finishes by t and then nobody
		// else may be on its goal from t on.
		cs[0] = ctCons{agent: cf.i, kind: consLength, t: cf.t}
		cs[1] = ctCons{agent: cf.i, kind: consBlock, a: cf.a, t: cf.t}
		if s.noTarget {
			cs[1] = ctCons{agent: cf.j, kind: consVertex, a: cf.a, t: cf.t}
		}
	}
	if cf.kind != confTarget && !s.noCorridor {
		if c0, c1, ok := s.corridor(x, &cf); ok {
			cs[0], cs[1] = c0, c1
		}
	}
	var kids [2]int32
	nk := 0
	nodesMark, consMark := int32(len(s.nodes)), len(s.cons)
	for side := 0; side < 2; side++ {
		c := cs[side]
		ci := int32(len(s.cons))
		s.cons = append(s.cons, c)
		child := s.newNode(x, ci)
		ok, err := s.replan(x, child, &c)
		if err != nil {
			return false, err
		}
		if ok {
			s.finishNode(child, x)
			ok = !s.pruned(child)
		}
		if !ok {
			s.dropLast(child)
			s.cons = s.cons[:ci]
			continue
		}
		a := c.agent
		old := s.refs[s.nodes[x].refs+a]
		nw := s.refs[s.nodes[child].refs+a]
		if c.kind != consBlock && cf.class < 2 && nw.n == old.n && s.nodes[child].nconf < s.nodes[x].nconf {
			// Bypass: the new path is as cheap, satisfies x's constraints
			// too, and has fewer conflicts; adopt it instead of branching.
			nconf := s.nodes[child].nconf
			s.refs[s.nodes[x].refs+a] = pathRef{off: nw.off, n: nw.n, mdd: old.mdd}
			// Drop every child made so far (they are the last nodes).
			s.refs = s.refs[:s.nodes[nodesMark].refs]
			s.nodes = s.nodes[:nodesMark]
			s.cons = s.cons[:consMark]
			nd := &s.nodes[x]
			nd.nconf = nconf
			nd.evaluated = false
			return true, nil
		}
		kids[nk] = child
		nk++
	}
	for i := 0; i < nk; i++ {
		s.push(kids[i])
	}
	return false, nil
}

// replan finds new paths in child (a fresh copy of x plus constraint c)
// for the agents that c may invalidate: c's agent, or for a block every
// other agent on the blocked cell at or after its time. It reports false
// when one of them has no path within the bounds.
func (s *Solver) replan(x, child int32, c *ctCons) (bool, error) {
	one := func(a int32) (bool, error) {
		base := s.nodes[child].refs
		var others int32
		for j := int32(0); j < int32(s.k); j++ {
			if j != a {
				others += s.refs[base+j].n - 1
			}
		}
		off, ln, ok, err := s.lowLevel(a, child, s.agentUB(a, others))
		if err != nil || !ok {
			return false, err
		}
		s.refs[s.nodes[child].refs+a] = pathRef{off: off, n: ln, mdd: -1}
		return true, nil
	}
	if c.kind != consBlock {
		return one(c.agent)
	}
	for a := int32(0); a < int32(s.k); a++ {
		if a == c.agent {
			continue
		}
		p := s.path(x, a)
		for t := c.t; t < int32(len(p)); t++ {
			if p[t] == c.a {
				if ok, err := one(a); !ok || err != nil {
					return false, err
				}
				break
			}
		}
	}
	return true, nil
}

// buildCons loads agent a's constraints at node x into the stamp tables and
// sets cMaxT (latest vertex/edge constraint time), cLB (smallest allowed
// cost) and cLast (latest vertex constraint on the agent's goal).
func (s *Solver) buildCons(a, x int32) {
	maxT, lb, last, ub := int32(0), int32(0), int32(-1), solvInf
	goal := s.goal[a]
	for _, c := range s.blockList {
		s.blockFrom[c] = -1
	}
	s.blockList = s.blockList[:0]
	s.cBlockT = 0
	for y := x; y >= 0; y = s.nodes[y].parent {
		ci := s.nodes[y].con
		if ci < 0 {
			continue
		}
		c := &s.cons[ci]
		if c.kind == consBlock {
			if c.agent == a {
				ub = min(ub, c.t)
			} else if bf := s.blockFrom[c.a]; bf < 0 || c.t < bf {
				if bf < 0 {
					s.blockList = append(s.blockList, c.a)
				}
				s.blockFrom[c.a] = c.t
			}
			continue
		}
		if c.agent != a {
			continue
		}
		switch c.kind {
		case consLength:
			lb = max(lb, c.t+1)
		case consVertex, consRange:
			maxT = max(maxT, c.t)
			if c.a == goal {
				last = max(last, c.t)
			}
		default:
			maxT = max(maxT, c.t)
		}
	}
	for _, c := range s.blockList {
		s.cBlockT = max(s.cBlockT, s.blockFrom[c])
	}
	s.cUB = ub
	s.cMaxT, s.cLB, s.cLast = maxT, lb, last
	need := int(maxT+1) * s.n
	if len(s.vtab) < need {
		s.vtab = append(s.vtab, make([]uint32, need-len(s.vtab))...)
		s.etab = append(s.etab, make([]uint32, 4*need-len(s.etab))...)
	}
	s.vstamp++
	if s.vstamp == 0 {
		clear(s.vtab)
		clear(s.etab)
		s.vstamp = 1
	}
	if maxT == 0 {
		return
	}
	n := int32(s.n)
	for y := x; y >= 0; y = s.nodes[y].parent {
		ci := s.nodes[y].con
		if ci < 0 {
			continue
		}
		c := &s.cons[ci]
		if c.agent != a {
			continue
		}
		switch c.kind {
		case consVertex:
			s.vtab[c.t*n+c.a] = s.vstamp
		case consEdge:
			s.etab[(c.t*n+c.a)*4+s.dir(c.a, c.b)] = s.vstamp
		case consRange:
			for t := int32(1); t <= c.t; t++ {
				s.vtab[t*n+c.a] = s.vstamp
			}
		}
	}
}

// dir returns the adjacency slot (Move-1) of the step a -> b.
func (s *Solver) dir(a, b int32) int32 {
	switch b - a {
	case -int32(s.w):
		return 0
	case int32(s.w):
		return 1
	case -1:
		return 2
	}
	return 3
}

// catBuild loads the paths of the other agents of node x into the
// conflict-avoidance table; catClear undoes it.
func (s *Solver) catBuild(a, x int32) {
	var hmax int32
	base := s.nodes[x].refs
	for j := int32(0); j < int32(s.k); j++ {
		if r := s.refs[base+j]; j != a && r.n > 0 {
			hmax = max(hmax, r.n-1)
		}
	}
	s.catH = hmax
	need := int(hmax+1) * s.n
	if len(s.cat) < need {
		s.cat = append(s.cat, make([]uint16, need-len(s.cat))...)
	}
	n := int32(s.n)
	for j := int32(0); j < int32(s.k); j++ {
		r := s.refs[base+j]
		if j == a || r.n == 0 {
			continue
		}
		for t, c := range s.cells[r.off : r.off+r.n] {
			s.cat[int32(t)*n+c] |= 1 << j
		}
		s.goalT[s.goal[j]] = r.n - 1
	}
}

func (s *Solver) catClear(a, x int32) {
	base := s.nodes[x].refs
	n := int32(s.n)
	for j := int32(0); j < int32(s.k); j++ {
		r := s.refs[base+j]
		if j == a || r.n == 0 {
			continue
		}
		for t, c := range s.cells[r.off : r.off+r.n] {
			s.cat[int32(t)*n+c] = 0
		}
		s.goalT[s.goal[j]] = -1
	}
}

// catConf counts the conflicts of stepping c -> c2 arriving at t2 with the
// other agents' paths.
func (s *Solver) catConf(c, c2, t2 int32) int32 {
	var k int32
	n := int32(s.n)
	if t2 <= s.catH {
		k = int32(bits.OnesCount16(s.cat[t2*n+c2]))
		if c2 != c {
			k += int32(bits.OnesCount16(s.cat[t2*n+c] & s.cat[(t2-1)*n+c2]))
		}
	}
	if g := s.goalT[c2]; g >= 0 && t2 > g {
		k++
	}
	return k
}

func llKey(f, conf, t int32) uint64 {
	return uint64(f)<<32 | uint64(min(conf, 0xFFFF))<<16 | uint64(0xFFFF-min(t, 0xFFFF))
}

func (s *Solver) llPush(key uint64, idx int32) {
	s.heap = append(s.heap, llItem{key, idx})
	h := s.heap
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].key <= h[i].key {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *Solver) llPop() llItem {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(h) {
			break
		}
		c := l
		if r := l + 1; r < len(h) && h[r].key < h[l].key {
			c = r
		}
		if h[i].key <= h[c].key {
			break
		}
		h[i], h[c] = h[c], h[i]
		i = c
	}
	s.heap = h
	return top
}

// lowLevel finds a cheapest path for agent a under its constraints at node
// x, with cost at most ub, breaking ties towards fewer conflicts with the
// other agents' paths at x. The path is appended to the cell arena.
func (s *Solver) lowLevel(a, x, ub int32) (off, ln int32, ok bool, err error) {
	s.buildCons(a, x)
	s.catBuild(a, x)
	off, ln, ok, err = s.astar(a, ub)
	s.catClear(a, x)
	return off, ln, ok, err
}

func (s *Solver) astar(a, ub int32) (int32, int32, bool, error) {
	n := int32(s.n)
	start, goal := s.start[a], s.goal[a]
	h := s.dist[a*n : (a+1)*n]
	lb, last := s.cLB, s.cLast
	noWait := s.search.noWait
	if start == goal && lb == 0 && last < 0 {
		off := int32(len(s.cells))
		s.cells = append(s.cells, start)
		return off, 1, true, nil
	}
	ub = min(ub, s.cUB)
	if max(h[start], lb) > ub {
		return 0, 0, false, nil
	}
	tcap := max(s.cMaxT, lb, s.catH, s.cBlockT) + 1
	// Past tcap the blocked cells are blocked for good: finish paths
	// along distances that avoid them.
	hEnd := h
	if len(s.blockList) > 0 {
		s.hb = solvGrow(s.hb, s.n)
		s.bfsAvoid(goal, s.hb, tcap)
		hEnd = s.hb
	}
	s.hEnd = hEnd
	need := int(tcap+1) * s.n
	if len(s.seen) < need {
		s.seen = append(s.seen, make([]uint32, need-len(s.seen))...)
		s.seenIdx = append(s.seenIdx, make([]int32, need-len(s.seenIdx))...)
	}
	s.seenStamp++
	if s.seenStamp == 0 {
		clear(s.seen)
		s.seenStamp = 1
	}
	stamp := s.seenStamp
	s.pool = s.pool[:0]
	s.heap = s.heap[:0]
	f0 := max(h[start], lb)
	s.pool = append(s.pool, llNode{cell: start, t: 0, parent: -1, f: f0})
	s.seen[start] = stamp
	s.seenIdx[start] = 0
	s.llPush(llKey(f0, 0, 0), 0)
	for len(s.heap) > 0 {
		it := s.llPop()
		xn := &s.pool[it.idx]
		if xn.closed || int32((it.key>>16)&0xFFFF) != min(xn.conf, 0xFFFF) {
			continue
		}
		xn.closed = true
		if xn.term {
			return s.llPath(it.idx, a)
		}
		s.exp++
		if s.exp > s.search.maxE {
			return 0, 0, false, &BudgetError{Nodes: s.gen, Expansions: s.exp}
		}
		cur := it.idx
		c, t, conf := xn.cell, xn.t, xn.conf
		t2 := t + 1
		for m := int32(0); m < 5; m++ {
			var c2 int32
			if m == 0 {
				if noWait {
					continue
				}
				c2 = c
			} else {
				c2 = s.adj[c*4+m-1]
				if c2 < 0 {
					continue
				}
			}
			if t2 <= s.cMaxT {
				if s.vtab[t2*n+c2] == s.vstamp {
					continue
				}
				if m > 0 && s.etab[(t2*n+c)*4+m-1] == s.vstamp {
					continue
				}
			}
			if bf := s.blockFrom[c2]; bf >= 0 && t2 >= bf {
				continue
			}
			f2 := max(t2+h[c2], lb)
			if f2 > ub {
				continue
			}
			conf2 := conf + s.catConf(c, c2, t2)
			if c2 == goal && m != 0 && t2 >= lb && t2 > last {
				// Final arrival: the agent stays here for good.
				idx := int32(len(s.pool))
				s.pool = append(s.pool, llNode{cell: c2, t: t2, parent: cur, conf: conf2, f: t2, term: true})
				s.llPush(llKey(t2, conf2, t2), idx)
				continue
			}
			if t2 >= tcap {
				if c2 == goal {
					continue // waiting on the goal past the horizon never helps
				}
				// No constraints ahead: finish along a shortest path.
				if hEnd[c2] < 0 {
					continue
				}
				f2 = t2 + hEnd[c2]
				if f2 > ub {
					continue
				}
				si := tcap*n + c2
				if s.seen[si] == stamp {
					e := &s.pool[s.seenIdx[si]]
					if e.closed || e.conf <= conf2 {
						continue
					}
					e.conf, e.parent = conf2, cur
					s.llPush(llKey(f2, conf2, t2), s.seenIdx[si])
					continue
				}
				idx := int32(len(s.pool))
				s.pool = append(s.pool, llNode{cell: c2, t: t2, parent: cur, conf: conf2, f: f2, term: true})
				s.seen[si], s.seenIdx[si] = stamp, idx
				s.llPush(llKey(f2, conf2, t2), idx)
				continue
			}
			si := t2*n + c2
			if s.seen[si] == stamp {
				e := &s.pool[s.seenIdx[si]]
				if e.closed || e.conf <= conf2 {
					continue
				}
				e.conf, e.parent = conf2, cur
				s.llPush(llKey(f2, conf2, t2), s.seenIdx[si])
				continue
			}
			idx := int32(len(s.pool))
			s.pool = append(s.pool, llNode{cell: c2, t: t2, parent: cur, conf: conf2, f: f2})
			s.seen[si], s.seenIdx[si] = stamp, idx
			s.llPush(llKey(f2, conf2, t2), idx)
		}
	}
	return 0, 0, false, nil
}

// llPath writes the path ending in pool node idx (and, for a node short of
// the goal, a shortest completion) to the cell arena.
func (s *Solver) llPath(idx, a int32) (int32, int32, bool, error) {
	end := s.pool[idx]
	h := s.hEnd
	total := end.f + 1
	off := int32(len(s.cells))
	for range total {
		s.cells = append(s.cells, 0)
	}
	p := s.cells[off : off+total]
	for i := idx; i >= 0; i = s.pool[i].parent {
		p[s.pool[i].t] = s.pool[i].cell
	}
	c := end.cell
	for t := end.t + 1; t < total; t++ {
		best, bestConf := int32(-1), int32(1<<30)
		for m := int32(0); m < 4; m++ {
			c2 := s.adj[c*4+m]
			if c2 < 0 || h[c2] != h[c]-1 {
				continue
			}
			if k := s.catConf(c, c2, t); k < bestConf {
				best, bestConf = c2, k
			}
		}
		c = best
		p[t] = c
	}
	return off, total, true, nil
}

// mdd computes the summary of agent a's multi-valued decision diagram at
// cost c under the constraints loaded by buildCons: for every t in [0,c],
// the single cell that every cost-c path visits at t, or -1. The summary is
// appended to the cell arena; mdd returns its offset.
func (s *Solver) mdd(a, c int32) int32 {
	n := int32(s.n)
	start, goal := s.start[a], s.goal[a]
	h := s.dist[a*n : (a+1)*n]
	need := int(c+1) * s.n
	if len(s.mark) < need {
		s.mark = append(s.mark, make([]uint32, need-len(s.mark))...)
	}
	if s.markStamp >= 1<<31 {
		clear(s.mark)
		s.markStamp = 0
	}
	fwd, bwd := s.markStamp+1, s.markStamp+2
	s.markStamp += 2
	noWait := s.search.noWait
	layer := s.layer[:0]
	offs := s.layerOff[:0]
	offs = append(offs, 0)
	layer = append(layer, start)
	s.mark[start] = fwd
	// valid reports whether the step u -> v arriving at t2 is allowed on a
	// cost-c path.
	valid := func(u, v, m, t2 int32) bool {
		if m == 0 && noWait {
			return false
		}
		if t2 <= s.cMaxT {
			if s.vtab[t2*n+v] == s.vstamp {
				return false
			}
			if m > 0 && s.etab[(t2*n+u)*4+m-1] == s.vstamp {
				return false
			}
		}
		if bf := s.blockFrom[v]; bf >= 0 && t2 >= bf {
			return false
		}
		if t2+h[v] > c {
			return false
		}
		if t2 == c && (v != goal || m == 0) {
			return false
		}
		return true
	}
	for t := int32(0); t < c; t++ {
		lo, hi := offs[t], int32(len(layer))
		offs = append(offs, hi)
		for i := lo; i < hi; i++ {
			u := layer[i]
			for m := int32(0); m < 5; m++ {
				v := u
				if m > 0 {
					v = s.adj[u*4+m-1]
					if v < 0 {
						continue
					}
				}
				if !valid(u, v, m, t+1) {
					continue
				}
				if si := (t+1)*n + v; s.mark[si] != fwd {
					s.mark[si] = fwd
					layer = append(layer, v)
				}
			}
		}
	}
	offs = append(offs, int32(len(layer)))
	out := int32(len(s.cells))
	for range c + 1 {
		s.cells = append(s.cells, -1)
	}
	sum := s.cells[out : out+c+1]
	if s.mark[c*n+goal] == fwd {
		s.mark[c*n+goal] = bwd
		sum[c] = goal
	}
	for t := c - 1; t >= 0; t-- {
		cnt, one := 0, int32(-1)
		for i := offs[t]; i < offs[t+1]; i++ {
			u := layer[i]
			for m := int32(0); m < 5; m++ {
				v := u
				if m > 0 {
					v = s.adj[u*4+m-1]
					if v < 0 {
						continue
					}
				}
				if s.mark[(t+1)*n+v] == bwd && valid(u, v, m, t+1) {
					s.mark[t*n+u] = bwd
					cnt++
					one = u
					break
				}
			}
		}
		if cnt == 1 {
			sum[t] = one
		}
	}
	s.layer = layer[:0]
	s.layerOff = offs[:0]
	return out
}

// mddOf returns agent a's MDD summary at node x, computing it if needed.
func (s *Solver) mddOf(x, a int32) []int32 {
	ri := s.nodes[x].refs + a
	r := s.refs[ri]
	if r.mdd < 0 {
		s.buildCons(a, x)
		r.mdd = s.mdd(a, r.n-1)
		s.refs[ri].mdd = r.mdd
	}
	return s.cells[r.mdd : r.mdd+r.n]
}

// conflicts counts the conflicts of node x; with collect it also stores
// them in s.confs.
func (s *Solver) conflicts(x int32, collect bool) int32 {
	if collect {
		s.confs = s.confs[:0]
	}
	var cnt int32
	k := int32(s.k)
	for i := int32(0); i < k; i++ {
		pi := s.path(x, i)
		ci := int32(len(pi)) - 1
		for j := i + 1; j < k; j++ {
			pj := s.path(x, j)
			cj := int32(len(pj)) - 1
			T := max(ci, cj)
			for t := int32(1); t <= T; t++ {
				a1, b1 := pi[min(t, ci)], pj[min(t, cj)]
				var cf ctConflict
				switch {
				case a1 == b1:
					switch {
					case t >= ci:
						cf = ctConflict{kind: confTarget, i: i, j: j, a: a1, t: t}
					case t >= cj:
						cf = ctConflict{kind: confTarget, i: j, j: i, a: a1, t: t}
					default:
						cf = ctConflict{kind: confVertex, i: i, j: j, a: a1, t: t}
					}
				case pi[min(t-1, ci)] == b1 && pj[min(t-1, cj)] == a1:
					cf = ctConflict{kind: confEdge, i: i, j: j, a: b1, b: a1, t: t}
				default:
					continue
				}
				cnt++
				if collect {
					s.confs = append(s.confs, cf)
				}
			}
		}
	}
	return cnt
}

// evaluate classifies the conflicts of node x by cardinality, picks the one
// to split on and computes the cardinal-conflict-graph heuristic.
func (s *Solver) evaluate(x int32) error {
	s.conflicts(x, true)
	var cg [MaxAgents]uint16
	best := ctConflict{class: -1}
	for ci := range s.confs {
		cf := &s.confs[ci]
		var ki, kj int8
		switch cf.kind {
		case confVertex:
			if s.mddOf(x, cf.i)[cf.t] == cf.a {
				ki = 1
			}
			if s.mddOf(x, cf.j)[cf.t] == cf.a {
				kj = 1
			}
		case confEdge:
			mi := s.mddOf(x, cf.i)
			if mi[cf.t-1] == cf.a && mi[cf.t] == cf.b {
				ki = 1
			}
			mj := s.mddOf(x, cf.j)
			if mj[cf.t-1] == cf.b && mj[cf.t] == cf.a {
				kj = 1
			}
		case confTarget:
			ki = 1
			mj := s.mddOf(x, cf.j)
			if s.noTarget {
				if mj[cf.t] == cf.a {
					kj = 1
				}
				break
			}
			// Blocked from t on, j's cost rises if every cheapest path of
			// j is on the cell at some time from t on.
			for t := cf.t; t < int32(len(mj)); t++ {
				if mj[t] == cf.a {
					kj = 1
					break
				}
			}
		}
		cf.class = ki + kj
		if cf.class == 2 {
			cg[cf.i] |= 1 << cf.j
			cg[cf.j] |= 1 << cf.i
		}
		if cf.class > best.class || (cf.class == best.class && cf.t < best.t) {
			best = *cf
		}
	}
	nd := &s.nodes[x]
	nd.best = best
	nd.h = int32(solvMVC(&cg, uint16(1)<<s.k-1))
	nd.evaluated = true
	return nil
}

// solvMVC returns the size of a minimum vertex cover of the graph with
// adjacency masks adj restricted to the vertices in alive.
func solvMVC(adj *[MaxAgents]uint16, alive uint16) int {
	for v := 0; v < MaxAgents; v++ {
		if alive&(1<<v) == 0 {
			continue
		}
		if e := adj[v] & alive; e != 0 {
			u := bits.TrailingZeros16(e)
			a := solvMVC(adj, alive&^(1<<v))
			b := solvMVC(adj, alive&^(1<<u))
			return 1 + min(a, b)
		}
	}
	return 0
}

// jointCount returns the number of joint configurations (ordered placements
// of the agents on distinct free cells), capped at solvInf.
func (s *Solver) jointCount() int {
	free := 0
	for _, h := range s.holes {
		if !h {
			free++
		}
	}
	c := 1
	for i := 0; i < s.k; i++ {
		c *= free - i
		if c > int(solvInf) || c <= 0 {
			return int(solvInf)
		}
	}
	return c
}

// jointPrep indexes the free cells for the joint-configuration searches.
// It reports false when a joint state (configuration code times the
// finished-agents mask) does not fit in 63 bits.
func (s *Solver) jointPrep() bool {
	n := s.n
	s.jFree = solvGrow(s.jFree, n)
	s.jCells = s.jCells[:0]
	for c := 0; c < n; c++ {
		s.jFree[c] = -1
		if !s.holes[c] {
			s.jFree[c] = int32(len(s.jCells))
			s.jCells = append(s.jCells, int32(c))
		}
	}
	F := uint64(len(s.jCells))
	lim := uint64(1) << s.k
	for i := 0; i < s.k; i++ {
		if lim > (1<<62)/F {
			return false
		}
		lim *= F
	}
	s.jPos = solvGrow(s.jPos, s.k)
	s.jNew = solvGrow(s.jNew, s.k)
	s.jOld = solvGrow(s.jOld, n)
	s.jAt = solvGrow(s.jAt, n)
	for c := range s.jOld {
		s.jOld[c], s.jAt[c] = -1, -1
	}
	if s.jSeen == nil {
		s.jSeen = make(map[uint64]struct{})
	}
	if s.jRec == nil {
		s.jRec = make(map[uint64]jRec)
	}
	return true
}

// jEncode returns the configuration code of pos.
func (s *Solver) jEncode(pos []int32) uint64 {
	F := uint64(len(s.jCells))
	var code uint64
	for i := len(pos) - 1; i >= 0; i-- {
		code = code*F + uint64(s.jFree[pos[i]])
	}
	return code
}

// jDecode writes the configuration code into s.jPos.
func (s *Solver) jDecode(code uint64) {
	F := uint64(len(s.jCells))
	for i := 0; i < s.k; i++ {
		s.jPos[i] = s.jCells[code%F]
		code /= F
	}
}

// jSuccessors fills s.jNext with the codes of the joint successors of the
// configuration in s.jPos; agents in frozen stay put.
func (s *Solver) jSuccessors(frozen uint16, noWait bool) {
	for i := 0; i < s.k; i++ {
		s.jOld[s.jPos[i]] = int32(i)
	}
	s.jNext = s.jNext[:0]
	s.jointMoves(0, frozen, noWait)
	for i := 0; i < s.k; i++ {
		s.jOld[s.jPos[i]] = -1
	}
}

// jointCheck decides by breadth-first search over joint configurations
// whether the goal configuration can be reached at all. It returns an
// *UnsolvableError when it cannot. The work counts as expansions.
func (s *Solver) jointCheck() error {
	s.joint = solvJointTooBig
	if !s.jointPrep() {
		return nil
	}
	from := s.jEncode(s.start[:s.k])
	to := s.jEncode(s.goal[:s.k])
	clear(s.jSeen)
	defer clear(s.jSeen)
	s.jQueue = append(s.jQueue[:0], from)
	s.jSeen[from] = struct{}{}
	for h := 0; h < len(s.jQueue); h++ {
		s.jDecode(s.jQueue[h])
		s.jSuccessors(0, false)
		s.exp += 1 + len(s.jNext)
		if s.exp > s.search.maxE {
			return &BudgetError{Nodes: s.gen, Expansions: s.exp}
		}
		for _, nx := range s.jNext {
			if nx == to {
				s.joint = solvJointReachable
				return nil
			}
			if _, ok := s.jSeen[nx]; !ok {
				s.jSeen[nx] = struct{}{}
				s.jQueue = append(s.jQueue, nx)
			}
		}
	}
	return &UnsolvableError{Agent: -1, Reason: fmt.Sprintf("the goal configuration is unreachable (searched all %d reachable joint configurations)", len(s.jQueue))}
}

// jointMoves enumerates the joint successors of s.jPos for agents i.. and
// appends their codes to s.jNext.
func (s *Solver) jointMoves(i int, frozen uint16, noWait bool) {
	if i == s.k {
		s.jNext = append(s.jNext, s.jEncode(s.jNew[:s.k]))
		return
	}
	u := s.jPos[i]
	for m := int32(0); m < 5; m++ {
		v := u
		if m > 0 {
			if frozen&(1<<i) != 0 {
				break
			}
			v = s.adj[u*4+m-1]
			if v < 0 {
				continue
			}
		} else if noWait && frozen&(1<<i) == 0 {
			continue
		}
		if s.jAt[v] >= 0 {
			continue // vertex conflict
		}
		if v != u {
			// Swap: the agent now at v moves to u.
			if j := s.jOld[v]; j >= 0 && j < int32(i) && s.jNew[j] == u {
				continue
			}
		}
		s.jAt[v] = int32(i)
		s.jNew[i] = v
		s.jointMoves(i+1, frozen, noWait)
		s.jAt[v] = -1
	}
}

// jRec is a joint-search state record: sum of costs and time so far, and
// the parent state.
type jRec struct {
	g, t   int32
	parent uint64
}

type jItem struct {
	prio uint64
	key  uint64
	g, t int32
}

const solvNoParent = ^uint64(0)

// jointSolveStates caps the states the joint search may store.
const (
	solvJointSolveLimit  = 1 << 22 // joint configurations x finished masks
	solvJointSolveStates = 1 << 20
)

// jointSolvable reports whether the joint search is worth trying.
func (s *Solver) jointSolvable() bool {
	return s.jointN < int(solvInf)>>s.k && s.jointN<<s.k <= solvJointSolveLimit
}

// jointSolve runs an exact A* over joint states (configuration, finished
// agents) under s.search: a step costs one per unfinished agent; an agent
// standing on its goal may finish (it then stays there for good). Under
// MakespanObjective it minimises (makespan, SOC) lexicographically. It
// reports done=false when the search needed more states than it may store;
// otherwise found says whether a plan within the bounds exists, and the plan
// is in s.solPaths.
func (s *Solver) jointSolve() (found, done bool, err error) {
	if !s.jointPrep() {
		return false, false, nil
	}
	sp := &s.search
	k := s.k
	all := uint16(1)<<k - 1
	mk := sp.obj == MakespanObjective
	clear(s.jRec)
	defer clear(s.jRec)
	heap := s.jHeap[:0]
	less := func(a, b jItem) bool { return a.prio < b.prio }
	push := func(it jItem) {
		heap = append(heap, it)
		i := len(heap) - 1
		for i > 0 {
			p := (i - 1) / 2
			if !less(heap[i], heap[p]) {
				break
			}
			heap[i], heap[p] = heap[p], heap[i]
			i = p
		}
	}
	pop := func() jItem {
		top := heap[0]
		last := len(heap) - 1
		heap[0] = heap[last]
		heap = heap[:last]
		i := 0
		for {
			l := 2*i + 1
			if l >= len(heap) {
				break
			}
			c := l
			if r := l + 1; r < len(heap) && less(heap[r], heap[l]) {
				c = r
			}
			if !less(heap[c], heap[i]) {
				break
			}
			heap[i], heap[c] = heap[c], heap[i]
			i = c
		}
		return top
	}
	// offer records state (pos in s.jNew-style slice, done) reached with
	// cost g at time t from parent, if it is new or better.
	offer := func(pos []int32, done uint16, g, t int32, parent uint64) {
		var hs, hm int32
		for i := 0; i < k; i++ {
			if done&(1<<i) == 0 {
				d := s.dist[i*s.n+int(pos[i])]
				hs += d
				hm = max(hm, d)
			}
		}
		if g+hs > sp.ubSOC || t+hm > sp.ubMk {
			return
		}
		key := s.jEncode(pos)<<k | uint64(done)
		if old, ok := s.jRec[key]; ok {
			if mk && (old.t < t || (old.t == t && old.g <= g)) || !mk && old.g <= g {
				return
			}
		}
		s.jRec[key] = jRec{g: g, t: t, parent: parent}
		var prio uint64
		if mk {
			prio = uint64(t+hm)<<40 | uint64(g+hs)<<20 | uint64(0xFFFFF-g)
		} else {
			prio = uint64(g+hs)<<32 | uint64(0xFFFFFFFF-uint32(g))
		}
		push(jItem{prio: prio, key: key, g: g, t: t})
	}
	// offerAll offers pos with every subset of the unfinished agents that
	// stand on their goals marked finished.
	s.jNew2 = solvGrow(s.jNew2, k)
	next := s.jNew2
	offerAll := func(pos []int32, done uint16, g, t int32, parent uint64) {
		var can uint16
		for i := 0; i < k; i++ {
			if done&(1<<i) == 0 && pos[i] == s.goal[i] {
				can |= 1 << i
			}
		}
		for sub := can; ; sub = (sub - 1) & can {
			offer(pos, done|sub, g, t, parent)
			if sub == 0 {
				break
			}
		}
	}
	offerAll(s.start[:k], 0, 0, 0, solvNoParent)
	for len(heap) > 0 {
		it := pop()
		rec := s.jRec[it.key]
		if rec.g != it.g || rec.t != it.t {
			continue // stale
		}
		done := uint16(it.key & uint64(all))
		if done == all {
			s.jHeap = heap[:0]
			s.jointExtract(it.key)
			return true, true, nil
		}
		if len(s.jRec) > solvJointSolveStates {
			s.jHeap = heap[:0]
			return false, false, nil
		}
		s.jDecode(it.key >> k)
		s.jSuccessors(done, sp.noWait)
		s.exp += 1 + len(s.jNext)
		if s.exp > sp.maxE {
			s.jHeap = heap[:0]
			return false, true, &BudgetError{Nodes: s.gen, Expansions: s.exp}
		}
		pay := int32(k - bits.OnesCount16(done))
		for _, code := range s.jNext {
			F := uint64(len(s.jCells))
			c := code
			for i := 0; i < k; i++ {
				next[i] = s.jCells[c%F]
				c /= F
			}
			offerAll(next, done, it.g+pay, it.t+1, it.key)
		}
	}
	s.jHeap = heap[:0]
	return false, true, nil
}

// jointExtract writes the plan ending in joint state key to s.solPaths:
// agent i's path runs until the first state in which it is finished.
func (s *Solver) jointExtract(key uint64) {
	k := s.k
	var chain []uint64
	for x := key; x != solvNoParent; x = s.jRec[x].parent {
		chain = append(chain, x)
	}
	if len(s.solPaths) < k {
		s.solPaths = make([][]int32, k)
	}
	s.solPaths = s.solPaths[:k]
	for i := range s.solPaths {
		s.solPaths[i] = s.solPaths[i][:0]
	}
	var finished uint64
	for ci := len(chain) - 1; ci >= 0; ci-- {
		x := chain[ci]
		s.jDecode(x >> k)
		for i := 0; i < k; i++ {
			if finished&(1<<i) != 0 {
				continue
			}
			s.solPaths[i] = append(s.solPaths[i], s.jPos[i])
			if x&(1<<i) != 0 {
				finished |= 1 << i
			}
		}
	}
}

// degree returns the number of free neighbours of cell c.
func (s *Solver) degree(c int32) int {
	d := 0
	for m := int32(0); m < 4; m++ {
		if s.adj[c*4+m] >= 0 {
			d++
		}
	}
	return d
}

// corridorAt collects the corridor through cell v: the maximal chain of
// free cells of degree 2 containing v, into s.corr (marked in s.inCorr
// with s.corrMark), and returns the cells e and f just outside its two
// ends. It reports false when v is not in such a chain, or the chain ends
// in a dead end or closes on itself.
func (s *Solver) corridorAt(v int32) (e, f int32, ok bool) {
	if s.degree(v) != 2 {
		return 0, 0, false
	}
	if len(s.inCorr) < s.n {
		s.inCorr = make([]uint32, s.n)
	}
	s.corrMark++
	if s.corrMark == 0 {
		clear(s.inCorr)
		s.corrMark = 1
	}
	s.corr = append(s.corr[:0], v)
	s.inCorr[v] = s.corrMark
	var ends [2]int32
	side := 0
	for m := int32(0); m < 4; m++ {
		nb := s.adj[v*4+m]
		if nb < 0 {
			continue
		}
		prev, cur := v, nb
		for s.degree(cur) == 2 {
			if s.inCorr[cur] == s.corrMark {
				return 0, 0, false // a cycle of degree-2 cells
			}
			s.inCorr[cur] = s.corrMark
			s.corr = append(s.corr, cur)
			next := int32(-1)
			for m2 := int32(0); m2 < 4; m2++ {
				if c2 := s.adj[cur*4+m2]; c2 >= 0 && c2 != prev {
					next = c2
				}
			}
			prev, cur = cur, next
		}
		if s.degree(cur) < 2 || s.inCorr[cur] == s.corrMark {
			return 0, 0, false // dead end
		}
		ends[side] = cur
		side++
	}
	if ends[0] == ends[1] {
		return 0, 0, false
	}
	return ends[0], ends[1], true
}

// corridorDir returns the corridor end that agent a's path at node x last
// visited at or before t and the one it first visits at or after t (-1 if
// none).
func (s *Solver) corridorDir(x, a, t, e, f int32) (from, to int32) {
	p := s.path(x, a)
	last := int32(len(p)) - 1
	from, to = -1, -1
	for u := min(t, last); u >= 0; u-- {
		if p[u] == e || p[u] == f {
			from = p[u]
			break
		}
	}
	for u := min(t, last); u <= last; u++ {
		if p[u] == e || p[u] == f {
			to = p[u]
			break
		}
	}
	return from, to
}

// corridor applies corridor reasoning (Li et al., "Pairwise symmetry
// reasoning for multi-agent path finding search", 2021) to the vertex or
// edge conflict cf at node x. When two agents cross a corridor of k cells
// in opposite directions, a1 from end e1 to end e2 and a2 the other way,
// every pair of conflict-free paths keeps a1 off e2 during
// [0, min(t1'(e2)-1, t2(e1)+k)] or keeps a2 off e1 during
// [0, min(t2'(e1)-1, t1(e2)+k)], where t(e) is the agent's earliest arrival
// at e and t'(e) its earliest arrival avoiding the corridor (the agent that
// passes second cannot reach the far end before the first has left the
// corridor and it has walked all k cells). Both agents must start outside
// the corridor. We use lower bounds for t and t' (t' ignores the
// constraints), which keeps the disjunction valid. It returns those two
// range constraints when both are violated by the current paths.
func (s *Solver) corridor(x int32, cf *ctConflict) (ctCons, ctCons, bool) {
	v := cf.a
	if cf.kind == confEdge && s.degree(v) != 2 {
		v = cf.b
	}
	e, f, ok := s.corridorAt(v)
	if !ok {
		return ctCons{}, ctCons{}, false
	}
	a1, a2 := cf.i, cf.j
	from1, to1 := s.corridorDir(x, a1, cf.t, e, f)
	from2, to2 := s.corridorDir(x, a2, cf.t, e, f)
	if from1 < 0 || to1 < 0 || from1 == to1 || from2 != to1 || to2 != from1 {
		return ctCons{}, ctCons{}, false
	}
	if s.inCorr[s.start[a1]] == s.corrMark || s.inCorr[s.start[a2]] == s.corrMark {
		return ctCons{}, ctCons{}, false
	}
	e1, e2 := from1, to1
	k := int32(len(s.corr))
	t1x := s.earliestAround(a1, e2)
	t2x := s.earliestAround(a2, e1)
	t1 := s.earliest(x, a1, e2)
	t2 := s.earliest(x, a2, e1)
	r1 := min(t1x-1, t2+k)
	r2 := min(t2x-1, t1+k)
	if !s.visits(x, a1, e2, r1) || !s.visits(x, a2, e1, r2) {
		return ctCons{}, ctCons{}, false
	}
	return ctCons{agent: a1, kind: consRange, a: e2, t: r1}, ctCons{agent: a2, kind: consRange, a: e1, t: r2}, true
}

// visits reports whether agent a's path at node x is on cell c at some
// time in [1, r].
func (s *Solver) visits(x, a, c, r int32) bool {
	p := s.path(x, a)
	last := int32(len(p)) - 1
	for t := int32(1); t <= r; t++ {
		if p[min(t, last)] == c {
			return true
		}
	}
	return false
}

// earliest returns the earliest time agent a can be on cell target under
// its constraints at node x (waits allowed, length constraints ignored: a
// lower bound on its arrival in every solution below x); solvInf when it
// cannot.
func (s *Solver) earliest(x, a, target int32) int32 {
	s.buildCons(a, x)
	n := int32(s.n)
	start := s.start[a]
	if start == target {
		return 0
	}
	need := int(s.cMaxT+2) * s.n
	if len(s.mark) < need {
		s.mark = append(s.mark, make([]uint32, need-len(s.mark))...)
	}
	if s.markStamp >= 1<<31 {
		clear(s.mark)
		s.markStamp = 0
	}
	s.markStamp++
	stamp := s.markStamp
	layer := append(s.layer[:0], start)
	lo := 0
	for t := int32(0); t <= s.cMaxT; t++ {
		hi := len(layer)
		for i := lo; i < hi; i++ {
			u := layer[i]
			for m := int32(0); m < 5; m++ {
				v := u
				if m > 0 {
					if v = s.adj[u*4+m-1]; v < 0 {
						continue
					}
				}
				if t+1 <= s.cMaxT {
					if s.vtab[(t+1)*n+v] == s.vstamp {
						continue
					}
					if m > 0 && s.etab[((t+1)*n+u)*4+m-1] == s.vstamp {
						continue
					}
				}
				if v == target {
					s.layer = layer[:0]
					return t + 1
				}
				if si := (t+1)*n + v; s.mark[si] != stamp {
					s.mark[si] = stamp
					layer = append(layer, v)
				}
			}
		}
		lo = hi
	}
	// Past the last constraint: static distances to the target.
	s.staticDist(target, 0)
	best := solvInf
	for _, u := range layer[lo:] {
		if d := s.sdist[u]; d >= 0 {
			best = min(best, s.cMaxT+1+d)
		}
	}
	s.layer = layer[:0]
	return best
}

// staticDist fills s.sdist with distances to target over free cells,
// avoiding the cells marked with avoid in s.inCorr when avoid is not 0.
func (s *Solver) staticDist(target int32, avoid uint32) {
	s.sdist = solvGrow(s.sdist, s.n)
	for i := range s.sdist {
		s.sdist[i] = -1
	}
	q := s.layerOff[:0]
	s.sdist[target] = 0
	q = append(q, target)
	for h := 0; h < len(q); h++ {
		u := q[h]
		for m := int32(0); m < 4; m++ {
			v := s.adj[u*4+m]
			if v >= 0 && s.sdist[v] < 0 && (avoid == 0 || s.inCorr[v] != avoid) {
				s.sdist[v] = s.sdist[u] + 1
				q = append(q, v)
			}
		}
	}
	s.layerOff = q[:0]
}

// earliestAround returns a lower bound on the time agent a can reach cell
// target without crossing the corridor marked in s.inCorr: its distance in
// the grid without the corridor. (A path that steps into the corridor and
// back out on the same side is no faster, whatever the constraints.)
func (s *Solver) earliestAround(a, target int32) int32 {
	s.staticDist(target, s.corrMark)
	if d := s.sdist[s.start[a]]; d >= 0 {
		return d
	}
	return solvInf
}

// bfsAvoid fills d with distances to src over free cells that are not
// blocked at time from (-1 unreachable).
func (s *Solver) bfsAvoid(src int32, d []int32, from int32) {
	for i := range d {
		d[i] = -1
	}
	q := s.layerOff[:0]
	d[src] = 0
	q = append(q, src)
	for h := 0; h < len(q); h++ {
		u := q[h]
		for m := int32(0); m < 4; m++ {
			v := s.adj[u*4+m]
			if v >= 0 && d[v] < 0 {
				if bf := s.blockFrom[v]; bf >= 0 && bf <= from {
					continue
				}
				d[v] = d[u] + 1
				q = append(q, v)
			}
		}
	}
	s.layerOff = q[:0]
}
