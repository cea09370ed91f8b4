package env

import (
	"bytes"
	"fmt"
	"strings"
)

// planStepLabel reports whether the line s[a:b] starts, past emphasis, with a step label ("T0:",
// "Step 3:"): the steps form (see the grammar in answer.go).
func planStepLabel(s string, a, b int) bool {
	_, _, _, ok := planStepAt(s, a, b)
	return ok
}

// planStepAt reads the step label of line s[a:b]: its number, the index d of its first digit and
// the index x just past the colon.
func planStepAt(s string, a, b int) (step, d, x int, ok bool) {
	x = planSkipStars(s, planSkipWS(s, a, b), b)
	switch {
	case planFoldPrefix(s[x:b], "step"):
		x += 4
	case x < b && (s[x] == 't' || s[x] == 'T'):
		x++
	default:
		return 0, 0, 0, false
	}
	step, d, x, miss := planLabelNumber(s, x, b, 5)
	return step, d, x, miss == planMissNone
}

// parseSteps reads the step lines of the body s[lo:hi] (its first line is one) into k paths: line
// t gives every agent's cell at time t. Each path ends at the first of the copies of its last
// cell that close it (an agent waiting at its goal to the end has arrived when it first got
// there). Errors are *ParseError at the offending line.
func (p *planParser) parseSteps(lo, hi, k int) (Plan, error) {
	s := p.text
	paths := make([][]Pos, k)
	row := make([]Pos, 0, k)
	t := 0
	for x := lo; x < hi; {
		a, b, next := planLineAt(s, x, hi)
		x = next
		if a == b || strings.HasPrefix(s[a:b], "```") {
			continue
		}
		step, d, q, ok := planStepAt(s, a, b)
		if !ok {
			return Plan{}, p.errAt(a, fmt.Sprintf(`expected "T%d: <cells>": the answer is in steps`, t))
		}
		if step != t {
			return Plan{}, p.errAt(d, fmt.Sprintf("step %d where step %d comes", step, t))
		}
		row = row[:0]
		for {
			m, cell, nx, bad, _ := planNextMove(s, q, b)
			if bad >= 0 || (nx >= 0 && m != planCellMove) {
				return Plan{}, p.errAt(max(bad, q), "a step line holds cells only (want [row,col] per agent)")
			}
			if nx < 0 {
				break
			}
			row = append(row, cell)
			q = nx
		}
		if len(row) != k {
			return Plan{}, p.errAt(a, fmt.Sprintf("step %d has %d cells for %d agents", t, len(row), k))
		}
		for i, c := range row {
			paths[i] = append(paths[i], c)
		}
		t++
	}
	for i, path := range paths {
		n := len(path)
		for n > 1 && path[n-2] == path[n-1] {
			n--
		}
		paths[i] = path[:n:n]
	}
	return Plan{Paths: paths}, nil
}

// FormatSteps writes p in the steps form, inside <answer> tags: "T<t>:" and every agent's cell at
// time t, one line per step from 0 to the end of the longest path, an agent whose path has ended
// standing on its last cell. ParseAnswer reads it back to p's paths less any copies of a path's
// last cell that end it. A path with no cell has no steps form: an error.
func FormatSteps(p *Plan) (string, error) {
	steps := 0
	for i, path := range p.Paths {
		if len(path) == 0 {
			return "", fmt.Errorf("env: agent %d's path has no cell: no steps form", i)
		}
		steps = max(steps, len(path))
	}
	var b bytes.Buffer
	b.Grow(len("<answer>\n</answer>") + steps*(len("T10:\n")+7*len(p.Paths)))
	b.WriteString("<answer>\n")
	for t := range steps {
		b.WriteByte('T')
		planWriteInt(&b, t)
		b.WriteByte(':')
		for _, path := range p.Paths {
			b.WriteByte(' ')
			planWriteCell(&b, path[min(t, len(path)-1)])
		}
		b.WriteByte('\n')
	}
	b.WriteString("</answer>")
	return b.String(), nil
}
