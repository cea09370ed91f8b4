package env

// Target reasoning (Li et al., "Pairwise symmetry reasoning for multi-agent
// path finding search", 2021). A target conflict (agent i is on its goal for
// good by time t and agent j is on that goal at t) splits into "i's cost
// exceeds t" (a length constraint) and "i's cost is at most t and no other
// agent is on i's goal from t on" (a block constraint): a partition of the
// solutions, where plain CBS would only forbid j the cell at t. The low
// level honours a block through the state below, loaded by buildCons.

// targetScratch is the block constraints that apply to the agent being
// planned at the node being replanned.
type targetScratch struct {
	// maxCost is the agent's largest allowed cost: the smallest t of its
	// own block constraints (it must finish by t), solvInf if none.
	maxCost int32
	// blockedFrom holds per cell the earliest time from which the agent
	// may not be on it (another agent's goal that is blocked for it), -1
	// if none; blockedCells lists the cells with an entry.
	blockedFrom  []int32
	blockedCells []int32
	// blockHorizon is the latest time at which a cell becomes blocked (0
	// if none): from then on the blocked cells are blocked for good.
	blockHorizon int32
	// distAvoidingBlocks holds the distances to the agent's goal over the
	// free cells that are not blocked (see finishDistances).
	distAvoidingBlocks []int32
}

// resetBlocks forgets the block constraints of the previous agent.
func (ts *targetScratch) resetBlocks() {
	for _, c := range ts.blockedCells {
		ts.blockedFrom[c] = -1
	}
	ts.blockedCells = ts.blockedCells[:0]
	ts.blockHorizon = 0
	ts.maxCost = solvInf
}

// addBlock applies block constraint c to agent a: a bound on a's cost if
// it is a's own, otherwise a cell a may not be on from c.t on.
func (ts *targetScratch) addBlock(a int32, c *ctCons) {
	if c.agent == a {
		ts.maxCost = min(ts.maxCost, c.t)
		return
	}
	if bf := ts.blockedFrom[c.cell]; bf < 0 || c.t < bf {
		if bf < 0 {
			ts.blockedCells = append(ts.blockedCells, c.cell)
		}
		ts.blockedFrom[c.cell] = c.t
	}
}

// finishBlocks computes blockHorizon once every block has been added.
func (ts *targetScratch) finishBlocks() {
	for _, c := range ts.blockedCells {
		ts.blockHorizon = max(ts.blockHorizon, ts.blockedFrom[c])
	}
}

// targetSplit returns the two constraints that split target conflict cf:
// either i's cost exceeds t, or i finishes by t and then nobody else may be
// on its goal from t on. With noTarget the second is plain CBS's: j may not
// be on the cell at t.
func (s *Solver) targetSplit(cf *ctConflict) (ctCons, ctCons) {
	length := ctCons{agent: cf.i, kind: consLength, t: cf.t}
	if s.noTarget {
		return length, ctCons{agent: cf.j, kind: consVertex, cell: cf.cell, t: cf.t}
	}
	return length, ctCons{agent: cf.i, kind: consBlock, cell: cf.cell, t: cf.t}
}

// targetCardinal reports, for each side of target conflict cf at node x,
// whether its constraint raises the agent's cost. For agent i it always
// does (its cost must exceed t). Agent j, blocked from t on, pays when
// every cheapest path of j is on the cell at some time from t on (with
// noTarget: at t).
func (s *Solver) targetCardinal(x int32, cf *ctConflict) (ki, kj int8) {
	mj := s.mddOf(x, cf.j)
	if s.noTarget {
		if mj[cf.t] == cf.cell {
			kj = 1
		}
		return 1, kj
	}
	for t := cf.t; t < int32(len(mj)); t++ {
		if mj[t] == cf.cell {
			return 1, 1
		}
	}
	return 1, 0
}

// replanBlocked replans at node child (a copy of x plus block constraint
// c) every agent other than c's whose path at x is on the blocked cell at
// or after c's time. It reports false when one of them has no path.
func (s *Solver) replanBlocked(x, child int32, c *ctCons) (bool, error) {
	for a := int32(0); a < int32(s.numAgents); a++ {
		if a == c.agent {
			continue
		}
		p := s.path(x, a)
		for t := c.t; t < int32(len(p)); t++ {
			if p[t] == c.cell {
				if ok, err := s.replanAgent(child, a); !ok || err != nil {
					return false, err
				}
				break
			}
		}
	}
	return true, nil
}

// finishDistances returns the distances to goal along which the low level
// finishes paths past horizon, when no constraint changes any more: h when
// no cell is blocked, otherwise distances that avoid the blocked cells.
func (s *Solver) finishDistances(goal int32, h []int32, horizon int32) []int32 {
	if len(s.blockedCells) == 0 {
		return h
	}
	s.distAvoidingBlocks = solvGrow(s.distAvoidingBlocks, s.numCells)
	s.bfsAvoid(goal, s.distAvoidingBlocks, horizon)
	return s.distAvoidingBlocks
}

// bfsAvoid fills d with distances to src over free cells that are not
// blocked at time from (-1 unreachable).
func (s *Solver) bfsAvoid(src int32, d []int32, from int32) {
	for i := range d {
		d[i] = -1
	}
	q := s.layerStarts[:0]
	d[src] = 0
	q = append(q, src)
	for h := 0; h < len(q); h++ {
		u := q[h]
		for m := int32(0); m < 4; m++ {
			v := s.neighbours[u*4+m]
			if v >= 0 && d[v] < 0 {
				if bf := s.blockedFrom[v]; bf >= 0 && bf <= from {
					continue
				}
				d[v] = d[u] + 1
				q = append(q, v)
			}
		}
	}
	s.layerStarts = q[:0]
}
