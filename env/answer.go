package env

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Answer grammar
//
// A response is the model's whole output. The parser first removes the
// parts that are not the answer, then reads the answer body.
//
//  1. Thinking. Every <think>…</think> block is ignored. A </think> with no
//     <think> before it (chat templates often open the block in the prompt)
//     means everything before it was thinking. A <think> that is never
//     closed means the response ended while thinking: there is no answer
//     (parse error), whatever came before it.
//  2. Answer tags. If the rest contains <answer>, only the LAST
//     <answer>…</answer> block counts (a missing </answer> runs to the end).
//     Without <answer>, the whole rest is the body (up to a stray </answer>).
//     Tags match in any case.
//  3. The body, once blank lines and markdown code-fence lines (```…) are
//     skipped, is either the JSON form or agent lines:
//
//     JSON form (the body starts with '{'):
//     {"paths":[[[r,c],[r,c],...],...]}  — agent i's cell at t = 0,1,...
//     Unknown fields and trailing text are errors.
//
//     Text form, one line per agent:
//     line    = ws [bullet ws] [stars] label ws [stars] ws ":" [stars] (moves | cells)
//     bullet  = "-" | "*" | "+" | "•"
//     stars   = "*" | "**" | "***"            (markdown bold/italic markers)
//     label   = ("agent" | "a") ws digits     (any case: "Agent 0", "agent0", "A0")
//     moves   = { sep } [ move { sep } { move { sep } } ]
//     move    = "UP" | "DOWN" | "LEFT" | "RIGHT" | "WAIT"   (any case)
//     sep     = " " | "\t" | "," | "->"
//     cells   = { sep } cell { sep } { cell { sep } }
//     cell    = "[" ws digits ws "," ws digits ws "]"      (row, column)
//
//     The first move is taken from t=0 to t=1, the next from 1 to 2, and so
//     on. An agent with no moves writes "Agent 1: WAIT" or nothing after the
//     colon. A line of cells gives the agent's cell at t=0 (its start), 1, 2,
//     ... as the JSON form does ("Agent 0: [2,2] [3,2] [3,1]"); a line mixes
//     no moves with cells, but lines of both kinds may share an answer. Every
//     agent 0..k-1 must appear exactly once, in any order.
//
//     Steps form (the first line's label is a step's: the steps prompt's form, PromptSteps),
//     one line per time step, in order from 0:
//     line    = ws [stars] step ws [stars] ws ":" [stars] cells
//     step    = ("step" | "t") ws digits          (any case: "T0", "t 3", "Step 12")
//     Line t holds k cells, agent 0's to agent k-1's cell at time t, so line 0 holds the
//     starts. An agent that has reached its goal for good writes it on every line after; the
//     repeats after an agent's last move are not moves (the path ends at its first copy).
//
// Anything else is a *ParseError: prose lines inside the body, unknown words
// or characters in a move list, a missing colon, duplicate agents, missing
// agents, agent numbers out of range.

// ParseError reports why an answer could not be parsed. It unwraps to
// ErrParse.
type ParseError struct {
	// Line is the 1-based line in the whole response; 0 when the error is
	// about the answer as a whole (missing agent, no answer).
	Line int
	// Col is the 1-based byte column in that line; 0 when not known.
	Col int
	// Reason says what was wrong.
	Reason string
	// Text is the offending line (at most 120 bytes), or empty.
	Text string
}

func (e *ParseError) Error() string {
	var b strings.Builder
	b.WriteString("env: cannot parse plan: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d", e.Line)
		if e.Col > 0 {
			fmt.Fprintf(&b, " col %d", e.Col)
		}
		b.WriteString(": ")
	}
	b.WriteString(e.Reason)
	if e.Text != "" {
		fmt.Fprintf(&b, " (%q)", e.Text)
	}
	return b.String()
}

// Unwrap returns ErrParse.
func (e *ParseError) Unwrap() error { return ErrParse }

const planMaxErrText = 120

// planLine is one parsed agent line: the byte span of its move list in the
// parser's text and its number of moves.
type planLine struct {
	seen   bool
	cells  bool // a line of cells: n+1 cells from t = 0
	lo, hi int
	n      int // moves, or cells less one
	off    int // byte offset of the line start, for errors
}

// planParser holds the state of one parse. text is the response, or a copy
// of it with think blocks blanked out (same length, same line breaks), so
// offsets always map to the original lines.
type planParser struct {
	text  string
	fixed [MaxAgents]planLine // agents 0..MaxAgents-1
	extra []planLine          // agents from MaxAgents on (only for oversized instances)
	n     int                 // highest agent seen + 1
	total int                 // moves over all agents
	k     int                 // agent numbers must be below k
	open  bool                // k is only a limit: the agent count is the highest agent + 1
}

// planTrimLine returns the span of the line at lo (up to '\n' or hi) and the
// start of the next line.
func planLineAt(s string, lo, hi int) (a, b, next int) {
	e := strings.IndexByte(s[lo:hi], '\n')
	if e < 0 {
		next = hi
		e = hi
	} else {
		e += lo
		next = e + 1
	}
	a, b = lo, e
	for a < b && (s[a] == ' ' || s[a] == '\t' || s[a] == '\r') {
		a++
	}
	for b > a && (s[b-1] == ' ' || s[b-1] == '\t' || s[b-1] == '\r') {
		b--
	}
	return a, b, next
}

// planMoveWord returns the move named by w (any case).
func planMoveWord(w string) (Move, bool) {
	var buf [5]byte
	if len(w) < 2 || len(w) > 5 {
		return 0, false
	}
	for i := 0; i < len(w); i++ {
		c := w[i]
		if 'a' <= c && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
	}
	switch string(buf[:len(w)]) {
	case "UP":
		return Up, true
	case "DOWN":
		return Down, true
	case "LEFT":
		return Left, true
	case "RIGHT":
		return Right, true
	case "WAIT":
		return Wait, true
	}
	return 0, false
}

func planIsLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// planCellMove is what planNextMove returns for a cell: no Move has this value.
const planCellMove Move = 255

// planNextMove reads the next move or cell of a move list in s[p:hi]; a cell
// comes back as m == planCellMove and its position. It returns next == -1 at
// the end of the list; bad >= 0 is the offset of an error (badWord says
// whether it is an unknown word rather than a character).
func planNextMove(s string, p, hi int) (m Move, cell Pos, next, bad int, badWord bool) {
	for p < hi {
		c := s[p]
		switch {
		case c == ' ' || c == '\t' || c == ',' || c == '\r':
			p++
			continue
		case c == '-' && p+1 < hi && s[p+1] == '>':
			p += 2
			continue
		case c == '[':
			cell, q := planCell(s, p, hi)
			if q < 0 {
				return 0, cell, -1, p, false
			}
			return planCellMove, cell, q, -1, false
		case planIsLetter(c):
			q := p + 1
			for q < hi && planIsLetter(s[q]) {
				q++
			}
			mv, ok := planMoveWord(s[p:q])
			if !ok {
				return 0, cell, -1, p, true
			}
			return mv, cell, q, -1, false
		}
		return 0, cell, -1, p, false
	}
	return 0, cell, -1, -1, false
}

// planCell reads the cell "[r,c]" (spaces allowed inside, each number at most 4 digits) at
// s[p] == '['; next is just past ']', or -1 when s[p:hi] does not start with a cell.
func planCell(s string, p, hi int) (cell Pos, next int) {
	num := func(x int) (v, y int) {
		x = planSkipWS(s, x, hi)
		y = x
		for y < hi && y-x < 4 && '0' <= s[y] && s[y] <= '9' {
			v = v*10 + int(s[y]-'0')
			y++
		}
		if y == x || (y < hi && '0' <= s[y] && s[y] <= '9') {
			return 0, -1
		}
		return v, planSkipWS(s, y, hi)
	}
	r, x := num(p + 1)
	if x < 0 || x >= hi || s[x] != ',' {
		return cell, -1
	}
	c, x := num(x + 1)
	if x < 0 || x >= hi || s[x] != ']' {
		return cell, -1
	}
	return Pos{r, c}, x + 1
}

// agentLine parses one non-blank, non-fence line s[a:b] and records it.
func (p *planParser) agentLine(a, b int) error {
	agent, d, x, err := p.agentLabel(a, b)
	if err != nil {
		return err
	}
	if agent >= p.k {
		return p.errAt(d, fmt.Sprintf("agent %d out of range (want 0..%d)", agent, p.k-1))
	}
	ln := p.line(agent)
	if ln.seen {
		return p.errAt(d, fmt.Sprintf("duplicate agent %d", agent))
	}
	n, cells, err := p.countMoves(x, b)
	if err != nil {
		return err
	}
	if cells {
		n-- // n cells are n-1 steps
	}
	*ln = planLine{seen: true, cells: cells, lo: x, hi: b, n: n, off: a}
	p.n = max(p.n, agent+1)
	p.total += n
	return nil
}

// planSkipWS returns the first index from x on in s[:b] that is not a
// space or tab.
func planSkipWS(s string, x, b int) int {
	for x < b && (s[x] == ' ' || s[x] == '\t') {
		x++
	}
	return x
}

// planSkipStars skips up to three '*' (Markdown emphasis) from x on in s[:b].
func planSkipStars(s string, x, b int) int {
	for n := 0; n < 3 && x < b && s[x] == '*'; n++ {
		x++
	}
	return x
}

// agentLabel parses the "Agent <i>:" label (with an optional bullet and
// emphasis) at the start of line s[a:b]. It returns the agent number, the
// index d of its first digit and the index x just past the label.
func (p *planParser) agentLabel(a, b int) (agent, d, x int, err error) {
	s := p.text
	x = a
	// Bullet.
	switch {
	case s[x] == '-' || s[x] == '+':
		x++
	case s[x] == '*' && x+1 < b && s[x+1] != '*':
		x++
	case strings.HasPrefix(s[x:b], "•"):
		x += len("•")
	}
	x = planSkipStars(s, planSkipWS(s, x, b), b)
	// Label.
	switch {
	case planFoldPrefix(s[x:b], "agent"):
		x += 5
	case x < b && (s[x] == 'a' || s[x] == 'A'):
		x++
	default:
		return 0, 0, 0, p.errAt(x, `expected "Agent <i>: <moves>"`)
	}
	agent, d, x, miss := planLabelNumber(s, x, b, 4)
	switch miss {
	case planMissRange:
		return 0, 0, 0, p.errAt(d, "agent number out of range")
	case planMissNumber:
		return 0, 0, 0, p.errAt(x, "expected an agent number")
	case planMissColon:
		return 0, 0, 0, p.errAt(x, `expected ':' after the agent label`)
	}
	return agent, d, x, nil
}

// planMiss says what planLabelNumber did not find.
type planMiss uint8

const (
	planMissNone   planMiss = iota
	planMissNumber          // no digit
	planMissRange           // more digits than allowed
	planMissColon           // no ':' after the number
)

// planLabelNumber reads the rest of a line label from x in s[:b], past its word ("Agent",
// "T"): spaces, a number of at most digits digits, emphasis and spaces, and ':' with any
// emphasis after it. It returns the number, the index d of its first digit and the index y
// just past the colon; on a miss, y is where the missing part was wanted.
func planLabelNumber(s string, x, b, digits int) (n, d, y int, miss planMiss) {
	x = planSkipWS(s, x, b)
	d = x
	for x < b && '0' <= s[x] && s[x] <= '9' {
		if x-d >= digits {
			return 0, d, x, planMissRange
		}
		n = n*10 + int(s[x]-'0')
		x++
	}
	if x == d {
		return 0, d, x, planMissNumber
	}
	x = planSkipWS(s, planSkipStars(s, planSkipWS(s, x, b), b), b)
	if x >= b || s[x] != ':' {
		return 0, d, x, planMissColon
	}
	return n, d, planSkipStars(s, x+1, b), planMissNone
}

// countMoves counts the moves, or the cells, in s[x:b], or returns an error at
// the first unknown move word, malformed cell, unexpected character or, in a
// line that began with the other kind, move among cells or cell among moves.
func (p *planParser) countMoves(x, b int) (n int, cells bool, err error) {
	s := p.text
	for q := x; ; {
		m, _, next, bad, badWord := planNextMove(s, q, b)
		if bad >= 0 {
			if badWord {
				e := bad
				for e < b && planIsLetter(s[e]) {
					e++
				}
				return 0, false, p.errAt(bad, fmt.Sprintf("unknown move %q (want UP, DOWN, LEFT, RIGHT or WAIT)", s[bad:e]))
			}
			if s[bad] == '[' {
				return 0, false, p.errAt(bad, "malformed cell (want [row,col])")
			}
			r, _ := utf8.DecodeRuneInString(s[bad:b])
			return 0, false, p.errAt(bad, fmt.Sprintf("unexpected character %q in move list", r))
		}
		if next < 0 {
			return n, cells, nil
		}
		isCell := m == planCellMove
		if n == 0 {
			cells = isCell
		} else if isCell != cells {
			return 0, false, p.errAt(planSkipWS(s, q, b), "a line mixes moves and cells")
		}
		n++
		q = next
	}
}

// line returns agent i's slot.
func (p *planParser) line(i int) *planLine {
	if i < MaxAgents {
		return &p.fixed[i]
	}
	for len(p.extra) <= i-MaxAgents {
		p.extra = append(p.extra, planLine{})
	}
	return &p.extra[i-MaxAgents]
}

// planForm is the form of an answer's body.
type planForm uint8

const (
	planFormLines planForm = iota // one line per agent (moves or cells)
	planFormJSON                  // {"paths": ...}
	planFormSteps                 // one line of every agent's cell per time step (parseSteps)
)

// parse reads answer. For agent lines it fills p.lines and returns planFormLines; for a JSON
// answer or step lines it returns the form and the span of the body from its first line.
func (p *planParser) parse(answer string, k int, open bool) (form planForm, lo, hi int, err error) {
	p.k, p.open = k, open
	p.total = 0
	p.fixed = [MaxAgents]planLine{}
	p.extra = p.extra[:0]
	p.n = 0
	lo, hi, err = p.body(answer)
	if err != nil {
		return 0, 0, 0, err
	}
	s := p.text
	sawLine := false
	for x := lo; x < hi; {
		a, b, next := planLineAt(s, x, hi)
		x = next
		if a == b || strings.HasPrefix(s[a:b], "```") {
			continue
		}
		if !sawLine && planStepLabel(s, a, b) {
			return planFormSteps, a, hi, nil
		}
		if !sawLine && s[a] == '{' {
			// JSON form: from here to the end of the body, less a closing fence.
			end := hi
			for {
				t := strings.TrimRight(s[a:end], " \t\r\n")
				end = a + len(t)
				if strings.HasSuffix(t, "```") {
					end -= 3
					continue
				}
				break
			}
			return planFormJSON, a, end, nil
		}
		sawLine = true
		if err := p.agentLine(a, b); err != nil {
			return 0, 0, 0, err
		}
	}
	if !sawLine {
		return 0, 0, 0, &ParseError{Reason: "empty answer: no agent lines"}
	}
	n := k
	if open {
		n = p.n
	}
	for i := range n {
		if !p.line(i).seen {
			return 0, 0, 0, &ParseError{Reason: fmt.Sprintf("missing agent %d", i)}
		}
	}
	return planFormLines, 0, 0, nil
}

// fillPaths turns the parsed text lines into positions from the agents'
// starts, reusing flat and paths when they have room.
func (p *planParser) fillPaths(in *Instance, flat []Pos, paths [][]Pos) ([]Pos, [][]Pos) {
	k := len(in.Agents)
	need := p.total + k
	if cap(flat) < need {
		flat = make([]Pos, need)
	}
	flat = flat[:need]
	if cap(paths) < k {
		paths = make([][]Pos, k)
	}
	paths = paths[:k]
	off := 0
	for i := range k {
		ln := p.line(i)
		path := flat[off : off+ln.n+1 : off+ln.n+1]
		off += ln.n + 1
		cur := in.Agents[i].Start
		t := 0
		if !ln.cells {
			path[0] = cur
			t = 1
		}
		for q := ln.lo; ; {
			m, cell, next, _, _ := planNextMove(p.text, q, ln.hi)
			if next < 0 {
				break
			}
			if ln.cells {
				cur = cell
			} else {
				cur = m.Apply(cur)
			}
			path[t] = cur
			t++
			q = next
		}
		paths[i] = path
	}
	return flat, paths
}

type planJSON struct {
	Paths *[][]Pos `json:"paths"`
}

func (p *planParser) parseJSON(lo, hi int) (Plan, error) {
	dec := json.NewDecoder(strings.NewReader(p.text[lo:hi]))
	dec.DisallowUnknownFields()
	var j planJSON
	if err := dec.Decode(&j); err != nil {
		return Plan{}, p.errAt(lo, "bad JSON answer: "+err.Error())
	}
	if rest := p.text[lo+int(dec.InputOffset()) : hi]; !planIsBlank(rest) {
		return Plan{}, p.errAt(lo+int(dec.InputOffset())+len(rest)-len(strings.TrimLeft(rest, " \t\r\n")), "text after the JSON answer")
	}
	if j.Paths == nil {
		return Plan{}, p.errAt(lo, `JSON answer has no "paths"`)
	}
	return Plan{Paths: *j.Paths}, nil
}

// ParseAnswer parses a model response (see the grammar above) into a plan
// for in. Text moves are applied from each agent's start; the positions may
// leave the grid or enter holes (the verifier reports that). The JSON form
// returns the paths as given, whatever their number. in must be non-nil.
// Errors are *ParseError.
func ParseAnswer(answer string, in *Instance) (Plan, error) {
	var p planParser
	form, lo, hi, err := p.parse(answer, len(in.Agents), false)
	if err != nil {
		return Plan{}, err
	}
	switch form {
	case planFormJSON:
		return p.parseJSON(lo, hi)
	case planFormSteps:
		return p.parseSteps(lo, hi, len(in.Agents))
	}
	_, paths := p.fillPaths(in, nil, nil)
	return Plan{Paths: paths}, nil
}

// ParseMoves parses the text grammar only (the JSON form is an error) and
// returns each agent's moves, indexed by agent. The agents must be 0..n-1
// for some n <= MaxAgents. Errors are *ParseError.
func ParseMoves(answer string) ([][]Move, error) {
	var p planParser
	form, lo, _, err := p.parse(answer, MaxAgents, true)
	if err != nil {
		return nil, err
	}
	switch form {
	case planFormJSON:
		return nil, p.errAt(lo, "ParseMoves reads the text form only, not JSON")
	case planFormSteps:
		return nil, p.errAt(lo, "ParseMoves reads agent lines, not step lines")
	}
	k := p.n
	for i := range k {
		if ln := p.line(i); ln.cells {
			return nil, p.errAt(ln.lo, "ParseMoves reads moves, not cells")
		}
	}
	flat := make([]Move, p.total)
	moves := make([][]Move, k)
	off := 0
	for i := range k {
		ln := p.line(i)
		ms := flat[off : off+ln.n : off+ln.n]
		off += ln.n
		t := 0
		for q := ln.lo; ; {
			m, _, next, _, _ := planNextMove(p.text, q, ln.hi)
			if next < 0 {
				break
			}
			ms[t] = m
			t++
			q = next
		}
		moves[i] = ms
	}
	return moves, nil
}
