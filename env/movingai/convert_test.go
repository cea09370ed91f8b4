package movingai

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
)

// sameInstances fails unless got and want hold the same ids, grids and
// agents in order.
func sameInstances(t *testing.T, got, want []*env.Instance) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d instances, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.ID != w.ID || g.Width != w.Width || g.Height != w.Height || !reflect.DeepEqual(g.Holes, w.Holes) || !reflect.DeepEqual(g.Agents, w.Agents) {
			t.Fatalf("instance %d: got %s %v, want %s %v", i, g.ID, g.Agents, w.ID, w.Agents)
		}
	}
}

// reimport parses the files Export wrote and imports each scen whole (one
// instance per scen, all its rows as agents), in file order.
func reimport(t *testing.T, files []File) []*env.Instance {
	t.Helper()
	maps := map[string]*Map{}
	var out []*env.Instance
	for _, f := range files {
		switch filepath.Ext(f.Name) {
		case ".map":
			m, err := ParseMap(f.Data, f.Name)
			if err != nil {
				t.Fatal(err)
			}
			maps[f.Name] = m
		case ".scen":
			rows, err := ParseScen(f.Data, f.Name)
			if err != nil {
				t.Fatal(err)
			}
			m := maps[rows[0].Map]
			if m == nil {
				t.Fatalf("%s names map %q, which Export did not write before it", f.Name, rows[0].Map)
			}
			ins, err := Import(m, rows, ImportOptions{Agents: len(rows), MapPath: rows[0].Map, ScenPath: f.Name})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, ins...)
		default:
			t.Fatalf("unexpected file %s", f.Name)
		}
	}
	return out
}

// TestRoundTripImportExport: the committed 32×32 pair imports, for every
// agent count 1..10, into instances that Export writes and Import reads
// back the same; one map serves them all.
func TestRoundTripImportExport(t *testing.T) {
	t.Parallel()
	m, rows := readRandom(t)
	for k := 1; k <= env.MaxAgents; k++ {
		ins, err := Import(m, rows, ImportOptions{Agents: k, MapPath: randMap, ScenPath: randScen})
		if err != nil {
			t.Fatalf("k=%d: %v", k, err)
		}
		if len(ins) != randRows/k {
			t.Fatalf("k=%d: %d instances, want %d", k, len(ins), randRows/k)
		}
		for g, in := range ins { // instance g holds rows g*k .. g*k+k-1
			r := rows[g*k+k-1]
			if a := in.Agents[k-1]; a.Start != (env.Pos{R: r.StartY, C: r.StartX}) || a.Goal != (env.Pos{R: r.GoalY, C: r.GoalX}) {
				t.Fatalf("k=%d instance %d: last agent %v, want row line %d", k, g, a, r.Line)
			}
			if in.ID != in.ComputeID() || in.SOC != 0 || in.Seed != 0 {
				t.Fatalf("k=%d: instance %d has id %s, soc %d, seed %d", k, g, in.ID, in.SOC, in.Seed)
			}
		}
		files, err := Export(ins, "x.jsonl")
		if err != nil {
			t.Fatal(err)
		}
		if len(files) != len(ins)+1 {
			t.Fatalf("k=%d: %d files, want one map and %d scens", k, len(files), len(ins))
		}
		sameInstances(t, reimport(t, files), ins)
	}
	first, err := Import(m, rows, ImportOptions{Agents: 3, First: 2})
	if err != nil || len(first) != 2 {
		t.Fatalf("--first 2: %d instances, %v", len(first), err)
	}
}

// TestRoundTripExportImport: generated instances of several sizes and
// agent counts export and import back the same; instances that share a
// grid share its map file.
func TestRoundTripExportImport(t *testing.T) {
	t.Parallel()
	cfg := env.Config{Agents: 3, Instances: 40, Sizes: []env.SizeConfig{
		{Size: 3, DataRatio: 0.25, HoleRatio: 0.1, WaitRatio: 0.5},
		{Size: 7, DataRatio: 0.25, HoleRatio: 0.3, WaitRatio: 0.5},
		{Size: 10, DataRatio: 0.25, HoleRatio: 0.2},
		{Size: 32, DataRatio: 0.25, HoleRatio: 0.2},
	}}
	ins, err := env.Generate(cfg, 7, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	twin := ins[0].Clone() // the same grid, the agents in the other order
	twin.Agents[0], twin.Agents[1] = twin.Agents[1], twin.Agents[0]
	twin.ID = twin.ComputeID()
	ins = append(ins, twin)
	files, err := Export(ins, "gen.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	grids := map[string]bool{}
	for _, in := range ins {
		grids[fmt.Sprint(in.Width, in.Holes)] = true
	}
	maps := 0
	for _, f := range files {
		if strings.HasSuffix(f.Name, ".map") {
			maps++
		}
	}
	if maps != len(grids) || len(files) != maps+len(ins) {
		t.Fatalf("%d maps and %d scens for %d distinct grids and %d instances", maps, len(files)-maps, len(grids), len(ins))
	}
	if last := files[len(files)-1].Name; last != fmt.Sprintf("41-%s.scen", twin.ID) {
		t.Fatalf("last file %s", last)
	}
	sameInstances(t, reimport(t, files), ins)
	// The scen's length column is our single-agent 4-connected length.
	rows, err := ParseScen(files[maps].Data, "")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range ins[0].Agents {
		d, err := Shortest(env.NewSolver(), ins[0].Width, ins[0].Holes, a)
		if err != nil || rows[i].Optimal != float64(d) || rows[i].Bucket != d/4 {
			t.Fatalf("agent %d: row %+v, shortest %d (%v)", i, rows[i], d, err)
		}
	}
}

// TestOctileLowerBound: every row of the committed scen has an octile
// length no longer than our 4-connected shortest path, and shorter for
// most rows (octile is a lower bound, not our cost); on an open 4×4 grid
// the corner-to-corner octile length is 3√2 and ours 6. An imported
// instance's costs come from our solver, never from the octile column.
func TestOctileLowerBound(t *testing.T) {
	t.Parallel()
	m, rows := readRandom(t)
	s := env.NewSolver()
	shorter := 0
	for _, r := range rows {
		d, err := Shortest(s, m.Width, m.Blocked, env.Agent{Start: env.Pos{R: r.StartY, C: r.StartX}, Goal: env.Pos{R: r.GoalY, C: r.GoalX}})
		if err != nil {
			t.Fatalf("line %d: %v", r.Line, err)
		}
		if float64(d) < r.Optimal-octileSlack {
			t.Fatalf("line %d: our shortest path %d is below the octile length %g", r.Line, d, r.Optimal)
		}
		if float64(d) > r.Optimal+octileSlack {
			shorter++
		}
	}
	if shorter < len(rows)/2 {
		t.Fatalf("only %d of %d octile lengths are below ours: the diagonals are not in them", shorter, len(rows))
	}
	open := &Map{Width: 4, Height: 4, Blocked: make([]bool, 16)}
	corner := []ScenRow{{Map: "open.map", MapWidth: 4, MapHeight: 4, GoalX: 3, GoalY: 3, Optimal: 3 * math.Sqrt2}}
	if d := octile(open, 0)[15]; math.Abs(d-corner[0].Optimal) > 1e-12 {
		t.Fatalf("octile corner to corner: %g", d)
	}
	ins, err := Import(open, corner, ImportOptions{Agents: 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Annotate(ins[0], env.SolveOptions{}); err != nil || ins[0].SOC != 6 {
		t.Fatalf("solved soc %d (%v), want 6", ins[0].SOC, err)
	}
}

func TestImportErrors(t *testing.T) {
	t.Parallel()
	// 4×4: row 1 is blocked at x=1; (3,3) is cut off by walls around it.
	m, err := ParseMap([]byte("type octile\nheight 4\nwidth 4\nmap\n....\n.@..\n...@\n..@.\n"), "m.map")
	if err != nil {
		t.Fatal(err)
	}
	row := func(sx, sy, gx, gy int, opt float64) ScenRow {
		return ScenRow{Line: 10 + sx + sy*4, Map: "m.map", MapWidth: 4, MapHeight: 4, StartX: sx, StartY: sy, GoalX: gx, GoalY: gy, Optimal: opt}
	}
	ok := []ScenRow{row(0, 0, 3, 0, 3), row(0, 3, 0, 2, 1)}
	opts := ImportOptions{Agents: 2, MapPath: "m.map", ScenPath: "s.scen"}
	for _, c := range []struct {
		name     string
		m        *Map
		rows     []ScenRow
		opt      ImportOptions
		sentinel error
		path     string
		line     int
		reason   string
	}{
		{"not square", &Map{Width: 4, Height: 3, Blocked: make([]bool, 12)}, ok, opts, ErrMapShape, "m.map", 0, "4x3 (width x height): t2t grids are square"},
		{"too large", &Map{Width: 33, Height: 33, Blocked: make([]bool, 33*33)}, ok, opts, ErrMapShape, "m.map", 0, "largest grid, 32x32"},
		{"too small", &Map{Width: 1, Height: 1, Blocked: make([]bool, 1)}, ok, opts, ErrMapShape, "m.map", 0, "smallest grid, 2x2"},
		{"agents 0", m, ok, ImportOptions{}, ErrAgents, "--agents", 0, "0 agents: want [1,4] on a 4x4 map"},
		{"agents 5", m, ok, ImportOptions{Agents: 5}, ErrAgents, "--agents", 0, "want [1,4]"},
		{"first", m, ok, ImportOptions{Agents: 1, First: -1}, ErrFlag, "--first", 0, "want >= 0"},
		{"too few rows", m, ok[:1], opts, ErrAgents, "s.scen", 0, "1 rows, fewer than the 2 agents"},
		{"size", m, []ScenRow{ok[0], {Line: 7, MapWidth: 5, MapHeight: 4}}, opts, ErrScenMismatch, "s.scen", 7, "for a 5x4 map"},
		{"start blocked", m, []ScenRow{ok[0], row(1, 1, 0, 0, 1)}, opts, ErrScenMismatch, "s.scen", 15, "start (x 1, y 1) is on a blocked cell"},
		{"goal blocked", m, []ScenRow{row(0, 0, 3, 2, 1), ok[1]}, opts, ErrScenMismatch, "s.scen", 10, "goal (x 3, y 2) is on a blocked cell"},
		{"unreachable", m, []ScenRow{row(0, 0, 3, 3, 1), ok[1]}, opts, ErrScenMismatch, "s.scen", 10, "cannot be reached"},
		{"octile too long", m, []ScenRow{ok[0], row(0, 3, 0, 2, 1.5)}, opts, ErrScenMismatch, "s.scen", 22, "octile length 1.5 exceeds the 4-connected shortest path 1"},
		{"same start", m, []ScenRow{ok[0], row(0, 0, 2, 0, 2)}, opts, ErrAgents, "s.scen", 10, "agent 1 starts where agent 0 (line 10) does"},
		{"same goal", m, []ScenRow{ok[0], row(2, 0, 3, 0, 1)}, opts, ErrAgents, "s.scen", 12, "agent 1 has the goal of agent 0 (line 10)"},
	} {
		ins, err := Import(c.m, c.rows, c.opt)
		if ins != nil {
			t.Errorf("%s: instances with an error", c.name)
		}
		checkInputErr(t, c.name, err, c.sentinel, c.path, c.line, c.reason)
	}
	if ins, err := Import(m, ok, opts); err != nil || len(ins) != 1 {
		t.Fatalf("the good rows: %v %v", ins, err)
	}
}

func TestExportUnreachable(t *testing.T) {
	t.Parallel()
	in := &env.Instance{Width: 3, Height: 3, Holes: []bool{false, true, false, true, false, false, false, false, false},
		Agents: []env.Agent{{Start: env.Pos{R: 0, C: 0}, Goal: env.Pos{R: 2, C: 2}}}}
	in.ID = in.ComputeID()
	_, err := Export([]*env.Instance{in}, "u.jsonl")
	checkInputErr(t, "unreachable", err, ErrExport, "u.jsonl", 0, "instance 1 (id "+in.ID+"): agent 0")
	if !errors.Is(err, env.ErrUnsolvable) {
		t.Fatalf("%v does not wrap env.ErrUnsolvable", err)
	}
}

// TestCommands runs `t2t env import` and `t2t env export` as the command
// line does: import the committed pair, export it, and import a written
// scen back.
func TestCommands(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	written := map[string][]byte{}
	write := func(path string, data []byte) error {
		written[path] = data
		return os.WriteFile(path, data, 0o644)
	}
	imp := &ImportCommand{MapPath: filepath.Join("testdata", randMap), ScenPath: filepath.Join("testdata", randScen),
		Agents: 4, First: 3, Out: filepath.Join(dir, "in.jsonl")}
	if err := imp.Run(write); err != nil {
		t.Fatal(err)
	}
	ins, err := env.ReadInstances(strings.NewReader(string(written[imp.Out])))
	if err != nil || len(ins) != 3 || len(ins[0].Agents) != 4 {
		t.Fatalf("imported %d instances: %v", len(ins), err)
	}
	out := filepath.Join(dir, "export")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := (&ExportCommand{In: imp.Out, Out: out}).Run(write); err != nil {
		t.Fatal(err)
	}
	if len(written) != 1+1+3 {
		t.Fatalf("wrote %d files", len(written))
	}
	maps, err := filepath.Glob(filepath.Join(out, "t2t-32x32-*.map"))
	if err != nil || len(maps) != 1 {
		t.Fatalf("maps written: %v %v", maps, err)
	}
	back := &ImportCommand{MapPath: maps[0], ScenPath: filepath.Join(out, "2-"+ins[1].ID+".scen"), Agents: 4, Out: filepath.Join(dir, "back.jsonl")}
	if err := back.Run(write); err != nil {
		t.Fatal(err)
	}
	again, err := env.ReadInstances(strings.NewReader(string(written[back.Out])))
	if err != nil {
		t.Fatal(err)
	}
	sameInstances(t, again, ins[1:2])

	for _, c := range []struct {
		cmd  Command
		flag string
	}{
		{&ImportCommand{ScenPath: "s"}, "--map"},
		{&ImportCommand{MapPath: "m"}, "--scen"},
		{&ExportCommand{Out: "d"}, "--in"},
		{&ExportCommand{In: "i"}, "--out"},
	} {
		checkInputErr(t, c.cmd.Name()+" "+c.flag, c.cmd.Run(write), ErrFlag, c.flag, 0, "required")
	}
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(string(written[imp.Out])+"{\"width\":3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// One bad line is reported and skipped; the good ones are exported; the error counts it.
	var report bytes.Buffer
	var be *env.BatchError
	if err := (&ExportCommand{In: bad, Out: out, Report: &report}).Run(write); !errors.As(err, &be) || be.Failed != 1 || be.Total != 4 ||
		!strings.Contains(report.String(), bad+":4: skipped") {
		t.Fatalf("a bad JSONL line: %v (report %q)", err, report.String())
	}
	// A file of bad lines only is an input error naming the first.
	allBad := filepath.Join(dir, "allbad.jsonl")
	if err := os.WriteFile(allBad, []byte("\n{\"width\":3}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var ie *fielderr.Error
	if err := (&ExportCommand{In: allBad, Out: out}).Run(write); !errors.As(err, &ie) || ie.File != allBad || ie.Line != 2 {
		t.Fatalf("only bad lines: %v", err)
	}
	if err := (&ImportCommand{MapPath: "/dev/zero", ScenPath: "s", Agents: 1}).Run(write); !errors.As(err, &ie) || ie.File != "/dev/zero" ||
		!errors.Is(err, limits.ErrTooLarge) || err.Error() != "/dev/zero: file too large: larger than 16777216 bytes, the limit of a map or scen file" {
		t.Fatalf("an endless map file: %v", err)
	}
	missing := filepath.Join(dir, "missing.scen")
	if err := (&ImportCommand{MapPath: imp.MapPath, ScenPath: missing, Agents: 1}).Run(write); !errors.Is(err, os.ErrNotExist) || err.Error() != missing+": no such file or directory" {
		t.Fatalf("a missing scen file: %v", err)
	}
}
