package env

import "fmt"

// Check is one of the paper's eight validity checks.
type Check uint8

// The eight checks, in the paper's order.
const (
	// CheckParsable: the answer parses (ParseAnswer succeeds).
	CheckParsable Check = iota
	// CheckLegalMove: every step is a wait or a move to a 4-neighbour.
	// This is geometry only: a one-cell step off the grid is a legal move
	// (it fails CheckInBounds); a jump of more than one cell, or a diagonal
	// step, fails CheckLegalMove whatever the cells are.
	CheckLegalMove
	// CheckConflictFree: no two agents share a cell at the same time
	// (vertex conflict) or swap cells in one step (edge conflict). Agents
	// hold their last cell after their path ends. Only cells on the grid
	// can conflict.
	CheckConflictFree
	// CheckGoalReached: every agent's path ends on its goal.
	CheckGoalReached
	// CheckStartCorrect: every agent's path begins on its start.
	CheckStartCorrect
	// CheckAgentCount: the plan has exactly one non-empty path per agent.
	CheckAgentCount
	// CheckHoleFree: no agent is on a hole at any listed timestep.
	CheckHoleFree
	// CheckInBounds: no agent is off the grid at any listed timestep.
	CheckInBounds
	// NumChecks is the number of checks.
	NumChecks
)

var planCheckNames = [NumChecks]string{"parsable", "legal_move", "conflict_free", "goal_reached", "start_correct", "agent_count", "hole_free", "in_bounds"}

func (c Check) String() string {
	if c < NumChecks {
		return planCheckNames[c]
	}
	return fmt.Sprintf("Check(%d)", uint8(c))
}

// FailureKind says what went wrong; each kind belongs to one Check.
type FailureKind uint8

// Failure kinds.
const (
	KindParse          FailureKind = iota // CheckParsable: the answer did not parse
	KindIllegalStep                       // CheckLegalMove: a step of more than one cell or diagonal
	KindVertexConflict                    // CheckConflictFree: two agents in one cell
	KindEdgeConflict                      // CheckConflictFree: two agents swap cells
	KindNotAtGoal                         // CheckGoalReached: the path ends off the goal
	KindWrongStart                        // CheckStartCorrect: the path begins off the start
	KindMissingAgent                      // CheckAgentCount: no path, or an empty path, for an agent
	KindExtraAgent                        // CheckAgentCount: a path beyond the instance's agents
	KindHole                              // CheckHoleFree: an agent on a hole
	KindOutOfBounds                       // CheckInBounds: an agent off the grid
	NumFailureKinds
)

var planKindNames = [NumFailureKinds]string{"parse", "illegal_step", "vertex_conflict", "edge_conflict", "not_at_goal", "wrong_start", "missing_agent", "extra_agent", "hole", "out_of_bounds"}

var planKindChecks = [NumFailureKinds]Check{CheckParsable, CheckLegalMove, CheckConflictFree, CheckConflictFree, CheckGoalReached, CheckStartCorrect, CheckAgentCount, CheckAgentCount, CheckHoleFree, CheckInBounds}

func (k FailureKind) String() string {
	if k < NumFailureKinds {
		return planKindNames[k]
	}
	return fmt.Sprintf("FailureKind(%d)", uint8(k))
}

// Check returns the check that k fails.
func (k FailureKind) Check() Check {
	if k < NumFailureKinds {
		return planKindChecks[k]
	}
	return NumChecks
}

// Failure is one broken rule.
//
//   - Agent: the agent (for a conflict, the lower-numbered of the two; for an
//     extra path, its index; -1 for a parse failure).
//   - Other: the other agent of a conflict, else -1.
//   - T: the timestep: the arrival time of an illegal step, an edge or
//     vertex conflict; the time an agent is off the grid or on a hole; the
//     last timestep of a path that ends off its goal; 0 for start and
//     agent-count failures and for parse failures.
//   - Cell: the cell involved (for an edge conflict, the cell Agent moves
//     into; for a missing agent, its start; for a parse failure, (0,0)).
type Failure struct {
	Check Check       `json:"check"`
	Kind  FailureKind `json:"kind"`
	Agent int         `json:"agent"`
	Other int         `json:"other"`
	T     int         `json:"t"`
	Cell  Pos         `json:"cell"`
}

func (f Failure) String() string {
	switch {
	case f.Kind == KindParse:
		return "parse"
	case f.Other >= 0:
		return fmt.Sprintf("%s: agents %d and %d at t=%d %v", f.Kind, f.Agent, f.Other, f.T, f.Cell)
	}
	return fmt.Sprintf("%s: agent %d at t=%d %v", f.Kind, f.Agent, f.T, f.Cell)
}

// MaxFailures is how many failures a Report stores; further ones are only
// counted (Report.Truncated, Report.Counts).
const MaxFailures = 64

// Report is the verifier's verdict on one plan. A Report can be reused:
// Verify resets it and keeps its buffers, so verifying with the same Report
// again does not allocate. It holds unexported scratch buffers: do not copy
// a Report that is still being reused (copy the fields you need).
type Report struct {
	// Passed says, per check, that no failure of that check was found.
	Passed [NumChecks]bool
	// Counts is the number of failures per check, stored or not.
	Counts [NumChecks]int
	// Failures lists the first MaxFailures failures found, in a fixed
	// order: agent count, then per agent (start, each timestep's bounds,
	// hole and step, goal), then conflicts by timestep.
	Failures []Failure
	// Truncated counts the failures found beyond MaxFailures.
	Truncated int
	// ParseErr is the parse error when CheckParsable failed, else nil.
	ParseErr *ParseError
	// Valid: all eight checks passed.
	Valid bool
	// Optimal: Valid, the instance is solved, and SOC is at most the
	// instance's optimal SOC (GapSOC <= 0). See OptimalFor for makespan.
	Optimal bool
	// SOC and Makespan are the plan's costs (Plan.Costs) over the paths of
	// existing agents, also when the plan is not valid; 0 after a parse error.
	SOC, Makespan int
	// GapSOC and GapMakespan are SOC - in.SOC and Makespan - in.Makespan
	// when the plan is valid and the instance is solved, else 0.
	GapSOC, GapMakespan int
	// CleanAgents is how many of the instance's agents have a path that
	// breaks no rule: no failure names the agent (a conflict names both
	// agents). 0 after a parse error; the agent count when Valid.
	CleanAgents int

	// scratch
	faulty       []bool  // per agent of the instance: a failure names it
	occA, occB   []int32 // per cell: latest occupant + 1 at t and t-1
	linkA, linkB []int32 // per agent: previous occupant of its cell + 1, then its cell
	parser       planParser
	flat         []Pos
	paths        [][]Pos
}

// OptimalFor reports whether the verified plan is valid and optimal under
// obj for in (cost at most in.Optimum(obj); in must be the verified instance).
func (r *Report) OptimalFor(in *Instance, obj Objective) bool {
	if !r.Valid || !in.Solved() {
		return false
	}
	if obj == MakespanObjective {
		return r.Makespan <= in.Makespan
	}
	return r.SOC <= in.SOC
}

// Cost returns the plan's cost under obj.
func (r *Report) Cost(obj Objective) int {
	if obj == MakespanObjective {
		return r.Makespan
	}
	return r.SOC
}

// Reset clears r, keeping its buffers.
func (r *Report) Reset() {
	r.Passed = [NumChecks]bool{}
	r.Counts = [NumChecks]int{}
	if cap(r.Failures) < MaxFailures {
		r.Failures = make([]Failure, 0, MaxFailures)
	}
	r.Failures = r.Failures[:0]
	r.Truncated = 0
	r.ParseErr = nil
	r.Valid, r.Optimal = false, false
	r.SOC, r.Makespan, r.GapSOC, r.GapMakespan = 0, 0, 0, 0
	r.CleanAgents = 0
	r.faulty = r.faulty[:0]
}

func (r *Report) add(kind FailureKind, agent, other, t int, cell Pos) {
	c := planKindChecks[kind]
	r.Counts[c]++
	for _, a := range [2]int{agent, other} {
		if a >= 0 && a < len(r.faulty) {
			r.faulty[a] = true
		}
	}
	if len(r.Failures) >= MaxFailures {
		r.Truncated++
		return
	}
	r.Failures = append(r.Failures, Failure{Check: c, Kind: kind, Agent: agent, Other: other, T: t, Cell: cell})
}

func planGrow32(s []int32, n int) []int32 {
	if cap(s) < n {
		return make([]int32, n)
	}
	return s[:n]
}

// Verify runs the eight checks on plan p for instance in and writes the
// verdict into rep (reset first). CheckParsable passes (p is already a
// plan). A nil p is an empty plan. in must pass Validate. Every failure is
// reported, with its agent, timestep and cell; see Check and Failure for
// the exact rules. After the first call with a given Report, grid size and
// agent count, Verify does not allocate.
func Verify(in *Instance, p *Plan, rep *Report) {
	rep.Reset()
	var paths [][]Pos
	if p != nil {
		paths = p.Paths
	}
	if k := len(in.Agents); cap(rep.faulty) < k {
		rep.faulty = make([]bool, k)
	} else {
		rep.faulty = rep.faulty[:k]
		clear(rep.faulty)
	}
	n := rep.checkAgentCount(in, paths)
	horizon := 0
	for i := range n {
		horizon = max(horizon, rep.checkPath(in, i, paths[i]))
	}
	rep.conflicts(in, paths[:n], horizon)

	rep.SOC, rep.Makespan = (&Plan{Paths: paths}).Costs(in)
	rep.Valid = true
	for c := range NumChecks {
		rep.Passed[c] = rep.Counts[c] == 0
		rep.Valid = rep.Valid && rep.Passed[c]
	}
	for _, bad := range rep.faulty {
		if !bad {
			rep.CleanAgents++
		}
	}
	if rep.Valid && in.Solved() {
		rep.GapSOC = rep.SOC - in.SOC
		rep.GapMakespan = rep.Makespan - in.Makespan
		rep.Optimal = rep.GapSOC <= 0
	}
}

// checkAgentCount reports a missing agent for each agent of in without a
// path and an extra agent for each path past them, and returns how many
// paths belong to agents of in.
func (rep *Report) checkAgentCount(in *Instance, paths [][]Pos) int {
	k := len(in.Agents)
	for i := len(paths); i < k; i++ {
		rep.add(KindMissingAgent, i, -1, 0, in.Agents[i].Start)
	}
	for i := k; i < len(paths); i++ {
		var cell Pos
		if len(paths[i]) > 0 {
			cell = paths[i][0]
		}
		rep.add(KindExtraAgent, i, -1, 0, cell)
	}
	return min(k, len(paths))
}

// checkPath runs the single-agent checks on agent i's path (a missing
// agent when it is empty) and returns its last timestep.
func (rep *Report) checkPath(in *Instance, i int, path []Pos) int {
	if len(path) == 0 {
		rep.add(KindMissingAgent, i, -1, 0, in.Agents[i].Start)
		return 0
	}
	w, h := in.Width, in.Height
	holes := in.Holes
	a := in.Agents[i]
	if path[0] != a.Start {
		rep.add(KindWrongStart, i, -1, 0, path[0])
	}
	prev := path[0]
	for t, q := range path {
		if q.R < 0 || q.C < 0 || q.R >= h || q.C >= w {
			rep.add(KindOutOfBounds, i, -1, t, q)
		} else if holes[q.R*w+q.C] {
			rep.add(KindHole, i, -1, t, q)
		}
		if t > 0 {
			if _, ok := MoveBetween(prev, q); !ok {
				rep.add(KindIllegalStep, i, -1, t, q)
			}
		}
		prev = q
	}
	if last := path[len(path)-1]; last != a.Goal {
		rep.add(KindNotAtGoal, i, -1, len(path)-1, last)
	}
	return len(path) - 1
}

// planCellAt returns the cell of path at t (its last cell once it has
// ended) and that cell's index in a w×h grid, or -1 when the path is empty
// or the cell lies off the grid.
func planCellAt(path []Pos, t, w, h int) (Pos, int32) {
	if len(path) == 0 {
		return Pos{}, -1
	}
	q := path[len(path)-1]
	if t < len(path) {
		q = path[t]
	}
	if q.R < 0 || q.C < 0 || q.R >= h || q.C >= w {
		return q, -1
	}
	return q, int32(q.R*w + q.C)
}

// planClearCells zeroes occ at every cell index in cells (-1 skipped).
func planClearCells(occ, cells []int32) {
	for _, c := range cells {
		if c >= 0 {
			occ[c] = 0
		}
	}
}

// conflicts finds every vertex and edge conflict among paths up to horizon
// in O(agents × horizon) (plus the number of conflicting pairs), with one
// occupancy array per timestep: occ[cell] holds the latest occupant + 1 and
// link[agent] the occupant before it, so all agents in a cell form a chain.
// cell[agent] is the agent's cell index at t (-1 off the grid or no path).
func (r *Report) conflicts(in *Instance, paths [][]Pos, horizon int) {
	n := len(paths)
	if n < 2 {
		return
	}
	w, h := in.Width, in.Height
	cells := w * h
	r.occA = planGrow32(r.occA, cells)
	r.occB = planGrow32(r.occB, cells)
	r.linkA = planGrow32(r.linkA, 2*n)
	r.linkB = planGrow32(r.linkB, 2*n)
	cur, prev := r.occA, r.occB
	lcur, lprev := r.linkA[:n], r.linkB[:n]
	ccur, cprev := r.linkA[n:2*n], r.linkB[n:2*n]
	clear(cur)
	clear(prev)
	for t := 0; t <= horizon; t++ {
		for i, path := range paths {
			q, c := planCellAt(path, t, w, h)
			ccur[i] = c
			if c < 0 {
				continue
			}
			for j := cur[c] - 1; j >= 0; j = lcur[j] - 1 {
				r.add(KindVertexConflict, int(j), i, t, q)
			}
			lcur[i] = cur[c]
			cur[c] = int32(i + 1)
			if t == 0 {
				continue
			}
			c0 := cprev[i]
			if c0 == c || c0 < 0 {
				continue
			}
			// Agents j < i that were on c at t-1 and are on c0 at t swap with i.
			for j := prev[c] - 1; j >= 0; j = lprev[j] - 1 {
				if int(j) < i && ccur[j] == c0 {
					r.add(KindEdgeConflict, int(j), i, t, in.PosOf(int(c0)))
				}
			}
		}
		if t > 0 {
			planClearCells(prev, cprev)
		}
		cur, prev = prev, cur
		lcur, lprev = lprev, lcur
		ccur, cprev = cprev, ccur
	}
}

// VerifyAnswer parses answer for in and verifies the plan. A parse error
// fails CheckParsable with one KindParse failure (rep.ParseErr holds the
// error) and leaves every other check failed too. Text answers reuse rep's
// buffers: after warm-up, verifying a text answer does not allocate unless
// it fails to parse or has answer text on both sides of a think block.
func VerifyAnswer(in *Instance, answer string, rep *Report) {
	var p Plan
	ps := &rep.parser
	form, lo, hi, err := ps.parse(answer, len(in.Agents), false)
	if err == nil {
		switch form {
		case planFormJSON:
			p, err = ps.parseJSON(lo, hi)
		case planFormSteps:
			p, err = ps.parseSteps(lo, hi, len(in.Agents))
		default:
			rep.flat, rep.paths = ps.fillPaths(in, rep.flat, rep.paths)
			p.Paths = rep.paths
		}
	}
	ps.text = ""
	if err != nil {
		rep.Reset()
		pe, _ := err.(*ParseError)
		rep.ParseErr = pe
		rep.add(KindParse, -1, -1, 0, Pos{})
		return
	}
	Verify(in, &p, rep)
}

// Category groups failures for the engineer's failure breakdown.
type Category uint8

// Categories, one per check.
const (
	CategoryParse Category = iota
	CategoryIllegalMove
	CategoryConflict
	CategoryHole
	CategoryOutOfBounds
	CategoryGoal
	CategoryStart
	CategoryAgentCount
	NumCategories
)

var planCategoryNames = [NumCategories]string{"parse", "illegal_move", "conflict", "hole", "out_of_bounds", "goal", "start", "agent_count"}

func (c Category) String() string {
	if c < NumCategories {
		return planCategoryNames[c]
	}
	return fmt.Sprintf("Category(%d)", uint8(c))
}

// CategoryOf returns the category of check c.
func CategoryOf(c Check) Category {
	switch c {
	case CheckParsable:
		return CategoryParse
	case CheckLegalMove:
		return CategoryIllegalMove
	case CheckConflictFree:
		return CategoryConflict
	case CheckGoalReached:
		return CategoryGoal
	case CheckStartCorrect:
		return CategoryStart
	case CheckAgentCount:
		return CategoryAgentCount
	case CheckHoleFree:
		return CategoryHole
	case CheckInBounds:
		return CategoryOutOfBounds
	}
	return NumCategories
}

// Categories counts the report's failures by category, including the
// truncated ones.
func (r *Report) Categories() [NumCategories]int {
	var out [NumCategories]int
	for c := range NumChecks {
		out[CategoryOf(c)] += r.Counts[c]
	}
	return out
}
