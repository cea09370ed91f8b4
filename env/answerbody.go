package env

import (
	"strings"
	"unicode/utf8"
)

// Where the answer is: the tags, the think blocks and the last <answer> region of a response
// (the grammar is in answer.go).

// planTag identifies one of the tags the parser cares about.
type planTag uint8

const (
	planTagNone planTag = iota
	planTagThink
	planTagThinkEnd
	planTagAnswer
	planTagAnswerEnd
)

// planTagAt reports which tag (if any) starts at s[i] (s[i] == '<').
func planTagAt(s string, i int) (planTag, int) {
	rest := s[i+1:]
	end := len(rest) > 0 && rest[0] == '/'
	if end {
		rest = rest[1:]
	}
	switch {
	case len(rest) >= 6 && planFoldPrefix(rest, "think>"):
		if end {
			return planTagThinkEnd, 8
		}
		return planTagThink, 7
	case len(rest) >= 7 && planFoldPrefix(rest, "answer>"):
		if end {
			return planTagAnswerEnd, 9
		}
		return planTagAnswer, 8
	}
	return planTagNone, 1
}

// planFoldPrefix reports whether s starts with lower (ASCII lower case),
// ignoring ASCII case.
func planFoldPrefix(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// planNextTag finds the next tag of interest at or after i; it returns -1
// when there is none.
func planNextTag(s string, i int) (int, planTag, int) {
	for i < len(s) {
		j := strings.IndexByte(s[i:], '<')
		if j < 0 {
			return -1, planTagNone, 0
		}
		i += j
		if tag, n := planTagAt(s, i); tag != planTagNone {
			return i, tag, n
		}
		i++
	}
	return -1, planTagNone, 0
}

func planIsBlank(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\r', '\n':
		default:
			return false
		}
	}
	return true
}

// errAt builds a ParseError for byte offset off of p.text.
func (p *planParser) errAt(off int, reason string) *ParseError {
	off = min(max(off, 0), len(p.text))
	lineStart := strings.LastIndexByte(p.text[:off], '\n') + 1
	lineEnd := strings.IndexByte(p.text[off:], '\n')
	if lineEnd < 0 {
		lineEnd = len(p.text)
	} else {
		lineEnd += off
	}
	text := strings.TrimSpace(p.text[lineStart:lineEnd])
	if len(text) > planMaxErrText {
		n := planMaxErrText
		for n > 0 && !utf8.RuneStart(text[n]) {
			n--
		}
		text = text[:n]
	}
	return &ParseError{
		Line:   strings.Count(p.text[:lineStart], "\n") + 1,
		Col:    off - lineStart + 1,
		Reason: reason,
		Text:   text,
	}
}

// body strips think blocks and answer tags and returns the answer body as a
// span of p.text.
func (p *planParser) body(answer string) (lo, hi int, err error) {
	p.text = answer
	regs, err := p.outsideThink(answer)
	if err != nil {
		return 0, 0, err
	}
	switch {
	case regs.n == 0:
		return 0, 0, &ParseError{Reason: "no answer"}
	case regs.n == 1:
		lo, hi = regs.r[0].lo, regs.r[0].hi
	default:
		// Rare: answer text on both sides of a think block. Blank the
		// think blocks in a copy so offsets and lines stay the same.
		p.text = planBlankThink(answer)
		// An orphan close resets the kept regions: start after it.
		lo, hi = regs.r[0].lo, len(answer)
		if !regs.many {
			hi = regs.r[regs.n-1].hi
		}
	}
	lo, hi = planLastAnswer(p.text, lo, hi)
	return lo, hi, nil
}

// planRegions holds the non-blank regions of an answer outside think
// blocks: the first four, their count, and whether there were more.
type planRegions struct {
	r    [4]struct{ lo, hi int }
	n    int
	many bool
}

// keep records s[a:b] as a region unless it is blank.
func (rs *planRegions) keep(s string, a, b int) {
	if a >= b || planIsBlank(s[a:b]) {
		return
	}
	if rs.n < len(rs.r) {
		rs.r[rs.n].lo, rs.r[rs.n].hi = a, b
	} else {
		rs.many = true
	}
	rs.n++
}

// outsideThink passes over the think tags of answer and returns the
// regions outside think blocks; an orphan </think> drops what came before
// it. It fails on an unclosed <think>.
func (p *planParser) outsideThink(answer string) (planRegions, error) {
	var regs planRegions
	out := 0
	i := 0
	for {
		j, tag, n := planNextTag(answer, i)
		if j < 0 {
			regs.keep(answer, out, len(answer))
			return regs, nil
		}
		switch tag {
		case planTagThink:
			regs.keep(answer, out, j)
			k := j + n
			for {
				e, tag2, n2 := planNextTag(answer, k)
				if e < 0 {
					return regs, p.errAt(j, "unclosed <think> block: the response ended while thinking, no answer")
				}
				if tag2 == planTagThinkEnd {
					i, out = e+n2, e+n2
					break
				}
				k = e + n2
			}
		case planTagThinkEnd:
			// Orphan close: everything before it was thinking.
			regs.n, regs.many = 0, false
			i, out = j+n, j+n
		default:
			i = j + n
		}
	}
}

// planBlankThink returns a copy of answer with its think blocks and think
// tags replaced by spaces (newlines kept), so offsets and lines stay the
// same.
func planBlankThink(answer string) string {
	b := []byte(answer)
	in := false
	for x := 0; x < len(b); {
		if b[x] == '<' {
			if tag, n := planTagAt(answer, x); tag == planTagThink || tag == planTagThinkEnd {
				if tag == planTagThink && !in {
					in = true
				} else if tag == planTagThinkEnd && in {
					in = false
				}
				for y := x; y < x+n; y++ {
					b[y] = ' '
				}
				x += n
				continue
			}
		}
		if in && b[x] != '\n' {
			b[x] = ' '
		}
		x++
	}
	return string(b)
}

// planLastAnswer narrows text[lo:hi] to the last <answer> block: after its
// open tag and before the first close tag that follows; a close tag with
// no open tag ends the span.
func planLastAnswer(text string, lo, hi int) (int, int) {
	open, closeAt := -1, -1
	for x := lo; ; {
		j, tag, n := planNextTag(text[:hi], x)
		if j < 0 {
			break
		}
		switch tag {
		case planTagAnswer:
			open, closeAt = j+n, -1
		case planTagAnswerEnd:
			if closeAt < 0 {
				closeAt = j
			}
		}
		x = j + n
	}
	switch {
	case open >= 0:
		lo = open
		if closeAt >= open {
			hi = closeAt
		}
	case closeAt >= 0:
		hi = closeAt
	}
	return lo, hi
}
