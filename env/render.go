package env

import (
	"fmt"
	"strconv"
	"strings"
)

// ASCII rendering legend (RenderASCII and RenderPlanASCII):
//
//	.    frozen (free) cell
//	H    hole
//	0-9  agent 0..9: its start (RenderASCII) or where it stands (plan frames)
//	a-j  goal of agent 0..9
//	#    start, agent or goal of an agent numbered 10 or more
//	X    conflict (plan frames only): two agents on one cell, or two agents
//	     that swapped cells on the step into this frame
//
// Where a cell holds several markers, the agent (or start) wins over a goal
// and a goal wins over the terrain; the agent lines under the grid give the
// exact positions.
const rndLegend = "legend: . frozen  H hole  0-9 agent start/position  a-j agent goal  X conflict"

// rndAgentMark is the character for agent i's start or position.
func rndAgentMark(i int) byte {
	if i >= 0 && i < 10 {
		return byte('0' + i)
	}
	return '#'
}

// rndGoalMark is the character for agent i's goal.
func rndGoalMark(i int) byte {
	if i >= 0 && i < 10 {
		return byte('a' + i)
	}
	return '#'
}

// rndHole reports whether p is a hole, treating cells outside the grid or
// beyond a short Holes slice as free.
func rndHole(in *Instance, p Pos) bool {
	if !in.InBounds(p) {
		return false
	}
	i := in.Index(p)
	return i < len(in.Holes) && in.Holes[i]
}

// rndTerrain returns the grid's base characters: '.', 'H' and goal letters.
func rndTerrain(in *Instance) [][]byte {
	g := make([][]byte, max(in.Height, 0))
	for r := range g {
		g[r] = make([]byte, max(in.Width, 0))
		for c := range g[r] {
			if rndHole(in, Pos{r, c}) {
				g[r][c] = 'H'
			} else {
				g[r][c] = '.'
			}
		}
	}
	for i, a := range in.Agents {
		if in.InBounds(a.Goal) {
			g[a.Goal.R][a.Goal.C] = rndGoalMark(i)
		}
	}
	return g
}

// rndWriteGrid writes g with column labels on top and row labels on the left.
func rndWriteGrid(b *strings.Builder, g [][]byte, width int) {
	rw := len(strconv.Itoa(max(len(g)-1, 0)))
	cw := len(strconv.Itoa(max(width-1, 0))) + 1
	b.WriteString(strings.Repeat(" ", rw+1))
	for c := range width {
		fmt.Fprintf(b, "%*d", cw, c)
	}
	b.WriteByte('\n')
	for r, row := range g {
		fmt.Fprintf(b, "%*d ", rw, r)
		for _, ch := range row {
			b.WriteString(strings.Repeat(" ", cw-1))
			b.WriteByte(ch)
		}
		b.WriteByte('\n')
	}
}

func rndHeader(b *strings.Builder, in *Instance) {
	b.WriteString("instance")
	if in.ID != "" {
		b.WriteString(" " + in.ID)
	}
	fmt.Fprintf(b, "  %dx%d, %d agents, %d holes", in.Height, in.Width, len(in.Agents), in.NumHoles())
	if in.Solved() {
		fmt.Fprintf(b, ", optimal soc %d, makespan %d", in.SOC, in.Makespan)
		if in.NeedsWait {
			b.WriteString(", needs a wait")
		}
	}
	b.WriteByte('\n')
}

func rndAgentLines(b *strings.Builder, in *Instance) {
	for i, a := range in.Agents {
		fmt.Fprintf(b, "agent %d: start %v %c  goal %v %c\n", i, a.Start, rndAgentMark(i), a.Goal, rndGoalMark(i))
	}
}

// RenderASCII draws the instance as text: a header (id, size, agents, holes,
// optimal costs when solved), the grid with column numbers on top and row
// numbers on the left, one line per agent with its start and goal, and the
// legend (see rndLegend: '.' frozen, 'H' hole, '0'-'9' starts, 'a'-'j'
// goals). The instance need not be valid; cells missing from Holes count as
// free and markers off the grid are only listed.
func RenderASCII(in *Instance) string {
	var b strings.Builder
	rndHeader(&b, in)
	g := rndTerrain(in)
	for i, a := range in.Agents {
		if in.InBounds(a.Start) {
			g[a.Start.R][a.Start.C] = rndAgentMark(i)
		}
	}
	rndWriteGrid(&b, g, in.Width)
	rndAgentLines(&b, in)
	b.WriteString(rndLegend)
	b.WriteByte('\n')
	return b.String()
}

// rndPosAt is agent i's cell at time t (holding its last cell), and false
// when the agent has no path.
func rndPosAt(p *Plan, i, t int) (Pos, bool) {
	if len(p.Paths[i]) == 0 {
		return Pos{}, false
	}
	return p.At(i, t), true
}

// Bounds on one frame's event lines: rndFrame lists a vertex conflict of
// up to rndPairCell agents pair by pair and a larger crowd in one line, and
// prints at most rndMaxEvents lines, then how many more there were. A plan
// with thousands of paths then renders in time and memory linear in its
// size instead of quadratic.
const (
	rndPairCell  = 4
	rndMaxEvents = 64
)

// rndFrame builds the frame for time t and the events that happened on the
// step into it, agent by agent: out of bounds or on a hole, a jump, then
// its conflicts with later agents (vertex, else swap) in agent order.
func rndFrame(in *Instance, p *Plan, t int) ([][]byte, []string) {
	g := rndTerrain(in)
	n := len(p.Paths)
	cur := make([]Pos, n)
	prev := make([]Pos, n)
	has := make([]bool, n)
	at := map[Pos][]int{}       // agents at each cell at t, in order
	moved := map[[2]Pos][]int{} // agents by their step (from, to) into t
	for i := range n {
		if cur[i], has[i] = rndPosAt(p, i, t); !has[i] {
			continue
		}
		at[cur[i]] = append(at[cur[i]], i)
		if t > 0 {
			prev[i], _ = rndPosAt(p, i, t-1)
			moved[[2]Pos{prev[i], cur[i]}] = append(moved[[2]Pos{prev[i], cur[i]}], i)
		}
	}
	var events []string
	var conflicts []Pos
	for i := range n {
		if !has[i] {
			continue
		}
		pi := cur[i]
		if !in.InBounds(pi) {
			events = append(events, fmt.Sprintf("agent %d out of bounds at %v", i, pi))
		} else if rndHole(in, pi) {
			events = append(events, fmt.Sprintf("agent %d on a hole at %v", i, pi))
		}
		if t > 0 {
			if _, legal := MoveBetween(prev[i], pi); !legal {
				events = append(events, fmt.Sprintf("agent %d jumps %v → %v", i, prev[i], pi))
			}
		}
		events, conflicts = rndConflicts(events, conflicts, i, t, cur, prev, at, moved)
		if in.InBounds(pi) {
			g[pi.R][pi.C] = rndAgentMark(i)
		}
	}
	for _, c := range conflicts {
		if in.InBounds(c) {
			g[c.R][c.C] = 'X'
		}
	}
	if len(events) > rndMaxEvents {
		more := len(events) - rndMaxEvents
		events = append(events[:rndMaxEvents], fmt.Sprintf("… and %d more events", more))
	}
	return g, events
}

// rndConflicts appends agent i's conflicts with later agents at time t:
// with each j > i in order, a vertex conflict if they share a cell, else a
// swap if j stepped along i's step backwards. A crowd of more than
// rndPairCell agents on one cell is one line, from its first agent.
func rndConflicts(events []string, conflicts []Pos, i, t int, cur, prev []Pos, at map[Pos][]int, moved map[[2]Pos][]int) ([]string, []Pos) {
	pi := cur[i]
	same := at[pi]
	if len(same) > rndPairCell {
		if same[0] == i {
			events = append(events, fmt.Sprintf("conflict: %d agents (%d, %d, …) all at %v", len(same), same[0], same[1], pi))
			conflicts = append(conflicts, pi)
		}
		same = nil
	}
	var swaps []int
	if t > 0 && prev[i] != pi {
		swaps = moved[[2]Pos{pi, prev[i]}]
	}
	// Merge the two sorted lists of partners, skipping those ≤ i; a
	// partner on the same cell is a vertex conflict only.
	a, b := 0, 0
	for a < len(same) || b < len(swaps) {
		j, vertex := 0, false
		switch {
		case b >= len(swaps) || (a < len(same) && same[a] <= swaps[b]):
			j, vertex = same[a], true
			if b < len(swaps) && swaps[b] == j {
				b++
			}
			a++
		default:
			j = swaps[b]
			b++
		}
		if j <= i {
			continue
		}
		if vertex {
			events = append(events, fmt.Sprintf("conflict: agents %d and %d both at %v", i, j, pi))
			conflicts = append(conflicts, pi)
			continue
		}
		events = append(events, fmt.Sprintf("conflict: agents %d and %d swap %v ↔ %v", i, j, pi, cur[j]))
		conflicts = append(conflicts, pi, cur[j])
	}
	return events, conflicts
}

func rndMoves(path []Pos) string {
	var b strings.Builder
	for t := 1; t < len(path); t++ {
		if t > 1 {
			b.WriteByte(' ')
		}
		if m, ok := MoveBetween(path[t-1], path[t]); ok {
			b.WriteString(m.String())
		} else {
			b.WriteString("JUMP")
		}
	}
	return b.String()
}

// RenderPlanASCII draws a plan on its instance: RenderASCII's view, then one
// block per agent (its cost against its goal, its moves — JUMP for a step
// that is not a move — and its cells), then one frame per timestep t = 0..
// Horizon showing where every agent stands, with 'X' on conflict cells and a
// line per event on the step into the frame (vertex or swap conflict, hole,
// out of bounds, jump). Agents hold their last cell once their path ends.
// A nil plan renders as a plan without paths.
func RenderPlanASCII(in *Instance, p *Plan) string {
	if p == nil {
		p = &Plan{}
	}
	var b strings.Builder
	b.WriteString(RenderASCII(in))
	soc, mk := p.Costs(in)
	fmt.Fprintf(&b, "\nplan: %d paths, horizon %d, soc %d, makespan %d", len(p.Paths), p.Horizon(), soc, mk)
	if in.Solved() {
		o := in.Optimum(SumOfCosts)
		fmt.Fprintf(&b, " (optimal soc %d, gap %+d)", o, soc-o)
	}
	b.WriteByte('\n')
	for i, path := range p.Paths {
		fmt.Fprintf(&b, "agent %d", i)
		switch {
		case len(path) == 0:
			b.WriteString(": empty path\n")
			continue
		case i < len(in.Agents):
			goal := in.Agents[i].Goal
			fmt.Fprintf(&b, "  cost %d", PathCost(path, goal))
			if path[len(path)-1] != goal {
				fmt.Fprintf(&b, " (ends at %v, not on goal %v)", path[len(path)-1], goal)
			}
		default:
			b.WriteString("  (no such agent in the instance)")
		}
		fmt.Fprintf(&b, "\n  moves %s\n  cells", rndMoves(path))
		for _, q := range path {
			fmt.Fprintf(&b, " %v", q)
		}
		b.WriteByte('\n')
	}
	if len(p.Paths) == 0 {
		b.WriteString("no paths\n")
		return b.String()
	}
	for t := 0; t <= p.Horizon(); t++ {
		g, events := rndFrame(in, p, t)
		fmt.Fprintf(&b, "\nt=%d\n", t)
		rndWriteGrid(&b, g, in.Width)
		for _, e := range events {
			b.WriteString("  " + e + "\n")
		}
	}
	return b.String()
}
