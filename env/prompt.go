package env

import (
	"fmt"
	"strings"
)

// AnswerFormat selects the answer form that a prompt asks for. The parser
// accepts both whatever the prompt said.
type AnswerFormat uint8

// Answer formats.
const (
	// AnswerText asks for "Agent i: MOVE MOVE ..." lines.
	AnswerText AnswerFormat = iota
	// AnswerJSON asks for {"paths":[[[r,c],...],...]}.
	AnswerJSON
	// AnswerCells asks for "Agent i: [r,c] [r,c] ..." lines, each agent's cells from its start:
	// the cells prompt's form (PromptCells; the full prompt asks for moves with it).
	AnswerCells
	// AnswerSteps asks for "T<t>: [r,c] [r,c] ..." lines, every agent's cell at time t, one
	// line per step from the starts: the steps prompt's form (PromptSteps; the full prompt asks
	// for moves with it).
	AnswerSteps
)

func (f AnswerFormat) String() string {
	switch f {
	case AnswerJSON:
		return "json"
	case AnswerCells:
		return "cells"
	case AnswerSteps:
		return "steps"
	}
	return "text"
}

// PromptOptions shapes RenderPrompt's text. The zero value asks for text
// answers under SumOfCosts without the coordinate list.
type PromptOptions struct {
	// Objective is the cost the prompt asks to minimise. Default SumOfCosts.
	Objective Objective
	// ShowCoordinates adds a list of every agent's start and goal as
	// (row, col) under the map. Default (DefaultPromptOptions) true.
	ShowCoordinates bool
	// Format is the answer form asked for. Default AnswerText.
	Format AnswerFormat
	// NoExample leaves out the worked answer example.
	NoExample bool
	// Compact renders only the map, the agents' coordinates with the goal's offset from the
	// start ("goal (3, 2), offset 3 DOWN 1 RIGHT") and a one-line answer format (no prose rules,
	// objective or example): for small models trained from scratch, which cannot read the rules
	// and learn faster on shorter prompts (~2/3 of the tokens). The answer grammar is the same.
	// Objective, ShowCoordinates and NoExample are ignored. With Format AnswerCells it is the
	// cells prompt (PromptCells): no drawn map but the holes listed as [row,col] cells, the
	// agents' starts and goals as cells, and each agent's cells asked for (FormatCells), so that
	// every cell an answer writes is spelt as in the prompt; with AnswerSteps the same map and
	// every agent's cell per time step asked for (FormatSteps, PromptSteps).
	Compact bool
	// GridMap draws Compact's map one cell per token: each row its label and then its cells,
	// '.' or 'H', one space apart ("r2 . H . ."), the agents only in the coordinate list under
	// it (PromptGrid). The padded map of Compact makes a cell one or two tokens, whose ids
	// depend on the cell before it, so a cell's column cannot be read from its position.
	GridMap bool
}

// DefaultPromptOptions returns SumOfCosts, coordinates shown, text answers,
// with the example.
func DefaultPromptOptions() PromptOptions {
	return PromptOptions{Objective: SumOfCosts, ShowCoordinates: true, Format: AnswerText}
}

// planCellLabel returns the map label of cell p.
func planCellLabel(in *Instance, p Pos) string {
	var start, goal = -1, -1
	for i, a := range in.Agents {
		if a.Start == p {
			start = i
		}
		if a.Goal == p {
			goal = i
		}
	}
	switch {
	case start >= 0 && goal >= 0:
		return fmt.Sprintf("A%d/G%d", start, goal)
	case start >= 0:
		return fmt.Sprintf("A%d", start)
	case goal >= 0:
		return fmt.Sprintf("G%d", goal)
	case in.Hole(p):
		return "H"
	}
	return "."
}

// planRenderMap draws in's grid with labelled rows (r0, r1, ... top to bottom)
// and columns (c0, c1, ... left to right): '.' frozen, 'H' hole, 'Ai' start
// and 'Gi' goal of agent i ('Ai/Gj' when one cell holds both). Columns are
// padded to one width; lines end without trailing spaces.
func planRenderMap(in *Instance) string {
	labels := make([]string, in.Width*in.Height)
	cw := len(fmt.Sprint("c", in.Width-1))
	for r := range in.Height {
		for c := range in.Width {
			l := planCellLabel(in, Pos{r, c})
			labels[r*in.Width+c] = l
			cw = max(cw, len(l))
		}
	}
	rw := len(fmt.Sprint("r", in.Height-1))
	var b strings.Builder
	line := func(head string, cells func(c int) string) {
		var l strings.Builder
		fmt.Fprintf(&l, "%-*s", rw, head)
		for c := range in.Width {
			fmt.Fprintf(&l, "  %-*s", cw, cells(c))
		}
		b.WriteString(strings.TrimRight(l.String(), " "))
		b.WriteByte('\n')
	}
	line("", func(c int) string { return fmt.Sprint("c", c) })
	for r := range in.Height {
		line(fmt.Sprint("r", r), func(c int) string { return labels[r*in.Width+c] })
	}
	return b.String()
}

// RenderPrompt writes the one-shot planning prompt for in: the task, the
// map with its legend, the coordinate convention, the rules, the objective
// and the exact answer format with an example. The text is a pure function
// of in and opt.
func RenderPrompt(in *Instance, opt PromptOptions) string {
	var b strings.Builder
	switch {
	case opt.Compact && (opt.Format == AnswerCells || opt.Format == AnswerSteps):
		renderCellsPrompt(&b, in, opt.Format)
		return b.String()
	case opt.Compact:
		renderCompactPrompt(&b, in, opt.GridMap)
		return b.String()
	}
	writePromptTask(&b, in, opt)
	b.WriteString("\nAnswer format: think as needed, then write the plan inside <answer></answer> tags")
	if opt.Format == AnswerJSON {
		writeJSONAnswerFormat(&b, len(in.Agents), opt)
	} else {
		writeMovesAnswerFormat(&b, len(in.Agents), opt)
	}
	return b.String()
}

// renderCompactPrompt writes the short prompt of PromptOptions.Compact: the
// map (one token per cell with grid: PromptOptions.GridMap), each agent's
// start, goal and offset, and a one-line answer format.
func renderCompactPrompt(b *strings.Builder, in *Instance, grid bool) {
	k := len(in.Agents)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	if grid {
		p("Map %dx%d (. ice, H hole):\n", in.Height, in.Width)
		for r := range in.Height {
			p("r%d", r)
			for c := range in.Width {
				cell := " ."
				if in.Hole(Pos{r, c}) {
					cell = " H"
				}
				b.WriteString(cell)
			}
			b.WriteByte('\n')
		}
	} else {
		p("Map %dx%d:\n", in.Height, in.Width)
		b.WriteString(planRenderMap(in))
	}
	for i, a := range in.Agents {
		p("Agent %d: start (%d, %d), goal (%d, %d)%s\n", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C, compactOffset(a))
	}
	p("Answer: <answer> then one line per agent 0..%d, Agent i: MOVE MOVE ... (UP, DOWN, LEFT, RIGHT, WAIT), then </answer>.\n", k-1)
}

// renderCellsPrompt writes the cells prompt (PromptOptions.Compact with AnswerCells) or the
// steps prompt (with AnswerSteps): the grid's shape, its holes as [row,col] cells in row-major
// order, each agent's start and goal cells, and a one-line answer format, format's.
func renderCellsPrompt(b *strings.Builder, in *Instance, format AnswerFormat) {
	k := len(in.Agents)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p("Grid %dx%d: rows 0..%d, cols 0..%d, cells [row,col].\nHoles:", in.Height, in.Width, in.Height-1, in.Width-1)
	holes := 0
	for r := range in.Height {
		for c := range in.Width {
			if in.Hole(Pos{r, c}) {
				p(" [%d,%d]", r, c)
				holes++
			}
		}
	}
	if holes == 0 {
		b.WriteString(" none")
	}
	b.WriteByte('\n')
	for i, a := range in.Agents {
		p("Agent %d: start [%d,%d], goal [%d,%d]\n", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C)
	}
	if format == AnswerSteps {
		p("Answer: <answer> then one line per time step t from 0 until every agent is at its goal, Tt: the cells of agents 0..%d at t, then </answer>.\n", k-1)
		return
	}
	p("Answer: <answer> then one line per agent 0..%d, Agent i: [r,c] [r,c] ... (its cells from start to goal), then </answer>.\n", k-1)
}

// writePromptTask writes the full prompt's task, map, legend, optional
// coordinates, coordinate convention, rules and objective.
func writePromptTask(b *strings.Builder, in *Instance, opt PromptOptions) {
	k := len(in.Agents)
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	agents := "agents"
	if k == 1 {
		agents = "agent"
	}
	p("You control %d %s on a frozen lake of %dx%d cells. Plan the moves of every agent at once: write the complete joint plan in one answer. It is checked as a whole after you finish.\n\n", k, agents, in.Height, in.Width)

	p("Map (rows r0..r%d from top to bottom, columns c0..c%d from left to right):\n\n", in.Height-1, in.Width-1)
	b.WriteString(planRenderMap(in))
	b.WriteString("\nLegend: . = frozen ice (safe), H = hole, Ai = start of agent i, Gi = goal of agent i; a cell labelled Ai/Gj is the start of agent i and the goal of agent j.\n")

	if opt.ShowCoordinates {
		b.WriteString("\nAgents, as (row, col):\n")
		for i, a := range in.Agents {
			p("- Agent %d: start (%d, %d), goal (%d, %d)\n", i, a.Start.R, a.Start.C, a.Goal.R, a.Goal.C)
		}
	}

	b.WriteString("\nCoordinates: a cell is (row, col); row 0 is the top row and col 0 the left column. UP decreases the row by 1, DOWN increases the row by 1, LEFT decreases the column by 1, RIGHT increases the column by 1, WAIT stays in place.\n")

	b.WriteString(`
Rules:
1. Time is discrete. At every timestep each agent makes exactly one move: UP, DOWN, LEFT, RIGHT or WAIT. All agents move at the same time.
2. Moves always succeed: the ice is not slippery.
3. An agent must never step onto a hole (H) or off the map.
4. Two agents must never be on the same cell at the same timestep (vertex conflict).
5. Two agents must never swap cells in one timestep (edge conflict).
6. When an agent's moves run out it stays on its last cell for the rest of the plan, and that cell stays blocked for the other agents. Every agent must end on its own goal.
`)

	if opt.Objective == MakespanObjective {
		b.WriteString("\nObjective: among valid plans, minimise the makespan: the largest cost of any agent. An agent's cost is the first timestep from which it stays on its goal until the end of the plan.\n")
	} else {
		b.WriteString("\nObjective: among valid plans, minimise the sum of costs. An agent's cost is the first timestep from which it stays on its goal until the end of the plan; waits before that count. The sum of costs adds the costs of all agents.\n")
	}
}

// writeJSONAnswerFormat writes the rest of the answer format for AnswerJSON
// (k agents) and, unless opt.NoExample, its example.
func writeJSONAnswerFormat(b *strings.Builder, k int, opt PromptOptions) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(` as one JSON object whose "paths" list gives, for each agent in order 0..%d, its cell [row, col] at every timestep, starting with its start cell at timestep 0:
<answer>
{"paths": [`, k-1)
	for i := range k {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("[[r, c], [r, c], ...]")
	}
	b.WriteString(`]}
</answer>
Consecutive cells of a path must be the same cell (a wait) or side-by-side neighbours (one move). Put nothing else inside the tags.
`)
	if !opt.NoExample {
		b.WriteString(`
Example for a different map with 2 agents, where agent 0 starts at (0, 0) and agent 1 at (1, 0):
<answer>
{"paths": [[[0,0],[0,1],[0,2],[1,2]], [[1,0],[1,0],[2,0]]]}
</answer>
`)
	}
}

// writeMovesAnswerFormat writes the rest of the answer format for move lines
// (k agents) and, unless opt.NoExample, its example.
func writeMovesAnswerFormat(b *strings.Builder, k int, opt PromptOptions) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	p(", one line per agent, agents in order 0..%d:\n<answer>\n", k-1)
	for i := range k {
		p("Agent %d: MOVE MOVE ...\n", i)
	}
	b.WriteString(`</answer>
Each MOVE is UP, DOWN, LEFT, RIGHT or WAIT, separated by spaces. The first move on a line takes the agent from timestep 0 to timestep 1, the second from 1 to 2, and so on. Agents may have different numbers of moves. An agent that does not need to move writes WAIT. Put nothing else inside the tags.
`)
	if !opt.NoExample {
		b.WriteString(`
Example for a different map with 2 agents:
<answer>
Agent 0: RIGHT RIGHT DOWN
Agent 1: WAIT DOWN
</answer>
`)
	}
}

// compactOffset writes where a's goal lies from its start in move words, vertical first:
// ", offset 3 DOWN 1 RIGHT"; ", offset 0" when they are the same cell.
func compactOffset(a Agent) string {
	var b strings.Builder
	b.WriteString(", offset")
	dr, dc := a.Goal.R-a.Start.R, a.Goal.C-a.Start.C
	if dr == 0 && dc == 0 {
		b.WriteString(" 0")
	}
	if dr != 0 {
		m := Down
		if dr < 0 {
			m, dr = Up, -dr
		}
		fmt.Fprintf(&b, " %d %s", dr, m)
	}
	if dc != 0 {
		m := Right
		if dc < 0 {
			m, dc = Left, -dc
		}
		fmt.Fprintf(&b, " %d %s", dc, m)
	}
	return b.String()
}
