package env

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/testutil"
)

func planPromptInstances(t *testing.T) map[string]*Instance {
	five := planInst(t, []string{"..H..", ".....", "H..H.", ".....", "...H."},
		planAg(0, 0, 4, 4), planAg(4, 0, 0, 0), planAg(1, 3, 1, 1))
	five.SOC, five.Makespan = 99, 99 // must not leak into the prompt
	four := planInst(t, []string{"....", ".H..", "....", "...."}, planAg(0, 0, 3, 3), planAg(3, 0, 0, 3))
	var ten []string
	for r := range 11 {
		row := []byte("...........")
		if r%3 == 1 {
			row[(r*7)%11] = 'H'
		}
		ten = append(ten, string(row))
	}
	big := planInst(t, ten, planAg(0, 0, 10, 10), planAg(10, 0, 0, 10), planAg(5, 5, 0, 0), planAg(0, 10, 5, 5))
	return map[string]*Instance{"five": five, "four": four, "eleven": big}
}

func TestRenderPromptGolden(t *testing.T) {
	ins := planPromptInstances(t)
	cases := []struct {
		file string
		in   string
		opt  PromptOptions
	}{
		{"prompt_soc.golden", "five", DefaultPromptOptions()},
		{"prompt_makespan_nocoords.golden", "four", PromptOptions{Objective: MakespanObjective}},
		{"prompt_json.golden", "four", PromptOptions{Objective: SumOfCosts, ShowCoordinates: true, Format: AnswerJSON}},
		{"prompt_large_noexample.golden", "eleven", PromptOptions{ShowCoordinates: true, NoExample: true}},
		{"prompt_compact.golden", "five", PromptOptions{Compact: true, NoExample: true}}, // no example: no complete <answer> block
		{"prompt_cells.golden", "five", PromptOptions{Compact: true, Format: AnswerCells, NoExample: true}},
		{"prompt_grid.golden", "five", PromptOptions{Compact: true, GridMap: true, NoExample: true}},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			in := ins[c.in]
			got := RenderPrompt(in, c.opt)
			testutil.Golden(t, filepath.Join("testdata", c.file), []byte(got))
			if got != RenderPrompt(in.Clone(), c.opt) {
				t.Error("not deterministic")
			}
			if strings.Contains(got, "99") {
				t.Error("the optimal cost leaked into the prompt")
			}
			for i, a := range in.Agents {
				line := fmt.Sprintf("- Agent %d: start (%d, %d), goal (%d, %d)", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C)
				if strings.Contains(got, line) != c.opt.ShowCoordinates {
					t.Errorf("coordinate line %q shown=%v", line, !c.opt.ShowCoordinates)
				}
			}
			// The prompt's own example must parse; without an example the
			// last <answer> block is the template, which must not.
			if c.opt.Format == AnswerText {
				ms, err := ParseMoves(got)
				if c.opt.NoExample != (err != nil) {
					t.Errorf("example parses: %v %v", ms, err)
				}
			} else {
				p, err := ParseAnswer(got, in)
				if c.opt.NoExample {
					if err == nil {
						t.Errorf("the answer format parses as a plan: %v", p.Paths)
					}
				} else if err != nil || len(p.Paths) != 2 || len(p.Paths[0]) != 4 {
					t.Errorf("JSON example: %v %v", p.Paths, err)
				}
			}
		})
	}
}

// planStyleInstances returns the options of prompt style and 40 instances of 2..5 agents
// generated with seed.
func planStyleInstances(t *testing.T, style string, seed uint64) (PromptOptions, []*Instance) {
	t.Helper()
	opt, err := PromptStyle(style)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Agents, cfg.AgentsMax, cfg.Instances = 2, 5, 40
	t.Logf("seed %d", seed)
	ins, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	return opt, ins
}

// TestCellsPromptLists reads the cells prompt of generated instances back: the holes line names
// exactly the holes, in row-major order, and each agent line its start and goal.
func TestCellsPromptLists(t *testing.T) {
	opt, ins := planStyleInstances(t, PromptCells, 31)
	for _, in := range ins {
		got := RenderPrompt(in, opt)
		var want strings.Builder
		for r := range in.Height {
			for c := range in.Width {
				if in.Hole(Pos{r, c}) {
					fmt.Fprintf(&want, " [%d,%d]", r, c)
				}
			}
		}
		if want.Len() == 0 {
			want.WriteString(" none")
		}
		if !strings.Contains(got, "\nHoles:"+want.String()+"\n") {
			t.Fatalf("%s: holes line wrong, want%s in\n%s", in.ID, want.String(), got)
		}
		for i, a := range in.Agents {
			line := fmt.Sprintf("\nAgent %d: start [%d,%d], goal [%d,%d]\n", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C)
			if !strings.Contains(got, line) {
				t.Fatalf("%s: no line %q in\n%s", in.ID, line, got)
			}
		}
		if strings.Contains(got, "r0") || strings.Contains(got, " H") {
			t.Fatalf("%s: the cells prompt draws the map:\n%s", in.ID, got)
		}
	}
}

// TestGridPromptCells reads the grid prompt's map back: row r is "rR" and then one " ." or " H"
// per column, nothing else, so that each cell is one token at a fixed place after its row's
// label; the agents are in the coordinate lines only.
func TestGridPromptCells(t *testing.T) {
	opt, ins := planStyleInstances(t, PromptGrid, 37)
	for _, in := range ins {
		got := RenderPrompt(in, opt)
		lines := strings.Split(got, "\n")
		if want := fmt.Sprintf("Map %dx%d (. ice, H hole):", in.Height, in.Width); lines[0] != want {
			t.Fatalf("%s: first line %q, want %q", in.ID, lines[0], want)
		}
		for r := range in.Height {
			fields := strings.Fields(lines[1+r])
			if len(fields) != 1+in.Width || fields[0] != fmt.Sprint("r", r) || strings.Contains(lines[1+r], "  ") {
				t.Fatalf("%s: row %d is %q", in.ID, r, lines[1+r])
			}
			for c, f := range fields[1:] {
				if want := map[bool]string{false: ".", true: "H"}[in.Hole(Pos{r, c})]; f != want {
					t.Fatalf("%s: cell (%d,%d) is %q, want %q", in.ID, r, c, f, want)
				}
			}
		}
		for i, a := range in.Agents {
			line := fmt.Sprintf("Agent %d: start (%d, %d), goal (%d, %d)%s", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C, compactOffset(a))
			if lines[1+in.Height+i] != line {
				t.Fatalf("%s: agent line %q, want %q", in.ID, lines[1+in.Height+i], line)
			}
		}
	}
}

// TestRenderMapCells reads the rendered map back, cell by cell.
func TestRenderMapCells(t *testing.T) {
	rng := planRNG(t)
	for range 100 {
		n := 2 + rng.IntN(13)
		k := 1 + rng.IntN(min(n, MaxAgents))
		in := planRandInstance(rng, n, k, 0.3)
		lines := strings.Split(strings.TrimSuffix(planRenderMap(in), "\n"), "\n")
		if len(lines) != n+1 {
			t.Fatalf("%d lines for n=%d", len(lines), n)
		}
		head := strings.Fields(lines[0])
		for c := range n {
			if head[c] != fmt.Sprint("c", c) {
				t.Fatalf("header %v", head)
			}
		}
		var starts []int
		for c := range n {
			starts = append(starts, strings.Index(lines[0], fmt.Sprint(" c", c, " ")+"")+1)
		}
		starts[n-1] = strings.LastIndex(lines[0], " c") + 1
		for r := range n {
			f := strings.Fields(lines[r+1])
			if len(f) != n+1 || f[0] != fmt.Sprint("r", r) {
				t.Fatalf("row %d: %q", r, lines[r+1])
			}
			for c := range n {
				if want := planCellLabel(in, Pos{r, c}); f[c+1] != want {
					t.Fatalf("cell (%d,%d) = %q want %q\n%s", r, c, f[c+1], want, planRenderMap(in))
				}
			}
			// Columns line up: cell c starts where the header's "c<c>" does.
			for c, x := range starts {
				if x <= 0 || x >= len(lines[r+1]) || lines[r+1][x] == ' ' || lines[r+1][x-1] != ' ' {
					t.Fatalf("column %d not aligned at byte %d\n%s", c, x, planRenderMap(in))
				}
			}
			if strings.HasSuffix(lines[r+1], " ") {
				t.Fatalf("trailing space in %q", lines[r+1])
			}
		}
		for i, a := range in.Agents {
			if !strings.Contains(planCellLabel(in, a.Start), fmt.Sprint("A", i)) || !strings.Contains(planCellLabel(in, a.Goal), fmt.Sprint("G", i)) {
				t.Fatalf("agent %d labels", i)
			}
		}
	}
}

func TestCompactOffset(t *testing.T) {
	for _, c := range []struct {
		a    Agent
		want string
	}{
		{Agent{Start: Pos{2, 2}, Goal: Pos{2, 2}}, ", offset 0"},
		{Agent{Start: Pos{3, 1}, Goal: Pos{0, 4}}, ", offset 3 UP 3 RIGHT"},
		{Agent{Start: Pos{0, 3}, Goal: Pos{1, 0}}, ", offset 1 DOWN 3 LEFT"},
	} {
		if got := compactOffset(c.a); got != c.want {
			t.Errorf("compactOffset(%v) = %q, want %q", c.a, got, c.want)
		}
	}
}
