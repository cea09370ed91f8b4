package movingai

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/t2t-lab/t2t/env"
)

// octileSlack absorbs the rounding of a scen's printed octile length
// (MovingAI prints eight decimals) when it is compared with our integer
// 4-connected length.
const octileSlack = 1e-6

// ImportOptions says how Import groups scen rows into instances.
type ImportOptions struct {
	// Agents is the number of agents per instance: rows [0,Agents) of the
	// scen are the first instance's agents in order, rows [Agents,2·Agents)
	// the second's, and so on. Rows after the last full group are not used.
	Agents int
	// First keeps only the first First instances (the first First·Agents
	// rows); 0 keeps every full group. With First 1, the instance is the
	// first Agents rows: the usual MAPF benchmark instance of that size.
	First int
	// MapPath and ScenPath name the files in errors.
	MapPath, ScenPath string
}

// Import turns the scen rows on map m into t2t instances as opt groups
// them; blocked cells become holes. Each instance gets the content-hash id,
// seed 0 and no costs (run the solver for those); its origin is the order:
// instance i (0-based) holds rows i·Agents .. (i+1)·Agents-1.
//
// The map must be square with a side in [env.MinSize, env.MaxSize]
// (ErrMapShape). Each row used must name the map's size, start and end on
// free cells, have a goal its start reaches with 4-connected moves, and an
// octile length no longer than that shortest path, since octile moves
// include ours (ErrScenMismatch; the octile length serves only this check).
// Agents in one instance need distinct starts and distinct goals
// (ErrAgents). Errors are *fielderr.Error with the file and line.
func Import(m *Map, rows []ScenRow, opt ImportOptions) ([]*env.Instance, error) {
	if err := checkShape(m, opt.MapPath); err != nil {
		return nil, err
	}
	if k := opt.Agents; k < 1 || k > min(m.Width, env.MaxAgents) {
		return nil, inputErr("--agents", 0, ErrAgents, "%d agents: want [1,%d] on a %dx%d map", k, min(m.Width, env.MaxAgents), m.Width, m.Height)
	}
	if opt.First < 0 {
		return nil, inputErr("--first", 0, ErrFlag, "%d instances: want >= 0", opt.First)
	}
	groups := len(rows) / opt.Agents
	if opt.First > 0 {
		groups = min(groups, opt.First)
	}
	if groups == 0 {
		return nil, inputErr(opt.ScenPath, 0, ErrAgents, "%d rows, fewer than the %d agents of one instance", len(rows), opt.Agents)
	}
	s := env.NewSolver()
	out := make([]*env.Instance, 0, groups)
	for g := range groups {
		in := &env.Instance{Width: m.Width, Height: m.Height, Holes: append([]bool(nil), m.Blocked...)}
		for i, r := range rows[g*opt.Agents : (g+1)*opt.Agents] {
			a, err := checkRow(s, m, &r, opt.ScenPath)
			if err != nil {
				return nil, err
			}
			for j, b := range in.Agents {
				prev := rows[g*opt.Agents+j].Line
				switch {
				case a.Start == b.Start:
					return nil, inputErr(opt.ScenPath, r.Line, ErrAgents, "agent %d starts where agent %d (line %d) does, in one instance", i, j, prev)
				case a.Goal == b.Goal:
					return nil, inputErr(opt.ScenPath, r.Line, ErrAgents, "agent %d has the goal of agent %d (line %d), in one instance", i, j, prev)
				}
			}
			in.Agents = append(in.Agents, a)
		}
		if err := in.Validate(); err != nil { // checked above; kept as env's word on it
			return nil, at(opt.ScenPath, rows[g*opt.Agents].Line, fmt.Errorf("%w: %w", ErrAgents, err))
		}
		in.ID = in.ComputeID()
		out = append(out, in)
	}
	return out, nil
}

// checkShape checks that m is a grid t2t holds.
func checkShape(m *Map, path string) error {
	switch {
	case m.Width != m.Height:
		return inputErr(path, 0, ErrMapShape, "%dx%d (width x height): t2t grids are square", m.Width, m.Height)
	case m.Width > env.MaxSize:
		return inputErr(path, 0, ErrMapShape, "%dx%d: larger than the testbed's largest grid, %dx%d", m.Width, m.Height, env.MaxSize, env.MaxSize)
	case m.Width < env.MinSize:
		return inputErr(path, 0, ErrMapShape, "%dx%d: smaller than the testbed's smallest grid, %dx%d", m.Width, m.Height, env.MinSize, env.MinSize)
	}
	return nil
}

// checkRow checks that scen row r fits map m and returns its agent.
func checkRow(s *env.Solver, m *Map, r *ScenRow, path string) (env.Agent, error) {
	a := env.Agent{Start: env.Pos{R: r.StartY, C: r.StartX}, Goal: env.Pos{R: r.GoalY, C: r.GoalX}}
	switch {
	case r.MapWidth != m.Width || r.MapHeight != m.Height:
		return a, inputErr(path, r.Line, ErrScenMismatch, "the row is for a %dx%d map, the map is %dx%d", r.MapWidth, r.MapHeight, m.Width, m.Height)
	case !m.Free(r.StartX, r.StartY):
		return a, inputErr(path, r.Line, ErrScenMismatch, "start (x %d, y %d) is on a blocked cell", r.StartX, r.StartY)
	case !m.Free(r.GoalX, r.GoalY):
		return a, inputErr(path, r.Line, ErrScenMismatch, "goal (x %d, y %d) is on a blocked cell", r.GoalX, r.GoalY)
	}
	d, err := Shortest(s, m.Width, m.Blocked, a)
	if err != nil {
		return a, inputErr(path, r.Line, ErrScenMismatch, "goal (x %d, y %d) cannot be reached from start (x %d, y %d) with 4-connected moves", r.GoalX, r.GoalY, r.StartX, r.StartY)
	}
	if float64(d) < r.Optimal-octileSlack {
		return a, inputErr(path, r.Line, ErrScenMismatch, "octile length %g exceeds the 4-connected shortest path %d: the scen is not of this map", r.Optimal, d)
	}
	return a, nil
}

// Shortest is agent a's single-agent shortest path length with t2t's
// 4-connected moves on the side×side grid with holes, found by the solver
// s; it fails with an error wrapping env.ErrUnsolvable when the goal cannot
// be reached. This is the length Export writes in the scen's optimal
// column.
func Shortest(s *env.Solver, side int, holes []bool, a env.Agent) (int, error) {
	sol, err := s.Solve(&env.Instance{Width: side, Height: side, Holes: holes, Agents: []env.Agent{a}}, env.SolveOptions{})
	return sol.SOC, err
}

// File is one file Export writes: a name (no folder) and its contents.
type File struct {
	Name string
	Data []byte
}

// Export writes instances as MovingAI files: one .map per distinct grid
// ("t2t-WxH-HASH.map", HASH from the map's bytes; holes as '@', free
// cells as '.'), and one .scen per instance ("N-HASH.scen", N its 1-based
// position in ins, zero-padded so names sort in order, HASH its
// ComputeID), whose rows are its
// agents in order. A row's optimal-length column is the agent's
// single-agent shortest length with our 4-connected moves (Shortest), not
// an octile length, and its bucket is that length / 4 as in MovingAI's
// files. Maps come first in the result, then the scens in order. An agent
// that cannot reach its goal has no length: that is a *fielderr.Error
// wrapping ErrExport, with name as its path.
func Export(ins []*env.Instance, name string) ([]File, error) {
	var maps, scens []File
	mapOf := map[string]string{} // map bytes -> file name
	s := env.NewSolver()
	width := len(strconv.Itoa(len(ins)))
	for i, in := range ins {
		m := Map{Width: in.Width, Height: in.Height, Blocked: in.Holes}
		data := m.Bytes()
		mapName, ok := mapOf[string(data)]
		if !ok {
			sum := sha256.Sum256(data)
			mapName = fmt.Sprintf("t2t-%dx%d-%s.map", in.Width, in.Height, hex.EncodeToString(sum[:6]))
			mapOf[string(data)] = mapName
			maps = append(maps, File{Name: mapName, Data: data})
		}
		rows := make([]ScenRow, len(in.Agents))
		for j, a := range in.Agents {
			d, err := Shortest(s, in.Width, in.Holes, a)
			if err != nil {
				return nil, at(name, 0, fmt.Errorf("%w: instance %d (id %s): agent %d: %w", ErrExport, i+1, in.ID, j, err))
			}
			rows[j] = ScenRow{Bucket: d / 4, Map: mapName, MapWidth: in.Width, MapHeight: in.Height,
				StartX: a.Start.C, StartY: a.Start.R, GoalX: a.Goal.C, GoalY: a.Goal.R, Optimal: float64(d)}
		}
		// The content hash, not the id: a file name must not come from what a user wrote.
		scens = append(scens, File{Name: fmt.Sprintf("%0*d-%s.scen", width, i+1, in.ComputeID()), Data: FormatScen(rows)})
	}
	return append(maps, scens...), nil
}
