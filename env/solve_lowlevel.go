package env

import "math/bits"

// lowLevelScratch is the scratch space of the single-agent searches:
// space-time A* (astar), MDDs (mdd) and earliest arrivals (earliest).
type lowLevelScratch struct {
	// vertexBan and edgeBan hold the vertex and edge constraints of the
	// agent being planned, loaded by buildCons: vertexBan[t*numCells+c]
	// == banStamp bans cell c at time t, edgeBan[(t*numCells+c)*4+d] ==
	// banStamp bans the step from c in direction d arriving at t.
	// Bumping banStamp clears both.
	vertexBan, edgeBan []uint32
	banStamp           uint32
	// banHorizon is the latest time of a vertex, edge or range
	// constraint, minCost the smallest cost the agent may have (from its
	// length constraints) and lastGoalBan the latest time at which the
	// agent is banned from its goal (-1 if never).
	banHorizon, minCost, lastGoalBan int32

	// visited marks the (time, cell) states that A* has generated
	// (== visitStamp), at t*numCells+c, and visitedNode holds their nodes
	// in llNodes. States past the horizon share the horizon's layer.
	visited     []uint32
	visitedNode []int32
	visitStamp  uint32
	llNodes     []llNode
	// llOpen is A*'s open list of indices into llNodes (see llKey). An
	// entry is stale when its node has been closed or reached with fewer
	// conflicts since.
	llOpen minHeap[uint64, uint8, int32]
	avoid  conflictAvoidance
	// finishDist is the distance table along which llPath completes a
	// path that ends short of the goal past the horizon.
	finishDist []int32

	// layerMark marks (time, cell) states of the layered searches (mdd,
	// earliest), at t*numCells+c; each search takes fresh stamps from
	// layerStamp. layerCells holds the cells of the layers in order and
	// layerStarts where each layer begins; both also serve as BFS queues.
	layerMark   []uint32
	layerStamp  uint32
	layerCells  []int32
	layerStarts []int32
}

// llNode is a space-time A* node: the agent is on cell at time t, reached
// from node parent (-1 for the start) with conf conflicts so far; f is the
// lower bound on the cost of a path through it. A terminal node (term) is
// a final arrival, or a state past the horizon that llPath completes along
// a shortest path.
type llNode struct {
	cell, t, parent, conf, f int32
	closed, term             bool
}

// buildCons loads agent a's constraints at node x into the stamp tables and
// sets banHorizon (latest vertex/edge constraint time), minCost (smallest
// allowed cost) and lastGoalBan (latest vertex constraint on the agent's
// goal).
func (s *Solver) buildCons(a, x int32) {
	maxT, lb, last := int32(0), int32(0), int32(-1)
	goal := s.goal[a]
	s.resetBlocks()
	for y := x; y >= 0; y = s.nodes[y].parent {
		ci := s.nodes[y].constraint
		if ci < 0 {
			continue
		}
		c := &s.constraints[ci]
		if c.kind == consBlock {
			s.addBlock(a, c)
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
			if c.cell == goal {
				last = max(last, c.t)
			}
		default:
			maxT = max(maxT, c.t)
		}
	}
	s.finishBlocks()
	s.banHorizon, s.minCost, s.lastGoalBan = maxT, lb, last
	need := int(maxT+1) * s.numCells
	if len(s.vertexBan) < need {
		s.vertexBan = append(s.vertexBan, make([]uint32, need-len(s.vertexBan))...)
		s.edgeBan = append(s.edgeBan, make([]uint32, 4*need-len(s.edgeBan))...)
	}
	s.banStamp++
	if s.banStamp == 0 {
		clear(s.vertexBan)
		clear(s.edgeBan)
		s.banStamp = 1
	}
	if maxT == 0 {
		return
	}
	n := int32(s.numCells)
	for y := x; y >= 0; y = s.nodes[y].parent {
		ci := s.nodes[y].constraint
		if ci < 0 {
			continue
		}
		c := &s.constraints[ci]
		if c.agent != a {
			continue
		}
		switch c.kind {
		case consVertex:
			s.vertexBan[c.t*n+c.cell] = s.banStamp
		case consEdge:
			s.edgeBan[(c.t*n+c.cell)*4+s.dir(c.cell, c.to)] = s.banStamp
		case consRange:
			for t := int32(1); t <= c.t; t++ {
				s.vertexBan[t*n+c.cell] = s.banStamp
			}
		}
	}
}

// dir returns the adjacency slot (Move-1) of the step a -> b.
func (s *Solver) dir(a, b int32) int32 {
	switch b - a {
	case -int32(s.width):
		return 0
	case int32(s.width):
		return 1
	case -1:
		return 2
	}
	return 3
}

// conflictAvoidance is the conflict-avoidance table (CAT) of the low level:
// where the other agents' paths at the node being replanned are, so that
// the search can prefer, among cheapest paths, those with fewer conflicts.
type conflictAvoidance struct {
	// agentsAt holds, per time t <= horizon and cell c, at t*layer+c, the
	// mask of the other agents on c at t.
	agentsAt []uint16
	horizon  int32 // the largest time with an entry: the longest other path
	layer    int32 // cells per time layer (the number of cells)
	// goalArrival holds per cell the final-arrival time of the other agent
	// whose goal it is (it stays there afterwards), or -1.
	goalArrival []int32
}

// count counts the conflicts of stepping c -> c2 arriving at t2 with
// the other agents' paths: vertex conflicts, swaps and agents parked on
// their goals.
func (ca *conflictAvoidance) count(c, c2, t2 int32) int32 {
	var k int32
	n := ca.layer
	if t2 <= ca.horizon {
		k = int32(bits.OnesCount16(ca.agentsAt[t2*n+c2]))
		if c2 != c {
			k += int32(bits.OnesCount16(ca.agentsAt[t2*n+c] & ca.agentsAt[(t2-1)*n+c2]))
		}
	}
	if g := ca.goalArrival[c2]; g >= 0 && t2 > g {
		k++
	}
	return k
}

// catBuild loads the paths of the other agents of node x into the
// conflict-avoidance table; catClear undoes it.
func (s *Solver) catBuild(a, x int32) {
	var hmax int32
	base := s.nodes[x].paths
	for j := int32(0); j < int32(s.numAgents); j++ {
		if r := s.nodePaths[base+j]; j != a && r.length > 0 {
			hmax = max(hmax, r.length-1)
		}
	}
	ca := &s.avoid
	ca.horizon = hmax
	ca.layer = int32(s.numCells)
	need := int(hmax+1) * s.numCells
	if len(ca.agentsAt) < need {
		ca.agentsAt = append(ca.agentsAt, make([]uint16, need-len(ca.agentsAt))...)
	}
	n := int32(s.numCells)
	for j := int32(0); j < int32(s.numAgents); j++ {
		r := s.nodePaths[base+j]
		if j == a || r.length == 0 {
			continue
		}
		for t, c := range s.arena[r.off : r.off+r.length] {
			ca.agentsAt[int32(t)*n+c] |= 1 << j
		}
		ca.goalArrival[s.goal[j]] = r.length - 1
	}
}

// catClear removes the paths that catBuild loaded.
func (s *Solver) catClear(a, x int32) {
	base := s.nodes[x].paths
	n := int32(s.numCells)
	ca := &s.avoid
	for j := int32(0); j < int32(s.numAgents); j++ {
		r := s.nodePaths[base+j]
		if j == a || r.length == 0 {
			continue
		}
		for t, c := range s.arena[r.off : r.off+r.length] {
			ca.agentsAt[int32(t)*n+c] = 0
		}
		ca.goalArrival[s.goal[j]] = -1
	}
}

// llKey is the low-level open list's order: by f, then fewer conflicts
// (capped at 0xFFFF), then later times first (capped at 0xFFFF).
func llKey(f, conf, t int32) uint64 {
	return uint64(f)<<32 | uint64(min(conf, 0xFFFF))<<16 | uint64(0xFFFF-min(t, 0xFFFF))
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

// astar is lowLevel's search, once the constraints and the
// conflict-avoidance table are loaded.
func (s *Solver) astar(a, ub int32) (int32, int32, bool, error) {
	n := int32(s.numCells)
	start, goal := s.start[a], s.goal[a]
	h := s.goalDist[a*n : (a+1)*n]
	lb, last := s.minCost, s.lastGoalBan
	if start == goal && lb == 0 && last < 0 {
		off := int32(len(s.arena))
		s.arena = append(s.arena, start)
		return off, 1, true, nil
	}
	ub = min(ub, s.maxCost)
	if max(h[start], lb) > ub {
		return 0, 0, false, nil
	}
	tcap := max(s.banHorizon, lb, s.avoid.horizon, s.blockHorizon) + 1
	// Past tcap nothing changes any more: finish paths along shortest
	// paths (that avoid the blocked cells).
	hEnd := s.finishDistances(goal, h, tcap)
	s.finishDist = hEnd
	q := llSearch{h: h, hEnd: hEnd, goal: goal, lb: lb, last: last, ub: ub, tcap: tcap,
		stamp: s.llReset(int(tcap+1) * s.numCells)}
	f0 := max(h[start], lb)
	s.llNodes = append(s.llNodes, llNode{cell: start, t: 0, parent: -1, f: f0})
	s.visited[start] = q.stamp
	s.visitedNode[start] = 0
	s.llOpen.push(llKey(f0, 0, 0), 0, 0)
	for s.llOpen.len() > 0 {
		it := s.llOpen.pop()
		xn := &s.llNodes[it.val]
		if xn.closed || int32((it.key>>16)&0xFFFF) != min(xn.conf, 0xFFFF) {
			continue
		}
		xn.closed = true
		if xn.term {
			return s.llPath(it.val, a)
		}
		s.expansions++
		if s.expansions > s.search.maxExpansions {
			return 0, 0, false, &BudgetError{Nodes: s.generated, Expansions: s.expansions}
		}
		s.llExpand(&q, it.val)
	}
	return 0, 0, false, nil
}

// llSearch is what one astar call reads while it expands nodes: the
// agent's distance tables, goal and cost bounds, the time past which no
// constraint applies, and the visit stamp.
type llSearch struct {
	h, hEnd        []int32 // distances to the goal; and avoiding blocked cells
	goal, lb, last int32   // goal cell, minCost, lastGoalBan
	ub, tcap       int32   // cost bound; the time past which paths finish along hEnd
	stamp          uint32  // visited[i] == stamp marks a visited (time, cell)
}

// llReset readies the low-level pool, open list and visited table (grown
// to need entries) for a new search and returns its visit stamp.
func (s *Solver) llReset(need int) uint32 {
	if len(s.visited) < need {
		s.visited = append(s.visited, make([]uint32, need-len(s.visited))...)
		s.visitedNode = append(s.visitedNode, make([]int32, need-len(s.visitedNode))...)
	}
	s.visitStamp++
	if s.visitStamp == 0 {
		clear(s.visited)
		s.visitStamp = 1
	}
	s.llNodes = s.llNodes[:0]
	s.llOpen.reset()
	return s.visitStamp
}

// llExpand generates the successors of pool node cur (wait and the four
// moves) that the constraints, blocked cells and cost bound allow.
func (s *Solver) llExpand(q *llSearch, cur int32) {
	n := int32(s.numCells)
	xn := &s.llNodes[cur]
	c, t, conf := xn.cell, xn.t, xn.conf
	t2 := t + 1
	for m := int32(0); m < 5; m++ {
		var c2 int32
		if m == 0 {
			if s.search.noWait {
				continue
			}
			c2 = c
		} else {
			c2 = s.neighbours[c*4+m-1]
			if c2 < 0 {
				continue
			}
		}
		if t2 <= s.banHorizon {
			if s.vertexBan[t2*n+c2] == s.banStamp {
				continue
			}
			if m > 0 && s.edgeBan[(t2*n+c)*4+m-1] == s.banStamp {
				continue
			}
		}
		if bf := s.blockedFrom[c2]; bf >= 0 && t2 >= bf {
			continue
		}
		f2 := max(t2+q.h[c2], q.lb)
		if f2 > q.ub {
			continue
		}
		conf2 := conf + s.avoid.count(c, c2, t2)
		if c2 == q.goal && m != 0 && t2 >= q.lb && t2 > q.last {
			// Final arrival: the agent stays here for good.
			idx := int32(len(s.llNodes))
			s.llNodes = append(s.llNodes, llNode{cell: c2, t: t2, parent: cur, conf: conf2, f: t2, term: true})
			s.llOpen.push(llKey(t2, conf2, t2), 0, idx)
			continue
		}
		si := t2*n + c2
		term := false
		if t2 >= q.tcap {
			if c2 == q.goal {
				continue // waiting on the goal past the horizon never helps
			}
			// No constraints ahead: finish along a shortest path.
			if q.hEnd[c2] < 0 {
				continue
			}
			f2 = t2 + q.hEnd[c2]
			if f2 > q.ub {
				continue
			}
			si, term = q.tcap*n+c2, true
		}
		// A visited slot keeps its node: give it a better parent when this
		// reaches it with fewer conflicts and it is still open.
		if s.visited[si] == q.stamp {
			e := &s.llNodes[s.visitedNode[si]]
			if e.closed || e.conf <= conf2 {
				continue
			}
			e.conf, e.parent = conf2, cur
			s.llOpen.push(llKey(f2, conf2, t2), 0, s.visitedNode[si])
			continue
		}
		idx := int32(len(s.llNodes))
		s.llNodes = append(s.llNodes, llNode{cell: c2, t: t2, parent: cur, conf: conf2, f: f2, term: term})
		s.visited[si], s.visitedNode[si] = q.stamp, idx
		s.llOpen.push(llKey(f2, conf2, t2), 0, idx)
	}
}

// llPath writes the path ending in pool node idx (and, for a node short of
// the goal, a shortest completion) to the cell arena.
func (s *Solver) llPath(idx, a int32) (int32, int32, bool, error) {
	end := s.llNodes[idx]
	h := s.finishDist
	total := end.f + 1
	off := int32(len(s.arena))
	for range total {
		s.arena = append(s.arena, 0)
	}
	p := s.arena[off : off+total]
	for i := idx; i >= 0; i = s.llNodes[i].parent {
		p[s.llNodes[i].t] = s.llNodes[i].cell
	}
	c := end.cell
	for t := end.t + 1; t < total; t++ {
		best, bestConf := int32(-1), int32(1<<30)
		for m := int32(0); m < 4; m++ {
			c2 := s.neighbours[c*4+m]
			if c2 < 0 || h[c2] != h[c]-1 {
				continue
			}
			if k := s.avoid.count(c, c2, t); k < bestConf {
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
	n := int32(s.numCells)
	start, goal := s.start[a], s.goal[a]
	need := int(c+1) * s.numCells
	if len(s.layerMark) < need {
		s.layerMark = append(s.layerMark, make([]uint32, need-len(s.layerMark))...)
	}
	if s.layerStamp >= 1<<31 {
		clear(s.layerMark)
		s.layerStamp = 0
	}
	fwd, bwd := s.layerStamp+1, s.layerStamp+2
	s.layerStamp += 2
	q := mddSearch{h: s.goalDist[a*n : (a+1)*n], goal: goal, c: c}
	layer, offs := s.mddForward(&q, start, fwd)
	out := int32(len(s.arena))
	for range c + 1 {
		s.arena = append(s.arena, -1)
	}
	sum := s.arena[out : out+c+1]
	if s.layerMark[c*n+goal] == fwd {
		s.layerMark[c*n+goal] = bwd
		sum[c] = goal
	}
	s.mddBackward(&q, layer, offs, bwd, sum)
	s.layerCells = layer[:0]
	s.layerStarts = offs[:0]
	return out
}

// mddSearch is what one mdd call reads: the agent's distances to its goal,
// the goal and the path cost.
type mddSearch struct {
	h       []int32
	goal, c int32
}

// mddValid reports whether the step u -> v (move m) arriving at t2 is
// allowed on a cost-q.c path.
func (s *Solver) mddValid(q *mddSearch, u, v, m, t2 int32) bool {
	n := int32(s.numCells)
	if m == 0 && s.search.noWait {
		return false
	}
	if t2 <= s.banHorizon {
		if s.vertexBan[t2*n+v] == s.banStamp {
			return false
		}
		if m > 0 && s.edgeBan[(t2*n+u)*4+m-1] == s.banStamp {
			return false
		}
	}
	if bf := s.blockedFrom[v]; bf >= 0 && t2 >= bf {
		return false
	}
	if t2+q.h[v] > q.c {
		return false
	}
	if t2 == q.c && (v != q.goal || m == 0) {
		return false
	}
	return true
}

// mddForward builds the layers of cells reachable at t = 0..c by allowed
// steps, marking each (t, cell) with fwd. layer[offs[t]:offs[t+1]] are the
// cells at t.
func (s *Solver) mddForward(q *mddSearch, start int32, fwd uint32) (layer, offs []int32) {
	n := int32(s.numCells)
	layer = s.layerCells[:0]
	offs = s.layerStarts[:0]
	offs = append(offs, 0)
	layer = append(layer, start)
	s.layerMark[start] = fwd
	for t := int32(0); t < q.c; t++ {
		lo, hi := offs[t], int32(len(layer))
		offs = append(offs, hi)
		for i := lo; i < hi; i++ {
			u := layer[i]
			for m := int32(0); m < 5; m++ {
				v := u
				if m > 0 {
					v = s.neighbours[u*4+m-1]
					if v < 0 {
						continue
					}
				}
				if !s.mddValid(q, u, v, m, t+1) {
					continue
				}
				if si := (t+1)*n + v; s.layerMark[si] != fwd {
					s.layerMark[si] = fwd
					layer = append(layer, v)
				}
			}
		}
	}
	offs = append(offs, int32(len(layer)))
	return layer, offs
}

// mddBackward walks the layers from t = c-1 down, marking with bwd the
// cells with an allowed step to a bwd cell at t+1, and sets sum[t] where
// exactly one cell is marked.
func (s *Solver) mddBackward(q *mddSearch, layer, offs []int32, bwd uint32, sum []int32) {
	n := int32(s.numCells)
	for t := q.c - 1; t >= 0; t-- {
		cnt, one := 0, int32(-1)
		for i := offs[t]; i < offs[t+1]; i++ {
			u := layer[i]
			for m := int32(0); m < 5; m++ {
				v := u
				if m > 0 {
					v = s.neighbours[u*4+m-1]
					if v < 0 {
						continue
					}
				}
				if s.layerMark[(t+1)*n+v] == bwd && s.mddValid(q, u, v, m, t+1) {
					s.layerMark[t*n+u] = bwd
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
}

// mddOf returns agent a's MDD summary at node x, computing it if needed.
func (s *Solver) mddOf(x, a int32) []int32 {
	ri := s.nodes[x].paths + a
	r := s.nodePaths[ri]
	if r.mdd < 0 {
		s.buildCons(a, x)
		r.mdd = s.mdd(a, r.length-1)
		s.nodePaths[ri].mdd = r.mdd
	}
	return s.arena[r.mdd : r.mdd+r.length]
}
