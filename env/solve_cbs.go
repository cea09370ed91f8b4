package env

import "math/bits"

// ctScratch is the constraint tree (CT) of the running search.
type ctScratch struct {
	nodes []ctNode
	// nodePaths holds numAgents path references per node, from
	// nodes[x].paths on; a child copies its parent's and replaces those of
	// the agents it replans.
	nodePaths []pathRef
	// arena holds the cells of every path and MDD summary of the search.
	arena       []int32
	constraints []ctCons // each node adds at most one
	// open is the open list of node indices (see push for its order).
	open minHeap[uint64, uint64, int32]
	// conflictBuf holds the conflicts of the node being evaluated.
	conflictBuf []ctConflict
}

// searchSpec is what one search looks for, and its budgets.
type searchSpec struct {
	objective Objective
	noWait    bool // plans in which no agent waits before its final arrival
	// maxSOC and maxMakespan prune the nodes whose SOC lower bound or
	// makespan exceeds them; solvInf means no bound.
	maxSOC, maxMakespan int32
	// maxNodes and maxExpansions are the budgets (see SolveOptions).
	maxNodes, maxExpansions int
}

// bounded reports whether the search prunes by cost.
func (sp *searchSpec) bounded() bool { return sp.maxSOC < solvInf || sp.maxMakespan < solvInf }

// ctNode is a constraint-tree node.
type ctNode struct {
	// parent is the parent node (-1 for the root) and constraint the index
	// in constraints of the one constraint the node adds (-1 for the
	// root); a node's constraints are those on its path to the root.
	parent, constraint int32
	paths              int32 // its agents' paths are nodePaths[paths:paths+numAgents]
	// soc is the sum of costs of the node's paths and makespan their
	// makespan, raised to the parent's. lowerBound is the SOC lower bound
	// that orders the open list: soc raised by the cardinal-conflict
	// heuristic and by pathmax from the parent.
	soc, lowerBound, makespan int32
	heuristic                 int32 // the cardinal-conflict-graph heuristic, once evaluated
	numConflicts              int32
	// evaluated says whether the conflicts have been classified, split
	// chosen and heuristic computed (see evaluate).
	evaluated bool
	split     ctConflict // the conflict to split on, once evaluated
}

// pathRef locates an agent's path at a node: the path is
// arena[off:off+length] (length = cost+1) and its MDD summary
// arena[mdd:mdd+length], or mdd is -1 if not computed yet.
type pathRef struct {
	off, length, mdd int32
}

// Constraint kinds.
const (
	consVertex uint8 = iota // the agent is not on cell at t
	consEdge                // the agent does not step from cell to to arriving at t
	consLength              // the agent's cost exceeds t
	consRange               // the agent is not on cell during [0, t] (corridor reasoning)
	consBlock               // the agent's cost is at most t and no other agent is on cell (its goal) from t on (target reasoning)
)

// ctCons is a constraint on agent; kind says how cell, to and t apply.
type ctCons struct {
	agent    int32
	kind     uint8
	cell, to int32
	t        int32
}

// Conflict kinds.
const (
	confVertex uint8 = iota // i and j are both on cell at t
	confEdge                // i steps from cell to to while j steps from to to cell, arriving at t
	confTarget              // i is on its goal cell for good by t and j is there at t
)

// ctConflict is a conflict between agents i and j at a node.
type ctConflict struct {
	kind     uint8
	class    int8 // 2 cardinal, 1 semi-cardinal, 0 non-cardinal (see evaluate)
	i, j     int32
	cell, to int32
	t        int32
}

// run performs one CBS search; on success the plan is in s.solPaths. It
// returns found=false when the constraint tree is exhausted (within the
// bounds of sp, if any).
func (s *Solver) run(sp searchSpec) (bool, error) {
	if err := s.startSearch(sp); err != nil {
		return false, err
	}
	if ok, err := s.pushRoot(sp); !ok || err != nil {
		return false, err
	}

	jointTried := false
	for s.open.len() > 0 {
		x := s.open.pop().val
		nd := &s.nodes[x]
		if nd.numConflicts == 0 {
			s.extract(x)
			return true, nil
		}
		if !nd.evaluated {
			if err := s.evaluate(x); err != nil {
				return false, err
			}
			nd = &s.nodes[x]
			if f := nd.soc + nd.heuristic; f > nd.lowerBound {
				nd.lowerBound = f
				if !s.pruned(x) {
					s.push(x)
				}
				continue
			}
		}
		if done, found, err := s.lateJoint(sp, &jointTried); done {
			return found, err
		}
		if s.generated >= sp.maxNodes {
			return false, &BudgetError{Nodes: s.generated, Expansions: s.expansions}
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

// startSearch resets the search state for sp and, for an unbounded search
// on a small joint space, checks the joint space first.
func (s *Solver) startSearch(sp searchSpec) error {
	s.search = sp
	s.generated, s.expansions = 0, 0
	s.nodes = s.nodes[:0]
	s.nodePaths = s.nodePaths[:0]
	s.arena = s.arena[:0]
	s.constraints = s.constraints[:0]
	s.open.reset()
	if !sp.bounded() && s.jointStatus == solvJointUnknown && s.jointConfigs <= solvJointEager {
		return s.jointCheck()
	}
	return nil
}

// pushRoot plans every agent alone at the root node and pushes it. It
// returns false when some agent has no path (an UnsolvableError unless sp
// is bounded) or the root is pruned.
func (s *Solver) pushRoot(sp searchSpec) (bool, error) {
	root := s.newNode(-1, -1)
	lb := s.socLB
	for a := int32(0); a < int32(s.numAgents); a++ {
		s.nodePaths[s.nodes[root].paths+a] = pathRef{off: -1, length: 0, mdd: -1}
	}
	for a := int32(0); a < int32(s.numAgents); a++ {
		ub := s.agentUB(a, lb-s.goalDist[int(a)*s.numCells+int(s.start[a])])
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
		s.nodePaths[s.nodes[root].paths+a] = pathRef{off: off, length: ln, mdd: -1}
	}
	s.finishNode(root, -1)
	if s.pruned(root) {
		return false, nil
	}
	s.push(root)
	return true, nil
}

// lateJoint switches to the joint search (once, tracked by *jointTried)
// or runs the late joint check when CBS has generated many nodes on a
// small joint space. done says that run must return found and err.
func (s *Solver) lateJoint(sp searchSpec, jointTried *bool) (done, found bool, err error) {
	if !*jointTried && !s.noJoint && s.generated >= solvJointLateNodes && s.jointSolvable() {
		// CBS is struggling on a small joint space: solve it exactly
		// over joint states instead.
		*jointTried = true
		found, done, err := s.jointSolve()
		if err != nil || done {
			if err == nil && !found && !sp.bounded() {
				err = &UnsolvableError{Agent: -1, Reason: "the joint state space is exhausted"}
			}
			return true, found, err
		}
	}
	if !sp.bounded() && s.jointStatus == solvJointUnknown && s.generated >= solvJointLateNodes && s.jointConfigs <= solvJointLate {
		if err := s.jointCheck(); err != nil {
			return true, false, err
		}
	}
	return false, false, nil
}

// agentUB is the largest cost agent a may have, given that the other agents
// cost at least others in total.
func (s *Solver) agentUB(a, others int32) int32 {
	ub := solvInf
	if s.search.maxSOC < solvInf {
		ub = s.search.maxSOC - others
	}
	if s.search.maxMakespan < solvInf {
		ub = min(ub, s.search.maxMakespan)
	}
	return ub
}

// pruned reports whether node x exceeds the search's cost bounds.
func (s *Solver) pruned(x int32) bool {
	nd := &s.nodes[x]
	return nd.lowerBound > s.search.maxSOC || nd.makespan > s.search.maxMakespan
}

// newNode appends a node that adds constraint con to parent (-1: the
// root), with the parent's paths, and returns its index.
func (s *Solver) newNode(parent, con int32) int32 {
	x := int32(len(s.nodes))
	off := int32(len(s.nodePaths))
	if parent >= 0 {
		p := s.nodes[parent].paths
		s.nodePaths = append(s.nodePaths, s.nodePaths[p:p+int32(s.numAgents)]...)
	} else {
		for a := 0; a < s.numAgents; a++ {
			s.nodePaths = append(s.nodePaths, pathRef{off: -1, mdd: -1})
		}
	}
	s.nodes = append(s.nodes, ctNode{parent: parent, constraint: con, paths: off})
	s.generated++
	return x
}

// dropLast removes node x, which must be the last one created.
func (s *Solver) dropLast(x int32) {
	s.nodePaths = s.nodePaths[:s.nodes[x].paths]
	s.nodes = s.nodes[:x]
}

// finishNode computes the costs and conflict count of node x; parent is its
// parent (for pathmax) or -1.
func (s *Solver) finishNode(x, parent int32) {
	nd := &s.nodes[x]
	var g, mk int32
	for a := int32(0); a < int32(s.numAgents); a++ {
		c := s.nodePaths[nd.paths+a].length - 1
		g += c
		mk = max(mk, c)
	}
	nd.soc, nd.makespan, nd.lowerBound = g, mk, g
	if parent >= 0 {
		p := &s.nodes[parent]
		nd.makespan = max(nd.makespan, p.makespan)
		if s.search.objective == SumOfCosts || nd.makespan == p.makespan {
			nd.lowerBound = max(nd.lowerBound, p.lowerBound)
		}
	}
	nd.numConflicts = s.conflicts(x, false)
	nd.evaluated = false
}

// path returns agent a's path at node x.
func (s *Solver) path(x int32, a int32) []int32 {
	r := s.nodePaths[s.nodes[x].paths+a]
	return s.arena[r.off : r.off+r.length]
}

// extract copies the paths of node x to s.solPaths.
func (s *Solver) extract(x int32) {
	if len(s.solPaths) < s.numAgents {
		s.solPaths = make([][]int32, s.numAgents)
	}
	s.solPaths = s.solPaths[:s.numAgents]
	for a := int32(0); a < int32(s.numAgents); a++ {
		s.solPaths[a] = append(s.solPaths[a][:0], s.path(x, a)...)
	}
}

// push adds node x to the open list, which orders nodes by makespan first
// under MakespanObjective, then by the SOC lower bound, then by fewer
// conflicts, then newest first. A node's keys do not change while it is
// on the list (a node is changed only after it is popped).
func (s *Solver) push(x int32) {
	nd := &s.nodes[x]
	var mk uint64
	if s.search.objective == MakespanObjective {
		mk = uint64(nd.makespan)
	}
	s.open.push(mk<<32|uint64(nd.lowerBound), uint64(nd.numConflicts)<<32|uint64(^uint32(x)), x)
}

// expand splits node x on its chosen conflict. It reports true when it
// bypassed the conflict instead (x then holds a better path and must be
// pushed again).
func (s *Solver) expand(x int32) (bool, error) {
	cf := s.nodes[x].split
	cs := s.splitConstraints(x, &cf)
	var kids [2]int32
	nk := 0
	nodesMark, consMark := int32(len(s.nodes)), len(s.constraints)
	for side := 0; side < 2; side++ {
		c := cs[side]
		ci := int32(len(s.constraints))
		s.constraints = append(s.constraints, c)
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
			s.constraints = s.constraints[:ci]
			continue
		}
		a := c.agent
		old := s.nodePaths[s.nodes[x].paths+a]
		nw := s.nodePaths[s.nodes[child].paths+a]
		if c.kind != consBlock && cf.class < 2 && nw.length == old.length && s.nodes[child].numConflicts < s.nodes[x].numConflicts {
			// Bypass: the new path is as cheap, satisfies x's constraints
			// too, and has fewer conflicts; adopt it instead of branching.
			nconf := s.nodes[child].numConflicts
			s.nodePaths[s.nodes[x].paths+a] = pathRef{off: nw.off, length: nw.length, mdd: old.mdd}
			// Drop every child made so far (they are the last nodes).
			s.nodePaths = s.nodePaths[:s.nodes[nodesMark].paths]
			s.nodes = s.nodes[:nodesMark]
			s.constraints = s.constraints[:consMark]
			nd := &s.nodes[x]
			nd.numConflicts = nconf
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

// splitConstraints returns the two constraints that split node x on its
// conflict cf, one per child: a vertex or edge constraint on each agent, a
// target split, or corridor constraints where the conflict lies in one.
func (s *Solver) splitConstraints(x int32, cf *ctConflict) [2]ctCons {
	var cs [2]ctCons
	switch cf.kind {
	case confVertex:
		cs[0] = ctCons{agent: cf.i, kind: consVertex, cell: cf.cell, t: cf.t}
		cs[1] = ctCons{agent: cf.j, kind: consVertex, cell: cf.cell, t: cf.t}
	case confEdge:
		cs[0] = ctCons{agent: cf.i, kind: consEdge, cell: cf.cell, to: cf.to, t: cf.t}
		cs[1] = ctCons{agent: cf.j, kind: consEdge, cell: cf.to, to: cf.cell, t: cf.t}
	case confTarget:
		cs[0], cs[1] = s.targetSplit(cf)
	}
	if cf.kind != confTarget && !s.noCorridor {
		if c0, c1, ok := s.corridor(x, cf); ok {
			cs[0], cs[1] = c0, c1
		}
	}
	return cs
}

// replan finds new paths in child (a fresh copy of x plus constraint c)
// for the agents that c may invalidate: c's agent, or for a block every
// other agent on the blocked cell at or after its time. It reports false
// when one of them has no path within the bounds.
func (s *Solver) replan(x, child int32, c *ctCons) (bool, error) {
	if c.kind == consBlock {
		return s.replanBlocked(x, child, c)
	}
	return s.replanAgent(child, c.agent)
}

// replanAgent finds a new path for agent a at node child, within the
// bounds that the other agents' paths leave it. It reports false when
// there is none.
func (s *Solver) replanAgent(child, a int32) (bool, error) {
	base := s.nodes[child].paths
	var others int32
	for j := int32(0); j < int32(s.numAgents); j++ {
		if j != a {
			others += s.nodePaths[base+j].length - 1
		}
	}
	off, ln, ok, err := s.lowLevel(a, child, s.agentUB(a, others))
	if err != nil || !ok {
		return false, err
	}
	s.nodePaths[s.nodes[child].paths+a] = pathRef{off: off, length: ln, mdd: -1}
	return true, nil
}

// conflicts counts the conflicts of node x; with collect it also stores
// them in s.conflictBuf.
func (s *Solver) conflicts(x int32, collect bool) int32 {
	if collect {
		s.conflictBuf = s.conflictBuf[:0]
	}
	var cnt int32
	k := int32(s.numAgents)
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
						cf = ctConflict{kind: confTarget, i: i, j: j, cell: a1, t: t}
					case t >= cj:
						cf = ctConflict{kind: confTarget, i: j, j: i, cell: a1, t: t}
					default:
						cf = ctConflict{kind: confVertex, i: i, j: j, cell: a1, t: t}
					}
				case pi[min(t-1, ci)] == b1 && pj[min(t-1, cj)] == a1:
					cf = ctConflict{kind: confEdge, i: i, j: j, cell: b1, to: a1, t: t}
				default:
					continue
				}
				cnt++
				if collect {
					s.conflictBuf = append(s.conflictBuf, cf)
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
	for ci := range s.conflictBuf {
		cf := &s.conflictBuf[ci]
		var ki, kj int8
		switch cf.kind {
		case confVertex:
			if s.mddOf(x, cf.i)[cf.t] == cf.cell {
				ki = 1
			}
			if s.mddOf(x, cf.j)[cf.t] == cf.cell {
				kj = 1
			}
		case confEdge:
			mi := s.mddOf(x, cf.i)
			if mi[cf.t-1] == cf.cell && mi[cf.t] == cf.to {
				ki = 1
			}
			mj := s.mddOf(x, cf.j)
			if mj[cf.t-1] == cf.to && mj[cf.t] == cf.cell {
				kj = 1
			}
		case confTarget:
			ki, kj = s.targetCardinal(x, cf)
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
	nd.split = best
	nd.heuristic = int32(solvMVC(&cg, uint16(1)<<s.numAgents-1))
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
