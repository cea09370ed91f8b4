package env

import (
	"errors"
	"fmt"
	"slices"
)

// canonicalOrder is the move preference of CanonicalPlan: vertical moves, then horizontal, then
// waiting.
var canonicalOrder = [NumMoves]Move{Up, Down, Left, Right, Wait}

// CanonicalPlan returns a plan with the same agent costs as the valid plan p (so the same sum of
// costs and makespan) in a canonical form: agent by agent, in order, each path is replanned
// against the other agents' paths so that at every timestep the agent takes the first of UP,
// DOWN, LEFT, RIGHT, WAIT that still lets it reach its goal at its cost without a hole, a
// vertex, edge or goal conflict. Unobstructed agents thus go vertically first, then
// horizontally, and wait as late as they can. Supervised targets in this form do not depend on
// how the solver broke ties. Each path ends at its goal (trailing waits are dropped).
//
// p must be valid for in (Verify); a plan that is not gets an error and no result.
func CanonicalPlan(in *Instance, p *Plan) (*Plan, error) {
	var rep Report
	Verify(in, p, &rep)
	if !rep.Valid {
		return nil, fmt.Errorf("env: canonical plan of %s: the plan is not valid (%v)", in.ID, rep.Failures)
	}
	k := len(in.Agents)
	out := &Plan{Paths: make([][]Pos, k)}
	for i, path := range p.Paths {
		c := PathCost(path, in.Agents[i].Goal)
		out.Paths[i] = append([]Pos(nil), path[:c+1]...)
	}
	at := func(j, t int) Pos { // agent j's cell at t: it stays on its last cell
		path := out.Paths[j]
		return path[min(t, len(path)-1)]
	}
	for range canonicalRounds {
		changed := false
		for i := range k {
			path, err := canonicalPath(in, out, i, at)
			if err != nil {
				return nil, err
			}
			if !slices.Equal(path, out.Paths[i]) {
				out.Paths[i], changed = path, true
			}
		}
		if !changed {
			break
		}
	}
	return out, nil
}

// canonicalRounds bounds the passes over the agents: a pass replans each agent against the
// others' current paths, and a change may open an earlier-preferred move to an agent before it.
// A plan still changing after the last pass is returned as it is (valid, same costs).
const canonicalRounds = 8

// canonicalPath replans agent i of out at its cost against the other agents' paths.
func canonicalPath(in *Instance, out *Plan, i int, at func(j, t int) Pos) ([]Pos, error) {
	path := canonicalPathAt(in, i, len(out.Paths[i])-1, len(in.Agents), at)
	if path == nil {
		return nil, fmt.Errorf("env: canonical plan of %s: agent %d has no path of cost %d (internal error)", in.ID, i, len(out.Paths[i])-1)
	}
	return path, nil
}

// canonicalPathAt is agent i's path of exactly cost steps (to its goal, where it stays at cost)
// that takes at every timestep the first of canonicalOrder still reaching the goal at cost
// without a hole or a vertex or edge conflict with the other agents j < k (their cells given by
// at); nil when there is none.
func canonicalPathAt(in *Instance, i, cost, k int, at func(j, t int) Pos) []Pos {
	free := func(x Pos, t int) bool {
		for j := range k {
			if j != i && at(j, t) == x {
				return false
			}
		}
		return true
	}
	swap := func(x, y Pos, t int) bool { // moving x → y between t and t+1 swaps with someone
		for j := range k {
			if j != i && at(j, t) == y && at(j, t+1) == x {
				return true
			}
		}
		return false
	}
	// next[t][cell] is the cell to take at t+1 from cell at t (the first move in canonicalOrder
	// from which the goal is still reached exactly at cost), or -1 when there is none.
	cell := func(x Pos) int { return x.R*in.Width + x.C }
	goal := in.Agents[i].Goal
	reach := make([]bool, in.Width*in.Height) // reach[cell]: the goal is reachable from cell at t+1
	reach[cell(goal)] = free(goal, cost)
	next := make([][]int, cost)
	for t := cost - 1; t >= 0; t-- {
		next[t] = make([]int, len(reach))
		now := make([]bool, len(reach))
		for r := range in.Height {
			for c := range in.Width {
				x := Pos{r, c}
				next[t][cell(x)] = -1
				if in.Hole(x) || !free(x, t) {
					continue
				}
				for _, m := range canonicalOrder {
					dr, dc := m.Delta()
					y := Pos{r + dr, c + dc}
					if in.InBounds(y) && reach[cell(y)] && !swap(x, y, t) {
						next[t][cell(x)], now[cell(x)] = cell(y), true
						break
					}
				}
			}
		}
		reach = now
	}
	start := in.Agents[i].Start
	if !reach[cell(start)] {
		return nil
	}
	path := append(make([]Pos, 0, cost+1), start)
	for t := range cost {
		y := next[t][cell(path[t])]
		path = append(path, Pos{y / in.Width, y % in.Width})
	}
	return path
}

// ErrNoPrioritized: PrioritizedPlan found no plan with the agents in index order.
var ErrNoPrioritized = errors.New("env: no prioritized plan in agent order")

// PrioritizedPlan plans the agents one by one in index order, each against the paths of the
// agents before it only (prioritized planning): agent i takes the cheapest path to its goal that
// avoids holes, the earlier agents' cells and swaps with them (an earlier agent stays on its goal
// once there), and reaches its goal when no earlier agent passes it again; among the paths of
// that cost, the canonical one (CanonicalPlan's move order: vertical first, waiting late).
//
// Every agent's path thus depends on the agents written before it and on no later one, the
// order in which a model writes an answer; an optimal plan (Solve, CanonicalPlan) often has an
// early agent wait or detour for a later one. The plan is valid and its sum of costs is at
// least the optimum. When some agent has no such path (an earlier agent parked on its only way,
// say) the error wraps ErrNoPrioritized.
func PrioritizedPlan(in *Instance) (*Plan, error) {
	k := len(in.Agents)
	out := &Plan{Paths: make([][]Pos, 0, k)}
	at := func(j, t int) Pos {
		path := out.Paths[j]
		return path[min(t, len(path)-1)]
	}
	horizon := 0 // the earlier agents have all stopped by then
	for i := range k {
		goal := in.Agents[i].Goal
		last := -1 // the last timestep an earlier agent is on i's goal
		for j := range i {
			for t, x := range out.Paths[j] {
				if x == goal {
					last = max(last, t)
				}
			}
		}
		var path []Pos
		for cost := max(last+1, manhattan(in.Agents[i].Start, goal)); cost <= horizon+in.Width*in.Height; cost++ {
			if path = canonicalPathAt(in, i, cost, i, at); path != nil {
				break
			}
		}
		if path == nil {
			return nil, fmt.Errorf("%w: %s, agent %d", ErrNoPrioritized, in.ID, i)
		}
		out.Paths = append(out.Paths, path)
		horizon = max(horizon, len(path)-1)
	}
	return out, nil
}

// manhattan is the grid distance between a and b: no path is shorter.
func manhattan(a, b Pos) int {
	return max(a.R-b.R, b.R-a.R) + max(a.C-b.C, b.C-a.C)
}

// ManhattanPlan is the plan that ignores holes and the other agents: each agent moves
// vertically to its goal's row, then horizontally to its goal. It is the baseline a model that
// only reads the coordinates reaches; it is valid where nothing is in the way.
func ManhattanPlan(in *Instance) *Plan {
	p := &Plan{Paths: make([][]Pos, len(in.Agents))}
	step := func(x, to int) int {
		if x < to {
			return x + 1
		}
		return x - 1
	}
	for i, a := range in.Agents {
		cur := a.Start
		path := []Pos{cur}
		for cur.R != a.Goal.R {
			cur.R = step(cur.R, a.Goal.R)
			path = append(path, cur)
		}
		for cur.C != a.Goal.C {
			cur.C = step(cur.C, a.Goal.C)
			path = append(path, cur)
		}
		p.Paths[i] = path
	}
	return p
}
