package env

// Step-wise simulation, for policies that write the plan one joint step at a
// time (gridnet). The simulator never blocks or corrects a move: the plan it
// records is exactly what the policy wrote, so Verify judges it like any
// other plan. What happens on each step:
//
//   - every agent moves by its move (Move.Apply) and the
//     new cell is recorded, even when it is a hole or off the grid;
//   - an agent that lands on a hole or off the grid is stopped: its path
//     ends on that cell (Stopped reports it) and the episode has failed;
//   - two agents on one grid cell (vertex conflict) or swapping cells (edge
//     conflict) fail the episode;
//   - the episode is done when it has failed, when every agent is on its
//     goal, or after maxSteps steps. Step after Done does nothing.
//
// A Sim is not safe for concurrent use. After NewSim, Reset, Step, Pos, T,
// Done, Observe (with a big enough dst) and LegalMask do not allocate.

// ObsRadius is the default observation radius: a 5×5 egocentric window.
const ObsRadius = 2

// Observation layout. Observe writes ObsChannels planes of (2r+1)×(2r+1)
// cells, channel-major: value (ch, y, x) is at index ch·W² + y·W + x with
// W = 2r+1, where window cell (y, x) is grid cell (row+y−r, col+x−r) around
// the observing agent (y = 0 is the top row of the window). Then the
// ObsScalars scalars.
const (
	ObsHole        = iota // 1: the cell is a hole
	ObsWall               // 1: the cell is off the grid
	ObsAgent              // 1: another agent is on the cell
	ObsOtherGoal          // 1: the cell is another agent's goal
	ObsOwnGoal            // 1: the cell is the observer's goal
	ObsAgentMoveDR        // row change of the last move of the agent on the cell (−1, 0, 1)
	ObsAgentMoveDC        // column change of that move (−1, 0, 1)
	ObsAgentAtGoal        // 1: the agent on the cell is on its own goal
	ObsClaimed            // 1: another agent declared (SetIntent) a move onto the cell this step
	ObsChannels
)

// Scalars after the planes, as offsets from ObsChannels·W².
const (
	ObsGoalDR   = iota // (goal row − row) / N, N = max(width, height)
	ObsGoalDC          // (goal col − col) / N
	ObsAtGoal          // 1: the observer is on its goal
	ObsTime            // t / maxSteps
	ObsGoalDist        // shortest-path distance to the goal around holes / (width·height); 1 if unreachable
	// ObsMoveGain + m (m = WAIT, UP, DOWN, LEFT, RIGHT): how much move m
	// shortens the shortest-path distance to the goal (+1, 0 or −1); −1 for
	// a move off the grid, onto a hole or to a cell that cannot reach the goal.
	ObsMoveGain
	ObsScalars = ObsMoveGain + NumMoves
)

// ObsSize returns the length of an observation with the given radius.
func ObsSize(radius int) int {
	w := 2*radius + 1
	return ObsChannels*w*w + ObsScalars
}

// StepEvent flags what happened to one agent in one step.
type StepEvent uint8

// Step events.
const (
	EventAtGoal         StepEvent = 1 << iota // on its goal after the step
	EventArrived                              // on its goal after the step, not before
	EventLeftGoal                             // was on its goal before the step, not after
	EventHole                                 // landed on a hole this step
	EventOutOfBounds                          // left the grid this step
	EventVertexConflict                       // shares its cell with another agent after the step
	EventEdgeConflict                         // swapped cells with another agent this step
)

// StepResult describes one joint step.
type StepResult struct {
	// T is the time after the step.
	T int
	// Events holds each agent's events.
	Events [MaxAgents]StepEvent
	// Conflicts counts the vertex and edge conflicts (agent pairs) of this step.
	Conflicts int
	// Failed: a hole, a move off the grid or a conflict happened this step.
	Failed bool
	// AllAtGoal: every agent is on its goal after the step.
	AllAtGoal bool
	// Done: the episode is over (see Sim.Done).
	Done bool
	// Ignored: the episode was already over; nothing was applied.
	Ignored bool
}

// Sim runs one instance step by step and records the joint plan.
type Sim struct {
	in       *Instance
	maxSteps int
	stride   int // maxSteps + 1
	t        int
	failed   bool
	allGoal  bool
	pos      []Pos
	last     []Move
	stopped  []bool
	plen     []int   // recorded path length per agent
	flat     []Pos   // agent i's path is flat[i*stride : i*stride+plen[i]]
	dist     []int32 // agent i's shortest-path distance to its goal from cell c is dist[i*W*H+c]; -1 unreachable
	intent   []Move  // moves declared for the coming step (SetIntent)
	declared []bool
}

// NewSim returns a simulator for in (which must pass Validate) that stops
// after maxSteps steps. It panics if maxSteps < 1 or in has more than
// MaxAgents agents.
func NewSim(in *Instance, maxSteps int) *Sim {
	if maxSteps < 1 {
		panic("env: NewSim: maxSteps must be >= 1")
	}
	k := len(in.Agents)
	if k > MaxAgents {
		panic("env: NewSim: too many agents")
	}
	s := &Sim{
		in:       in,
		maxSteps: maxSteps,
		stride:   maxSteps + 1,
		pos:      make([]Pos, k),
		last:     make([]Move, k),
		stopped:  make([]bool, k),
		plen:     make([]int, k),
		flat:     make([]Pos, k*(maxSteps+1)),
		dist:     make([]int32, k*in.Width*in.Height),
		intent:   make([]Move, k),
		declared: make([]bool, k),
	}
	cells := in.Width * in.Height
	queue := make([]int32, 0, cells)
	for i, a := range in.Agents {
		goalDistances(in, a.Goal, s.dist[i*cells:(i+1)*cells], queue)
	}
	s.Reset()
	return s
}

// goalDistances fills d with every cell's shortest-path distance to goal
// over free cells (BFS), -1 where the goal cannot be reached.
func goalDistances(in *Instance, goal Pos, d []int32, queue []int32) {
	for i := range d {
		d[i] = -1
	}
	g := in.Index(goal)
	d[g] = 0
	queue = append(queue[:0], int32(g))
	for h := 0; h < len(queue); h++ {
		c := in.PosOf(int(queue[h]))
		for m := Up; m < NumMoves; m++ {
			q := m.Apply(c)
			if !in.InBounds(q) || in.Hole(q) {
				continue
			}
			if qi := in.Index(q); d[qi] < 0 {
				d[qi] = d[queue[h]] + 1
				queue = append(queue, int32(qi))
			}
		}
	}
}

// Reset puts every agent back on its start at t = 0.
func (s *Sim) Reset() {
	s.t, s.failed = 0, false
	clear(s.declared)
	for i, a := range s.in.Agents {
		s.pos[i] = a.Start
		s.last[i] = Wait
		s.stopped[i] = false
		s.plen[i] = 1
		s.flat[i*s.stride] = a.Start
	}
	s.allGoal = s.atGoals()
}

func (s *Sim) atGoals() bool {
	for i, a := range s.in.Agents {
		if s.pos[i] != a.Goal {
			return false
		}
	}
	return true
}

// NumAgents returns the number of agents.
func (s *Sim) NumAgents() int { return len(s.pos) }

// MaxSteps returns the step limit.
func (s *Sim) MaxSteps() int { return s.maxSteps }

// Pos returns agent i's current cell (for a stopped agent, the cell where
// it stopped).
func (s *Sim) Pos(i int) Pos { return s.pos[i] }

// LastMove returns agent i's last applied move (Wait at t = 0).
func (s *Sim) LastMove(i int) Move { return s.last[i] }

// Stopped reports whether agent i fell into a hole or left the grid.
func (s *Sim) Stopped(i int) bool { return s.stopped[i] }

// T returns the current time (the number of steps taken).
func (s *Sim) T() int { return s.t }

// Failed reports whether a hole, a move off the grid or a conflict happened.
func (s *Sim) Failed() bool { return s.failed }

// AllAtGoal reports whether every agent is on its goal.
func (s *Sim) AllAtGoal() bool { return s.allGoal }

// Done reports whether the episode is over: it failed, every agent is on its
// goal, or maxSteps steps were taken.
func (s *Sim) Done() bool { return s.failed || s.allGoal || s.t >= s.maxSteps }

// Step applies one joint step: moves[i] is agent i's move (a value outside
// the five moves acts as Wait). It panics unless len(moves) is the number
// of agents. See the package comment above Sim for the rules.
func (s *Sim) Step(moves []Move) StepResult {
	k := len(s.pos)
	if len(moves) != k {
		panic("env: Sim.Step: want one move per agent")
	}
	var res StepResult
	if s.Done() {
		res.T, res.AllAtGoal, res.Done, res.Ignored = s.t, s.allGoal, true, true
		return res
	}
	var old [MaxAgents]Pos
	clear(s.declared)
	s.t++
	for i := range k {
		old[i] = s.pos[i]
		ev := s.moveAgent(i, moves[i])
		if ev&(EventHole|EventOutOfBounds) != 0 {
			res.Failed = true
		}
		res.Events[i] = ev
	}
	s.markConflicts(&res, &old)
	s.failed = s.failed || res.Failed
	s.allGoal = s.atGoals()
	res.T, res.AllAtGoal, res.Done = s.t, s.allGoal, s.Done()
	return res
}

// moveAgent applies move m to agent i (a value outside the five moves acts
// as Wait), records it in the trajectory and returns the agent's events,
// stopping the agent if it left the grid or fell into a hole.
func (s *Sim) moveAgent(i int, m Move) StepEvent {
	in := s.in
	g := in.Agents[i].Goal
	var ev StepEvent
	before := s.pos[i]
	// No agent is stopped here: a stop fails the episode, and Step
	// after Done does nothing.
	if m >= NumMoves {
		m = Wait
	}
	q := m.Apply(before)
	s.pos[i], s.last[i] = q, m
	s.flat[i*s.stride+s.plen[i]] = q
	s.plen[i]++
	switch {
	case !in.InBounds(q):
		ev |= EventOutOfBounds
		s.stopped[i] = true
	case in.Hole(q):
		ev |= EventHole
		s.stopped[i] = true
	}
	if before == g && q != g {
		ev |= EventLeftGoal
	}
	if before != g && q == g {
		ev |= EventArrived
	}
	if q == g {
		ev |= EventAtGoal
	}
	return ev
}

// markConflicts adds the vertex and edge conflicts between the agents'
// new positions (old holds their positions before the step) to res.
// k is small (<= MaxAgents), so pairs are cheap.
func (s *Sim) markConflicts(res *StepResult, old *[MaxAgents]Pos) {
	in := s.in
	k := len(s.pos)
	for i := range k {
		pi := s.pos[i]
		if !in.InBounds(pi) {
			continue
		}
		for j := i + 1; j < k; j++ {
			pj := s.pos[j]
			var ev StepEvent
			switch {
			case pi == pj:
				ev = EventVertexConflict
			case pi == old[j] && pj == old[i]:
				ev = EventEdgeConflict
			default:
				continue
			}
			res.Conflicts++
			res.Failed = true
			res.Events[i] |= ev
			res.Events[j] |= ev
		}
	}
}

// Plan returns a copy of the trajectory so far: each agent's cells for
// t = 0..T(), as written (a stopped agent's path ends on the hole or
// off-grid cell where it stopped). Verify judges it.
func (s *Sim) Plan() Plan {
	n := 0
	for _, l := range s.plen {
		n += l
	}
	flat := make([]Pos, 0, n)
	paths := make([][]Pos, len(s.pos))
	for i, l := range s.plen {
		start := len(flat)
		flat = append(flat, s.flat[i*s.stride:i*s.stride+l]...)
		paths[i] = flat[start:len(flat):len(flat)]
	}
	return Plan{Paths: paths}
}

// Observe writes agent's egocentric observation with the given radius into
// dst (grown if its capacity is below ObsSize(radius)) and returns it. See
// ObsHole..ObsAgentAtGoal and ObsGoalDR..ObsTime for the layout.
func (s *Sim) Observe(agent int, radius int, dst []float32) []float32 {
	size := ObsSize(radius)
	if cap(dst) < size {
		dst = make([]float32, size)
	}
	dst = dst[:size]
	clear(dst)
	w := 2*radius + 1
	plane := w * w
	s.observeTerrain(agent, radius, dst)
	s.observeAgents(agent, radius, dst)
	s.observeScalars(agent, dst[ObsChannels*plane:])
	return dst
}

// obsCell returns q's index within the (2*radius+1)² window centred on me, or
// -1 if q lies outside it.
func obsCell(q, me Pos, radius int) int {
	w := 2*radius + 1
	y, x := q.R-me.R+radius, q.C-me.C+radius
	if y < 0 || x < 0 || y >= w || x >= w {
		return -1
	}
	return y*w + x
}

// observeTerrain marks the wall and hole planes of agent's window in dst.
func (s *Sim) observeTerrain(agent, radius int, dst []float32) {
	in := s.in
	w := 2*radius + 1
	plane := w * w
	me := s.pos[agent]
	for y := range w {
		r := me.R + y - radius
		for x := range w {
			c := me.C + x - radius
			idx := y*w + x
			q := Pos{r, c}
			if !in.InBounds(q) {
				dst[ObsWall*plane+idx] = 1
				continue
			}
			if in.Hole(q) {
				dst[ObsHole*plane+idx] = 1
			}
		}
	}
}

// observeAgents marks goals, the other agents (with their last move and
// whether they sit on their goal) and the cells others have claimed in
// agent's window in dst.
func (s *Sim) observeAgents(agent, radius int, dst []float32) {
	in := s.in
	w := 2*radius + 1
	plane := w * w
	me := s.pos[agent]
	for j, a := range in.Agents {
		if idx := obsCell(a.Goal, me, radius); idx >= 0 {
			if j == agent {
				dst[ObsOwnGoal*plane+idx] = 1
			} else {
				dst[ObsOtherGoal*plane+idx] = 1
			}
		}
		if j == agent {
			continue
		}
		q := s.pos[j]
		idx := obsCell(q, me, radius)
		if idx < 0 || !in.InBounds(q) {
			continue
		}
		dst[ObsAgent*plane+idx] = 1
		dr, dc := s.last[j].Delta()
		dst[ObsAgentMoveDR*plane+idx] = float32(dr)
		dst[ObsAgentMoveDC*plane+idx] = float32(dc)
		if q == a.Goal {
			dst[ObsAgentAtGoal*plane+idx] = 1
		}
	}
	for j, d := range s.declared {
		if !d || j == agent {
			continue
		}
		if idx := obsCell(s.intent[j].Apply(s.pos[j]), me, radius); idx >= 0 {
			dst[ObsClaimed*plane+idx] = 1
		}
	}
}

// observeScalars writes agent's scalar features (goal offset, at-goal, time,
// goal distance and each move's distance gain) into sc.
func (s *Sim) observeScalars(agent int, sc []float32) {
	in := s.in
	me := s.pos[agent]
	n := float32(max(in.Width, in.Height))
	g := in.Agents[agent].Goal
	sc[ObsGoalDR] = float32(g.R-me.R) / n
	sc[ObsGoalDC] = float32(g.C-me.C) / n
	if me == g {
		sc[ObsAtGoal] = 1
	}
	sc[ObsTime] = float32(s.t) / float32(s.maxSteps)
	cells := in.Width * in.Height
	dist := s.dist[agent*cells : (agent+1)*cells]
	sc[ObsGoalDist] = 1
	var here int32 = -1
	if in.InBounds(me) {
		here = dist[in.Index(me)]
	}
	if here >= 0 {
		sc[ObsGoalDist] = float32(here) / float32(cells)
	}
	for m := Wait; m < NumMoves; m++ {
		q := m.Apply(me)
		gain := float32(-1)
		if here >= 0 && in.InBounds(q) && !in.Hole(q) && dist[in.Index(q)] >= 0 {
			gain = float32(here - dist[in.Index(q)])
		}
		sc[ObsMoveGain+int(m)] = gain
	}
}

// SetIntent declares the move agent will make in the coming step, so that
// agents deciding after it see the cell it claims (ObsClaimed) and can
// avoid it (SafeMask). Step clears every intent. Policies that write a
// joint step one agent at a time use it; it changes nothing else.
func (s *Sim) SetIntent(agent int, m Move) {
	s.intent[agent], s.declared[agent] = m, true
}

// claimedBy returns the agent other than agent that declared a move onto
// q, or -1.
func (s *Sim) claimedBy(agent int, q Pos) int {
	for j, d := range s.declared {
		if d && j != agent && s.intent[j].Apply(s.pos[j]) == q {
			return j
		}
	}
	return -1
}

// SafeMask is LegalMask without the moves that would collide with a
// declared intent: onto a cell another agent declared a move to (vertex
// conflict), or into the cell of an agent that declared a move onto this
// agent's cell (swap). Agents that have not declared are not considered.
// Wait stays allowed even when it collides, so a row is never empty.
func (s *Sim) SafeMask(agent int, dst []bool) {
	s.LegalMask(agent, dst)
	p := s.pos[agent]
	for m := Up; m < NumMoves; m++ {
		if !dst[m] {
			continue
		}
		q := m.Apply(p)
		if s.claimedBy(agent, q) >= 0 {
			dst[m] = false
			continue
		}
		for j, d := range s.declared {
			if d && j != agent && s.pos[j] == q && s.intent[j].Apply(q) == p {
				dst[m] = false
			}
		}
	}
}

// LegalMask sets dst[m] (len(dst) >= NumMoves) for each move m that keeps
// agent on the grid and off holes. Wait is always legal; a stopped agent has
// only Wait. Conflicts with other agents are not considered.
func (s *Sim) LegalMask(agent int, dst []bool) {
	_ = dst[NumMoves-1]
	p := s.pos[agent]
	dst[Wait] = true
	for m := Up; m < NumMoves; m++ {
		q := m.Apply(p)
		dst[m] = !s.stopped[agent] && s.in.InBounds(q) && !s.in.Hole(q)
	}
}
