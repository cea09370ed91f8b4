package env

import (
	"cmp"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// Limits on instance shape. The paper uses sizes 3..10; we accept up to 32.
const (
	MinSize   = 2
	MaxSize   = 32
	MaxAgents = 10
	// MaxIDLen bounds a user's own instance id, in bytes.
	MaxIDLen = 128
)

// Pos is a grid cell: row R (0 at the top) and column C (0 at the left).
// Its JSON form is the array [r, c].
type Pos struct {
	R, C int
}

// MarshalJSON writes p as [r,c].
func (p Pos) MarshalJSON() ([]byte, error) {
	return []byte(fmt.Sprintf("[%d,%d]", p.R, p.C)), nil
}

// UnmarshalJSON reads [r,c].
func (p *Pos) UnmarshalJSON(b []byte) error {
	var a []int
	if err := json.Unmarshal(b, &a); err != nil || len(a) != 2 {
		return &FieldError{Field: "position", Value: string(b), Reason: "want [row,col], two integers"}
	}
	p.R, p.C = a[0], a[1]
	return nil
}

func (p Pos) String() string { return fmt.Sprintf("(%d,%d)", p.R, p.C) }

// Move is one agent action for one timestep.
type Move uint8

// The five moves. Wait keeps the agent where it is.
const (
	Wait Move = iota
	Up
	Down
	Left
	Right
	NumMoves = 5
)

var moveNames = [NumMoves]string{"WAIT", "UP", "DOWN", "LEFT", "RIGHT"}

func (m Move) String() string {
	if int(m) < len(moveNames) {
		return moveNames[m]
	}
	return fmt.Sprintf("Move(%d)", m)
}

// Delta returns the row and column change of m.
func (m Move) Delta() (dr, dc int) {
	switch m {
	case Up:
		return -1, 0
	case Down:
		return 1, 0
	case Left:
		return 0, -1
	case Right:
		return 0, 1
	}
	return 0, 0
}

// Apply returns p moved by m (it may leave the grid; callers check bounds).
func (m Move) Apply(p Pos) Pos {
	dr, dc := m.Delta()
	return Pos{p.R + dr, p.C + dc}
}

// MoveBetween returns the move that takes a to b, and false when b is not a
// (wait or) 4-neighbour step from a.
func MoveBetween(a, b Pos) (Move, bool) {
	switch {
	case a == b:
		return Wait, true
	case b.R == a.R-1 && b.C == a.C:
		return Up, true
	case b.R == a.R+1 && b.C == a.C:
		return Down, true
	case b.R == a.R && b.C == a.C-1:
		return Left, true
	case b.R == a.R && b.C == a.C+1:
		return Right, true
	}
	return Wait, false
}

// Agent is one agent's start and goal.
type Agent struct {
	Start Pos `json:"start"`
	Goal  Pos `json:"goal"`
}

// Instance is one MAPF-FrozenLake problem. ID names it: the content hash
// (ComputeID) for generated instances, or a user's own name (a MovingAI
// scenario's, say); code that keys caches or de-duplicates by content uses
// ComputeID, never ID. Holes is row-major, len
// Width*Height. SOC and Makespan are the optimal costs (0 until solved; see
// Solved). NeedsWait is true when no solution at the optimal sum of costs
// avoids some agent waiting before its final arrival.
type Instance struct {
	ID        string
	Width     int
	Height    int
	Holes     []bool
	Agents    []Agent
	SOC       int
	Makespan  int
	NeedsWait bool
	Seed      uint64
	// Paths is an optimal (sum-of-costs) plan when one is known, nil
	// otherwise. JSON "paths", omitted when empty.
	Paths [][]Pos
}

// Solved reports whether the optimal costs have been filled in.
func (in *Instance) Solved() bool { return in.SOC > 0 || (len(in.Agents) > 0 && in.allAtGoal()) }

func (in *Instance) allAtGoal() bool {
	for _, a := range in.Agents {
		if a.Start != a.Goal {
			return false
		}
	}
	return true
}

// InBounds reports whether p lies on the grid.
func (in *Instance) InBounds(p Pos) bool {
	return p.R >= 0 && p.C >= 0 && p.R < in.Height && p.C < in.Width
}

// Index returns the flat row-major index of p (p must be in bounds).
func (in *Instance) Index(p Pos) int { return p.R*in.Width + p.C }

// PosOf is the inverse of Index.
func (in *Instance) PosOf(i int) Pos { return Pos{i / in.Width, i % in.Width} }

// Hole reports whether p is a hole (p must be in bounds).
func (in *Instance) Hole(p Pos) bool { return in.Holes[p.R*in.Width+p.C] }

// NumHoles counts the holes.
func (in *Instance) NumHoles() int {
	n := 0
	for _, h := range in.Holes {
		if h {
			n++
		}
	}
	return n
}

// GridRows renders the grid as rows of '.' (free) and 'H' (hole).
func (in *Instance) GridRows() []string {
	rows := make([]string, in.Height)
	var b strings.Builder
	for r := 0; r < in.Height; r++ {
		b.Reset()
		for c := 0; c < in.Width; c++ {
			if in.Holes[r*in.Width+c] {
				b.WriteByte('H')
			} else {
				b.WriteByte('.')
			}
		}
		rows[r] = b.String()
	}
	return rows
}

// Validate checks the instance's shape: size bounds, grid length, agent
// count, starts and goals in bounds, on free cells and pairwise distinct.
// It does not check solvability (the solver does).
func (in *Instance) Validate() error {
	if in.Width != in.Height {
		return &FieldError{Field: "width", Value: in.Width, Reason: fmt.Sprintf("grid must be square, height is %d", in.Height)}
	}
	if in.Width < MinSize || in.Width > MaxSize {
		return &FieldError{Field: "width", Value: in.Width, Reason: fmt.Sprintf("must be in [%d,%d]", MinSize, MaxSize)}
	}
	if len(in.Holes) != in.Width*in.Height {
		return &FieldError{Field: "grid", Value: len(in.Holes), Reason: fmt.Sprintf("want %d cells", in.Width*in.Height)}
	}
	k := len(in.Agents)
	if k < 1 || k > min(in.Width, MaxAgents) {
		return &FieldError{Field: "agents", Value: k, Reason: fmt.Sprintf("agent count must be in [1,%d] on a %dx%d grid", min(in.Width, MaxAgents), in.Width, in.Height)}
	}
	for i, a := range in.Agents {
		for _, x := range [2]struct {
			name string
			p    Pos
		}{{"start", a.Start}, {"goal", a.Goal}} {
			if !in.InBounds(x.p) {
				return &FieldError{Field: fmt.Sprintf("agents[%d].%s", i, x.name), Value: x.p, Reason: "out of bounds"}
			}
			if in.Hole(x.p) {
				return &FieldError{Field: fmt.Sprintf("agents[%d].%s", i, x.name), Value: x.p, Reason: "on a hole"}
			}
		}
		for j := 0; j < i; j++ {
			if in.Agents[j].Start == a.Start {
				return &FieldError{Field: fmt.Sprintf("agents[%d].start", i), Value: a.Start, Reason: fmt.Sprintf("same as agents[%d].start", j)}
			}
			if in.Agents[j].Goal == a.Goal {
				return &FieldError{Field: fmt.Sprintf("agents[%d].goal", i), Value: a.Goal, Reason: fmt.Sprintf("same as agents[%d].goal", j)}
			}
		}
	}
	return nil
}

// ComputeID returns the content-derived id: the first 16 hex digits of the
// SHA-256 of the grid and agents (not of costs or seed).
func (in *Instance) ComputeID() string {
	h := sha256.New()
	var buf [8]byte
	put := func(v int) {
		binary.LittleEndian.PutUint64(buf[:], uint64(int64(v)))
		h.Write(buf[:])
	}
	put(in.Width)
	put(in.Height)
	for _, hole := range in.Holes {
		if hole {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	}
	put(len(in.Agents))
	for _, a := range in.Agents {
		put(a.Start.R)
		put(a.Start.C)
		put(a.Goal.R)
		put(a.Goal.C)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// Clone returns a deep copy.
func (in *Instance) Clone() *Instance {
	out := *in
	out.Holes = append([]bool(nil), in.Holes...)
	out.Agents = append([]Agent(nil), in.Agents...)
	if in.Paths != nil {
		out.Paths = make([][]Pos, len(in.Paths))
		for i, p := range in.Paths {
			out.Paths[i] = append([]Pos(nil), p...)
		}
	}
	return &out
}

type instanceJSON struct {
	ID        string   `json:"id"`
	Hash      string   `json:"hash,omitempty"`
	Width     int      `json:"width"`
	Height    int      `json:"height"`
	Grid      []string `json:"grid"`
	Agents    []Agent  `json:"agents"`
	SOC       int      `json:"soc"`
	Makespan  int      `json:"makespan"`
	NeedsWait bool     `json:"needs_wait"`
	Seed      uint64   `json:"seed"`
	Paths     [][]Pos  `json:"paths,omitempty"`
}

// MarshalJSON writes the documented JSON form. "hash", the content hash,
// is written when the id is a user's own name (not empty and not the hash).
func (in *Instance) MarshalJSON() ([]byte, error) {
	var hash string
	if in.ID != "" {
		if h := in.ComputeID(); h != in.ID {
			hash = h
		}
	}
	return json.Marshal(instanceJSON{
		ID: in.ID, Hash: hash, Width: in.Width, Height: in.Height, Grid: in.GridRows(), Agents: in.Agents,
		SOC: in.SOC, Makespan: in.Makespan, NeedsWait: in.NeedsWait, Seed: in.Seed, Paths: in.Paths,
	})
}

// UnmarshalJSON reads the documented JSON form and validates it. Unknown
// fields are rejected. An empty id is filled with ComputeID; a non-empty one
// is kept (it must be at most MaxIDLen bytes without control characters);
// ReadOptions.StrictIDs makes a reader require the content hash. A "hash"
// field, when present, must be the content hash.
func (in *Instance) UnmarshalJSON(b []byte) error {
	var j instanceJSON
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return fmt.Errorf("instance: %w", err)
	}
	holes, err := j.holes()
	if err != nil {
		return err
	}
	out := Instance{Width: j.Width, Height: j.Height, Holes: holes, Agents: j.Agents,
		SOC: j.SOC, Makespan: j.Makespan, NeedsWait: j.NeedsWait, Seed: j.Seed, Paths: j.Paths}
	if err := out.Validate(); err != nil {
		return err
	}
	if len(j.Paths) != 0 && len(j.Paths) != len(j.Agents) {
		return &FieldError{Field: "paths", Value: len(j.Paths), Reason: fmt.Sprintf("want one path per agent (%d)", len(j.Agents))}
	}
	if err := j.checkPaths(&out); err != nil {
		return err
	}
	if j.SOC < 0 || j.Makespan < 0 {
		return &FieldError{Field: "soc", Value: j.SOC, Reason: "costs must be >= 0"}
	}
	hash := out.ComputeID()
	if j.Hash != "" && j.Hash != hash {
		return &FieldError{Field: "hash", Value: j.Hash, Reason: fmt.Sprintf("does not match content (want %s)", hash)}
	}
	if err := checkID(j.ID); err != nil {
		return err
	}
	out.ID = cmp.Or(j.ID, hash)
	*in = out
	return nil
}

// holes checks the dimensions and grid rows of j and returns the hole
// mask, row-major.
func (j *instanceJSON) holes() ([]bool, error) {
	for _, d := range []struct {
		name string
		v    int
	}{{"width", j.Width}, {"height", j.Height}} {
		if d.v < 0 || d.v > MaxSize {
			return nil, &FieldError{Field: d.name, Value: d.v, Reason: fmt.Sprintf("must be in [%d,%d]", MinSize, MaxSize)}
		}
	}
	if len(j.Grid) != j.Height {
		return nil, &FieldError{Field: "grid", Value: len(j.Grid), Reason: fmt.Sprintf("want %d rows (height)", j.Height)}
	}
	holes := make([]bool, 0, j.Width*j.Height)
	for r, row := range j.Grid {
		if len(row) != j.Width {
			return nil, &FieldError{Field: fmt.Sprintf("grid[%d]", r), Value: row, Reason: fmt.Sprintf("want %d cells (width)", j.Width)}
		}
		for c := 0; c < len(row); c++ {
			switch row[c] {
			case '.':
				holes = append(holes, false)
			case 'H':
				holes = append(holes, true)
			default:
				return nil, &FieldError{Field: fmt.Sprintf("grid[%d][%d]", r, c), Value: string(row[c]), Reason: "want '.' or 'H'"}
			}
		}
	}
	return holes, nil
}

// checkPaths checks the plan j carries, if any, for out (built from j): it
// must be a valid plan, with j's sum of costs when j gives one.
func (j *instanceJSON) checkPaths(out *Instance) error {
	if len(j.Paths) == 0 {
		return nil
	}
	// The plan an instance carries must be one: valid, and optimal when
	// costs are given.
	var rep Report
	Verify(out, &Plan{Paths: j.Paths}, &rep)
	switch {
	case !rep.Valid && len(rep.Failures) > 0:
		f := rep.Failures[0]
		return &FieldError{Field: "paths", Value: fmt.Sprintf("agent %d at t=%d", f.Agent, f.T), Reason: "not a valid plan: " + f.Check.String() + " fails"}
	case !rep.Valid:
		return &FieldError{Field: "paths", Value: len(j.Paths), Reason: "not a valid plan"}
	case j.SOC > 0 && rep.SOC != j.SOC:
		return &FieldError{Field: "paths", Value: rep.SOC, Reason: fmt.Sprintf("sum of costs differs from the instance's soc %d", j.SOC)}
	}
	return nil
}

// checkID refuses a user's id that would garble a one-line message or a
// rendering: too long, or holding control characters.
func checkID(id string) error {
	if len(id) > MaxIDLen {
		return &FieldError{Field: "id", Value: fmt.Sprintf("%.32q…", id), Reason: fmt.Sprintf("longer than %d bytes", MaxIDLen)}
	}
	if i := strings.IndexFunc(id, unicode.IsControl); i >= 0 {
		return &FieldError{Field: "id", Value: fmt.Sprintf("%q", id), Reason: "holds a control character"}
	}
	return nil
}

// PathCost is an agent's cost on path: the first timestep t such that the
// agent is on goal at every step from t on. A path that does not end on goal
// costs len(path)-1 (the verifier reports the goal failure separately).
func PathCost(path []Pos, goal Pos) int {
	t := len(path)
	for t > 0 && path[t-1] == goal {
		t--
	}
	if t == len(path) {
		return len(path) - 1
	}
	return t
}

// Plan is a joint plan: Paths[i] lists agent i's cell at t = 0..T. Paths may
// differ in length; an agent is taken to stay on its last cell afterwards.
// Its JSON form is {"paths":[[[r,c],...],...]}.
type Plan struct {
	Paths [][]Pos `json:"paths"`
}

// Costs returns the plan's sum of costs and makespan against the goals of in.
func (p *Plan) Costs(in *Instance) (soc, makespan int) {
	for i, path := range p.Paths {
		if i >= len(in.Agents) || len(path) == 0 {
			continue
		}
		c := PathCost(path, in.Agents[i].Goal)
		soc += c
		makespan = max(makespan, c)
	}
	return soc, makespan
}

// Horizon returns the length of the longest path minus one (the last
// timestep), or 0 for an empty plan.
func (p *Plan) Horizon() int {
	h := 0
	for _, path := range p.Paths {
		h = max(h, len(path)-1)
	}
	return h
}

// At returns agent i's cell at time t, holding the last cell after its path ends.
func (p *Plan) At(i, t int) Pos {
	path := p.Paths[i]
	if t >= len(path) {
		return path[len(path)-1]
	}
	return path[t]
}
