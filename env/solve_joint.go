package env

import (
	"fmt"
	"math/bits"
)

// jointScratch is the scratch space of the joint-configuration searches
// (jointCheck and jointSolve). A configuration places every agent on a
// distinct free cell; its code (jointEncode) is the base-len(freeCells)
// number whose digit i is agent i's free-cell index. A joint state of
// jointSolve is a code shifted left by numAgents, or'ed with the mask of
// the agents that have finished.
type jointScratch struct {
	freeIndex []int32 // per cell: its index among the free cells, -1 for a hole
	freeCells []int32 // per free index: the cell
	// jointPos is the configuration being expanded (jointDecode), movePos
	// the one jointMoves is building from it and succPos a successor
	// decoded by jointSolve.
	jointPos, movePos, succPos []int32
	// agentAt holds per cell the agent on it in jointPos, and claimedBy
	// the agent that moves onto it in movePos; -1 if none.
	agentAt, claimedBy []int32
	successors         []uint64 // the codes of jointPos's successors
	// jointSeen and jointQueue are jointCheck's breadth-first search.
	jointSeen  map[uint64]struct{}
	jointQueue []uint64
	// jointRecords holds jointSolve's best record per joint state and
	// jointOpen its open list, ordered by a packed priority (see offer).
	jointRecords map[uint64]jointRecord
	jointOpen    minHeap[uint64, uint8, jointItem]
}

const (
	// Joint-configuration solvability check: run it before CBS when the
	// number of joint configurations is at most solvJointEager, and after
	// solvJointLateNodes CT nodes when it is at most solvJointLate.
	solvJointEager     = 2048
	solvJointLate      = 60_000
	solvJointLateNodes = 200
)

// Values of problem.jointStatus.
const (
	solvJointUnknown   uint8 = iota // jointCheck has not run
	solvJointReachable              // the goal configuration is reachable
	solvJointTooBig                 // jointCheck cannot run: joint states do not fit in 63 bits (see jointPrep)
)

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
	for i := 0; i < s.numAgents; i++ {
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
	n := s.numCells
	s.freeIndex = solvGrow(s.freeIndex, n)
	s.freeCells = s.freeCells[:0]
	for c := 0; c < n; c++ {
		s.freeIndex[c] = -1
		if !s.holes[c] {
			s.freeIndex[c] = int32(len(s.freeCells))
			s.freeCells = append(s.freeCells, int32(c))
		}
	}
	F := uint64(len(s.freeCells))
	lim := uint64(1) << s.numAgents
	for i := 0; i < s.numAgents; i++ {
		if lim > (1<<62)/F {
			return false
		}
		lim *= F
	}
	s.jointPos = solvGrow(s.jointPos, s.numAgents)
	s.movePos = solvGrow(s.movePos, s.numAgents)
	s.agentAt = solvGrow(s.agentAt, n)
	s.claimedBy = solvGrow(s.claimedBy, n)
	for c := range s.agentAt {
		s.agentAt[c], s.claimedBy[c] = -1, -1
	}
	if s.jointSeen == nil {
		s.jointSeen = make(map[uint64]struct{})
	}
	if s.jointRecords == nil {
		s.jointRecords = make(map[uint64]jointRecord)
	}
	return true
}

// jointEncode returns the configuration code of pos.
func (s *Solver) jointEncode(pos []int32) uint64 {
	F := uint64(len(s.freeCells))
	var code uint64
	for i := len(pos) - 1; i >= 0; i-- {
		code = code*F + uint64(s.freeIndex[pos[i]])
	}
	return code
}

// jointDecode writes the configuration with the given code into s.jointPos.
func (s *Solver) jointDecode(code uint64) {
	F := uint64(len(s.freeCells))
	for i := 0; i < s.numAgents; i++ {
		s.jointPos[i] = s.freeCells[code%F]
		code /= F
	}
}

// jointSuccessors fills s.successors with the codes of the joint
// successors of the configuration in s.jointPos; agents in frozen stay put.
func (s *Solver) jointSuccessors(frozen uint16, noWait bool) {
	for i := 0; i < s.numAgents; i++ {
		s.agentAt[s.jointPos[i]] = int32(i)
	}
	s.successors = s.successors[:0]
	s.jointMoves(0, frozen, noWait)
	for i := 0; i < s.numAgents; i++ {
		s.agentAt[s.jointPos[i]] = -1
	}
}

// jointCheck decides by breadth-first search over joint configurations
// whether the goal configuration can be reached at all. It returns an
// *UnsolvableError when it cannot. The work counts as expansions.
func (s *Solver) jointCheck() error {
	s.jointStatus = solvJointTooBig
	if !s.jointPrep() {
		return nil
	}
	from := s.jointEncode(s.start[:s.numAgents])
	to := s.jointEncode(s.goal[:s.numAgents])
	clear(s.jointSeen)
	defer clear(s.jointSeen)
	s.jointQueue = append(s.jointQueue[:0], from)
	s.jointSeen[from] = struct{}{}
	for h := 0; h < len(s.jointQueue); h++ {
		s.jointDecode(s.jointQueue[h])
		s.jointSuccessors(0, false)
		s.expansions += 1 + len(s.successors)
		if s.expansions > s.search.maxExpansions {
			return &BudgetError{Nodes: s.generated, Expansions: s.expansions}
		}
		for _, nx := range s.successors {
			if nx == to {
				s.jointStatus = solvJointReachable
				return nil
			}
			if _, ok := s.jointSeen[nx]; !ok {
				s.jointSeen[nx] = struct{}{}
				s.jointQueue = append(s.jointQueue, nx)
			}
		}
	}
	return &UnsolvableError{Agent: -1, Reason: fmt.Sprintf("the goal configuration is unreachable (searched all %d reachable joint configurations)", len(s.jointQueue))}
}

// jointMoves enumerates the joint successors of s.jointPos for agents i..
// and appends their codes to s.successors.
func (s *Solver) jointMoves(i int, frozen uint16, noWait bool) {
	if i == s.numAgents {
		s.successors = append(s.successors, s.jointEncode(s.movePos[:s.numAgents]))
		return
	}
	u := s.jointPos[i]
	for m := int32(0); m < 5; m++ {
		v := u
		if m > 0 {
			if frozen&(1<<i) != 0 {
				break
			}
			v = s.neighbours[u*4+m-1]
			if v < 0 {
				continue
			}
		} else if noWait && frozen&(1<<i) == 0 {
			continue
		}
		if s.claimedBy[v] >= 0 {
			continue // vertex conflict
		}
		if v != u {
			// Swap: the agent now at v moves to u.
			if j := s.agentAt[v]; j >= 0 && j < int32(i) && s.movePos[j] == u {
				continue
			}
		}
		s.claimedBy[v] = int32(i)
		s.movePos[i] = v
		s.jointMoves(i+1, frozen, noWait)
		s.claimedBy[v] = -1
	}
}

// jointRecord is a joint-search state record: sum of costs and time so
// far, and the parent state.
type jointRecord struct {
	g, t   int32
	parent uint64
}

// jointItem is an entry of the joint search's open list: a state with
// the cost and time it was offered with (stale if its record has changed
// since).
type jointItem struct {
	key  uint64
	g, t int32
}

// solvNoParent is the parent of jointSolve's start states.
const solvNoParent = ^uint64(0)

// solvJointSolveLimit is the largest state space (configurations times
// finished masks) on which jointSolve is tried, and solvJointSolveStates
// caps the states it may store.
const (
	solvJointSolveLimit  = 1 << 22 // joint configurations x finished masks
	solvJointSolveStates = 1 << 20
)

// jointSolvable reports whether the joint search is worth trying.
func (s *Solver) jointSolvable() bool {
	return s.jointConfigs < int(solvInf)>>s.numAgents && s.jointConfigs<<s.numAgents <= solvJointSolveLimit
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
	k := s.numAgents
	all := uint16(1)<<k - 1
	clear(s.jointRecords)
	defer clear(s.jointRecords)
	s.jointOpen.reset()
	s.succPos = solvGrow(s.succPos, k)
	next := s.succPos
	s.jointOfferAll(s.start[:k], 0, 0, 0, solvNoParent)
	for s.jointOpen.len() > 0 {
		it := s.jointOpen.pop().val
		rec := s.jointRecords[it.key]
		if rec.g != it.g || rec.t != it.t {
			continue // stale
		}
		done := uint16(it.key & uint64(all))
		if done == all {
			s.jointExtract(it.key)
			return true, true, nil
		}
		if len(s.jointRecords) > solvJointSolveStates {
			return false, false, nil
		}
		s.jointDecode(it.key >> k)
		s.jointSuccessors(done, sp.noWait)
		s.expansions += 1 + len(s.successors)
		if s.expansions > sp.maxExpansions {
			return false, true, &BudgetError{Nodes: s.generated, Expansions: s.expansions}
		}
		pay := int32(k - bits.OnesCount16(done))
		for _, code := range s.successors {
			F := uint64(len(s.freeCells))
			c := code
			for i := 0; i < k; i++ {
				next[i] = s.freeCells[c%F]
				c /= F
			}
			s.jointOfferAll(next, done, it.g+pay, it.t+1, it.key)
		}
	}
	return false, true, nil
}

// jointOfferAll offers pos with every subset of the unfinished agents that
// stand on their goals marked finished.
func (s *Solver) jointOfferAll(pos []int32, done uint16, g, t int32, parent uint64) {
	var can uint16
	for i := 0; i < s.numAgents; i++ {
		if done&(1<<i) == 0 && pos[i] == s.goal[i] {
			can |= 1 << i
		}
	}
	for sub := can; ; sub = (sub - 1) & can {
		s.jointOffer(pos, done|sub, g, t, parent)
		if sub == 0 {
			break
		}
	}
}

// jointOffer records the joint state (configuration pos, finished agents
// done) reached with cost g at time t from parent, if it is new or better,
// and pushes it with its priority: (f, larger g first), or under
// MakespanObjective (makespan bound, f, larger g first), packed into one
// uint64.
func (s *Solver) jointOffer(pos []int32, done uint16, g, t int32, parent uint64) {
	sp := &s.search
	k := s.numAgents
	mk := sp.objective == MakespanObjective
	var hs, hm int32
	for i := 0; i < k; i++ {
		if done&(1<<i) == 0 {
			d := s.goalDist[i*s.numCells+int(pos[i])]
			hs += d
			hm = max(hm, d)
		}
	}
	if g+hs > sp.maxSOC || t+hm > sp.maxMakespan {
		return
	}
	key := s.jointEncode(pos)<<k | uint64(done)
	if old, ok := s.jointRecords[key]; ok {
		if mk && (old.t < t || (old.t == t && old.g <= g)) || !mk && old.g <= g {
			return
		}
	}
	s.jointRecords[key] = jointRecord{g: g, t: t, parent: parent}
	var prio uint64
	if mk {
		prio = uint64(t+hm)<<40 | uint64(g+hs)<<20 | uint64(0xFFFFF-g)
	} else {
		prio = uint64(g+hs)<<32 | uint64(0xFFFFFFFF-uint32(g))
	}
	s.jointOpen.push(prio, 0, jointItem{key: key, g: g, t: t}) // prio orders fully: no tie
}

// jointExtract writes the plan ending in joint state key to s.solPaths:
// agent i's path runs until the first state in which it is finished.
func (s *Solver) jointExtract(key uint64) {
	k := s.numAgents
	var chain []uint64
	for x := key; x != solvNoParent; x = s.jointRecords[x].parent {
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
		s.jointDecode(x >> k)
		for i := 0; i < k; i++ {
			if finished&(1<<i) != 0 {
				continue
			}
			s.solPaths[i] = append(s.solPaths[i], s.jointPos[i])
			if x&(1<<i) != 0 {
				finished |= 1 << i
			}
		}
	}
}
