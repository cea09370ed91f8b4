package env

import (
	"bytes"
	"fmt"
)

// FormatMoves writes moves in the canonical answer form, inside <answer>
// tags: "Agent i: M M ..." per line, in agent order; an agent without moves
// gets nothing after the colon. ParseMoves reads it back unchanged.
func FormatMoves(moves [][]Move) string {
	n := 0
	for _, ms := range moves {
		n += 6 * len(ms)
	}
	return planFormatLines(len(moves), n, func(b *bytes.Buffer, i int) {
		for _, m := range moves[i] {
			b.WriteByte(' ')
			b.WriteString(m.String())
		}
	})
}

// FormatCells writes p in the text form with cells, inside <answer> tags: "Agent i: [r,c]
// [r,c] ..." per line, in agent order, each path's cells from t = 0. ParseAnswer reads it back to
// p's paths (an empty path, which it cannot hold, is written as no cells: the agent's start).
func FormatCells(p *Plan) string {
	n := 0
	for _, path := range p.Paths {
		n += 7 * len(path)
	}
	return planFormatLines(len(p.Paths), n, func(b *bytes.Buffer, i int) {
		for _, c := range p.Paths[i] {
			b.WriteByte(' ')
			planWriteCell(b, c)
		}
	})
}

// planFormatLines writes k agent lines inside <answer> tags, "Agent i:" followed by what item
// writes for agent i; size is about the bytes of all items.
func planFormatLines(k, size int, item func(b *bytes.Buffer, i int)) string {
	var b bytes.Buffer
	b.Grow(len("<answer>\n</answer>") + k*len("Agent 10:\n") + size)
	b.WriteString("<answer>\n")
	for i := range k {
		b.WriteString("Agent ")
		planWriteInt(&b, i)
		b.WriteByte(':')
		item(&b, i)
		b.WriteByte('\n')
	}
	b.WriteString("</answer>")
	return b.String()
}

// planWriteCell writes c as [r,c].
func planWriteCell(b *bytes.Buffer, c Pos) {
	b.WriteByte('[')
	planWriteInt(b, c.R)
	b.WriteByte(',')
	planWriteInt(b, c.C)
	b.WriteByte(']')
}

// FormatPaths writes p in the JSON answer form, inside <answer> tags, one agent's path per
// line: "<answer>\n{\"paths\": [\n[[r,c],[r,c]],\n[[r,c]]\n]}\n</answer>". ParseAnswer reads
// it back to p's paths.
func FormatPaths(p *Plan) string {
	var b bytes.Buffer
	b.WriteString("<answer>\n{\"paths\": [\n")
	for i, path := range p.Paths {
		if i > 0 {
			b.WriteString(",\n")
		}
		b.WriteByte('[')
		for t, c := range path {
			if t > 0 {
				b.WriteByte(',')
			}
			planWriteCell(&b, c)
		}
		b.WriteByte(']')
	}
	b.WriteString("\n]}\n</answer>")
	return b.String()
}

func planWriteInt(b *bytes.Buffer, v int) {
	var d [20]byte
	i := len(d)
	if v == 0 {
		b.WriteByte('0')
		return
	}
	for v > 0 {
		i--
		d[i] = byte('0' + v%10)
		v /= 10
	}
	b.Write(d[i:])
}

// PlanMoves turns each path's positions into moves. It fails with a
// *FieldError naming the first step that is neither a wait nor a
// 4-neighbour move. An empty path gives no moves.
func PlanMoves(p *Plan) ([][]Move, error) {
	moves := make([][]Move, len(p.Paths))
	for i, path := range p.Paths {
		if len(path) < 2 {
			continue
		}
		ms := make([]Move, len(path)-1)
		for t := 1; t < len(path); t++ {
			m, ok := MoveBetween(path[t-1], path[t])
			if !ok {
				return nil, &FieldError{
					Field:  fmt.Sprintf("paths[%d][%d]", i, t),
					Value:  path[t],
					Reason: fmt.Sprintf("not a wait or 4-neighbour step from %v", path[t-1]),
				}
			}
			ms[t-1] = m
		}
		moves[i] = ms
	}
	return moves, nil
}
