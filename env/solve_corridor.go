package env

// corridorScratch is the scratch space of corridor reasoning (see
// corridor).
type corridorScratch struct {
	// corridorCells are the cells of the last corridor found (corridorAt);
	// a cell c is among them when inCorridor[c] == corridorStamp.
	corridorCells []int32
	inCorridor    []uint32
	corridorStamp uint32
	// targetDist holds the distances to a target cell (staticDist).
	targetDist []int32
}

// degree returns the number of free neighbours of cell c.
func (s *Solver) degree(c int32) int {
	d := 0
	for m := int32(0); m < 4; m++ {
		if s.neighbours[c*4+m] >= 0 {
			d++
		}
	}
	return d
}

// corridorAt collects the corridor through cell v: the maximal chain of
// free cells of degree 2 containing v, into s.corridorCells (marked in
// s.inCorridor with s.corridorStamp), and returns the cells e and f just outside its two
// ends. It reports false when v is not in such a chain, or the chain ends
// in a dead end or closes on itself.
func (s *Solver) corridorAt(v int32) (e, f int32, ok bool) {
	if s.degree(v) != 2 {
		return 0, 0, false
	}
	if len(s.inCorridor) < s.numCells {
		s.inCorridor = make([]uint32, s.numCells)
	}
	s.corridorStamp++
	if s.corridorStamp == 0 {
		clear(s.inCorridor)
		s.corridorStamp = 1
	}
	s.corridorCells = append(s.corridorCells[:0], v)
	s.inCorridor[v] = s.corridorStamp
	var ends [2]int32
	side := 0
	for m := int32(0); m < 4; m++ {
		nb := s.neighbours[v*4+m]
		if nb < 0 {
			continue
		}
		prev, cur := v, nb
		for s.degree(cur) == 2 {
			if s.inCorridor[cur] == s.corridorStamp {
				return 0, 0, false // a cycle of degree-2 cells
			}
			s.inCorridor[cur] = s.corridorStamp
			s.corridorCells = append(s.corridorCells, cur)
			next := int32(-1)
			for m2 := int32(0); m2 < 4; m2++ {
				if c2 := s.neighbours[cur*4+m2]; c2 >= 0 && c2 != prev {
					next = c2
				}
			}
			prev, cur = cur, next
		}
		if s.degree(cur) < 2 || s.inCorridor[cur] == s.corridorStamp {
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
	v := cf.cell
	if cf.kind == confEdge && s.degree(v) != 2 {
		v = cf.to
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
	if s.inCorridor[s.start[a1]] == s.corridorStamp || s.inCorridor[s.start[a2]] == s.corridorStamp {
		return ctCons{}, ctCons{}, false
	}
	e1, e2 := from1, to1
	k := int32(len(s.corridorCells))
	t1x := s.earliestAround(a1, e2)
	t2x := s.earliestAround(a2, e1)
	t1 := s.earliest(x, a1, e2)
	t2 := s.earliest(x, a2, e1)
	r1 := min(t1x-1, t2+k)
	r2 := min(t2x-1, t1+k)
	if !s.visits(x, a1, e2, r1) || !s.visits(x, a2, e1, r2) {
		return ctCons{}, ctCons{}, false
	}
	return ctCons{agent: a1, kind: consRange, cell: e2, t: r1}, ctCons{agent: a2, kind: consRange, cell: e1, t: r2}, true
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
	n := int32(s.numCells)
	start := s.start[a]
	if start == target {
		return 0
	}
	stamp := s.nextLayerStamp()
	layer := append(s.layerCells[:0], start)
	lo := 0
	for t := int32(0); t <= s.banHorizon; t++ {
		hi := len(layer)
		for i := lo; i < hi; i++ {
			u := layer[i]
			for m := int32(0); m < 5; m++ {
				v := u
				if m > 0 {
					if v = s.neighbours[u*4+m-1]; v < 0 {
						continue
					}
				}
				if t+1 <= s.banHorizon {
					if s.vertexBan[(t+1)*n+v] == s.banStamp {
						continue
					}
					if m > 0 && s.edgeBan[((t+1)*n+u)*4+m-1] == s.banStamp {
						continue
					}
				}
				if v == target {
					s.layerCells = layer[:0]
					return t + 1
				}
				if si := (t+1)*n + v; s.layerMark[si] != stamp {
					s.layerMark[si] = stamp
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
		if d := s.targetDist[u]; d >= 0 {
			best = min(best, s.banHorizon+1+d)
		}
	}
	s.layerCells = layer[:0]
	return best
}

// nextLayerStamp sizes s.layerMark for one mark per (time, cell) up to
// banHorizon+1 and returns a fresh stamp, so that no cell counts as marked.
func (s *Solver) nextLayerStamp() uint32 {
	need := int(s.banHorizon+2) * s.numCells
	if len(s.layerMark) < need {
		s.layerMark = append(s.layerMark, make([]uint32, need-len(s.layerMark))...)
	}
	if s.layerStamp >= 1<<31 {
		clear(s.layerMark)
		s.layerStamp = 0
	}
	s.layerStamp++
	return s.layerStamp
}

// staticDist fills s.targetDist with distances to target over free cells,
// avoiding the cells marked with avoid in s.inCorridor when avoid is not 0.
func (s *Solver) staticDist(target int32, avoid uint32) {
	s.targetDist = solvGrow(s.targetDist, s.numCells)
	for i := range s.targetDist {
		s.targetDist[i] = -1
	}
	q := s.layerStarts[:0]
	s.targetDist[target] = 0
	q = append(q, target)
	for h := 0; h < len(q); h++ {
		u := q[h]
		for m := int32(0); m < 4; m++ {
			v := s.neighbours[u*4+m]
			if v >= 0 && s.targetDist[v] < 0 && (avoid == 0 || s.inCorridor[v] != avoid) {
				s.targetDist[v] = s.targetDist[u] + 1
				q = append(q, v)
			}
		}
	}
	s.layerStarts = q[:0]
}

// earliestAround returns a lower bound on the time agent a can reach cell
// target without crossing the corridor marked in s.inCorridor: its distance in
// the grid without the corridor. (A path that steps into the corridor and
// back out on the same side is no faster, whatever the constraints.)
func (s *Solver) earliestAround(a, target int32) int32 {
	s.staticDist(target, s.corridorStamp)
	if d := s.targetDist[s.start[a]]; d >= 0 {
		return d
	}
	return solvInf
}
