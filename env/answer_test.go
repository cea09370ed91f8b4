package env

import (
	"errors"
	"flag"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
)

var planSeed = flag.Uint64("planseed", 0, "seed for the plan/verify/sim randomised tests (0: fixed default)")

// planRNG returns the randomised tests' generator, logging its seed.
func planRNG(t testing.TB) *rand.Rand {
	t.Helper()
	seed := *planSeed
	if seed == 0 {
		seed = 20260617
	}
	t.Logf("seed %d (replay with -planseed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x706c616e))
}

// planInst builds an instance from rows of '.' and 'H' and the agents.
func planInst(t testing.TB, rows []string, agents ...Agent) *Instance {
	t.Helper()
	in := &Instance{Width: len(rows[0]), Height: len(rows), Agents: agents}
	for _, row := range rows {
		for _, c := range row {
			in.Holes = append(in.Holes, c == 'H')
		}
	}
	if err := in.Validate(); err != nil {
		t.Fatalf("bad test instance: %v", err)
	}
	in.ID = in.ComputeID()
	return in
}

func planAg(sr, sc, gr, gc int) Agent { return Agent{Start: Pos{sr, sc}, Goal: Pos{gr, gc}} }

// planRandInstance draws an n×n instance with k agents on distinct free
// starts and goals (not necessarily solvable; costs unset).
func planRandInstance(rng *rand.Rand, n, k int, holeRatio float64) *Instance {
	in := &Instance{Width: n, Height: n, Holes: make([]bool, n*n)}
	for {
		free := 0
		for i := range in.Holes {
			in.Holes[i] = rng.Float64() < holeRatio
			if !in.Holes[i] {
				free++
			}
		}
		if free >= k {
			break
		}
	}
	var cells []Pos
	for i, h := range in.Holes {
		if !h {
			cells = append(cells, in.PosOf(i))
		}
	}
	rng.Shuffle(len(cells), func(i, j int) { cells[i], cells[j] = cells[j], cells[i] })
	starts := cells[:k]
	goals := append([]Pos(nil), cells...)
	rng.Shuffle(len(goals), func(i, j int) { goals[i], goals[j] = goals[j], goals[i] })
	for i := range k {
		in.Agents = append(in.Agents, Agent{Start: starts[i], Goal: goals[i]})
	}
	in.ID = in.ComputeID()
	return in
}

func planOpen4(t testing.TB) *Instance {
	return planInst(t, []string{"....", "....", "....", "...."},
		planAg(0, 0, 1, 1), planAg(3, 3, 3, 1), planAg(2, 0, 2, 0))
}

func TestParseAnswerAccepts(t *testing.T) {
	in := planOpen4(t)
	want := Plan{Paths: [][]Pos{
		{{0, 0}, {0, 1}, {1, 1}},
		{{3, 3}, {3, 2}, {3, 1}},
		{{2, 0}},
	}}
	wantWait := Plan{Paths: [][]Pos{want.Paths[0], want.Paths[1], {{2, 0}, {2, 0}}}}
	cases := []struct {
		name, answer string
		want         Plan
	}{
		{"canonical", "<answer>\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:\n</answer>", want},
		{"no tags", "Agent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2: WAIT", wantWait},
		{"think first", "<think>\nLet me see. Agent 0: UP UP would be wrong.\n</think>\n\n<answer>\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2: WAIT\n</answer>", wantWait},
		{"orphan think close", "the prompt opened the think block. Agent 9: JUMP\n</think>\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:", want},
		{"think tags any case", "<THINK>x</Think><Answer>Agent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:</ANSWER>", want},
		{"last answer block counts", "I will write <answer>Agent 0: UP</answer> first.\n<answer>\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:\n</answer>\ntrailing prose is ignored", want},
		{"unclosed answer tag", "<answer>\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:", want},
		{"stray close tag", "Agent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:\n</answer>\nbye", want},
		{"code fence", "<answer>\n```\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:\n```\n</answer>", want},
		{"fence with language", "<answer>\n```text\nAgent 0: RIGHT DOWN\n\n\nAgent 1: LEFT LEFT\nAgent 2:\n```\n</answer>", want},
		{"case, spaces, commas, arrows", "<answer>\n   agent 0 :  right,down  \r\nAGENT 1: Left -> left\r\nagent 2:\n</answer>", want},
		{"bullets and bold", "<answer>\n- **Agent 0**: RIGHT DOWN\n* **Agent 1:** LEFT, LEFT\n• Agent 2:\n</answer>", want},
		{"short labels", "<answer>\nAgent0: RIGHT DOWN\nA1: LEFT LEFT\na 2:\n</answer>", want},
		{"any order", "<answer>\nAgent 2:\nAgent 1: LEFT LEFT\nAgent 0: RIGHT,DOWN,\n</answer>", want},
		{"tight arrows", "<answer>Agent 0: RIGHT->DOWN\nAgent 1:LEFT,LEFT\nAgent 2:</answer>", want},
		{"answer around think", "<answer>\nAgent 0: RIGHT DOWN\n<think>hmm, agent 1?\nstill thinking</think>\nAgent 1: LEFT LEFT\nAgent 2:\n</answer>", want},
		{"orphan close then blocks", "junk</think>Agent 0: RIGHT DOWN\n<think>x</think>\nAgent 1: LEFT LEFT\nAgent 2:", want},
		{"many think blocks", "Agent 0: RIGHT<think>1</think> DOWN<think>2\n</think>\nAgent 1: LEFT<think>3</think> LEFT\n<think>4</think>Agent 2:<think>5</think>", want},
		{"json", `<answer>{"paths":[[[0,0],[0,1],[1,1]],[[3,3],[3,2],[3,1]],[[2,0]]]}</answer>`, want},
		{"json in fence", "<think>...</think>\n<answer>\n```json\n{\"paths\": [[[0,0],[0,1],[1,1]], [[3,3],[3,2],[3,1]], [[2,0]]]}\n```\n</answer>", want},
		{"json as given", `{"paths":[[[0,0],[5,5]]]}`, Plan{Paths: [][]Pos{{{0, 0}, {5, 5}}}}},
		{"cells", "<answer>\nAgent 0: [0,0] [0,1] [1,1]\nAgent 1: [3,3] [3,2] [3,1]\nAgent 2: [2,0]\n</answer>", want},
		{"cells spaced, commas, arrows", "Agent 0: [ 0, 0 ], [0 ,1]->[1,1]\nAgent 1:[3,3][3,2][3,1]\nAgent 2: [2,0]", want},
		{"cells beside moves", "Agent 0: RIGHT DOWN\nAgent 1: [3,3] [3,2] [3,1]\nAgent 2:", want},
		{"cells as given", "Agent 0: [1,1] [5,5]\nAgent 1: [3,3]\nAgent 2: [2,0] [2,0]",
			Plan{Paths: [][]Pos{{{1, 1}, {5, 5}}, {{3, 3}}, {{2, 0}, {2, 0}}}}},
		{"off grid is the verifier's job", "Agent 0: UP LEFT\nAgent 1: RIGHT\nAgent 2: DOWN DOWN",
			Plan{Paths: [][]Pos{{{0, 0}, {-1, 0}, {-1, -1}}, {{3, 3}, {3, 4}}, {{2, 0}, {3, 0}, {4, 0}}}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseAnswer(tc.answer, in)
			if err != nil {
				t.Fatalf("ParseAnswer: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got.Paths, tc.want.Paths)
			}
			var rep Report
			VerifyAnswer(in, tc.answer, &rep)
			if !rep.Passed[CheckParsable] {
				t.Fatalf("VerifyAnswer did not parse: %v", rep.ParseErr)
			}
		})
	}
}

func TestParseAnswerRejects(t *testing.T) {
	in := planOpen4(t)
	cases := []struct {
		name, answer string
		line, col    int
		reason       string
	}{
		{"unknown word", "<think>\nfoo\n</think>\n<answer>\nAgent 0: UP JUMP\nAgent 1:\nAgent 2:\n</answer>", 5, 13, `unknown move "JUMP"`},
		{"trailing period", "Agent 0: UP.\nAgent 1:\nAgent 2:", 1, 12, "unexpected character '.'"},
		{"brackets", "Agent 0: [UP]\nAgent 1:\nAgent 2:", 1, 10, "malformed cell"},
		{"cell without column", "Agent 0: [0,0] [1]\nAgent 1:\nAgent 2:", 1, 16, "malformed cell"},
		{"cell unclosed", "Agent 0: [0,0] [1,1\nAgent 1:\nAgent 2:", 1, 16, "malformed cell"},
		{"cell negative", "Agent 0: [0,-1]\nAgent 1:\nAgent 2:", 1, 10, "malformed cell"},
		{"cell huge", "Agent 0: [0,12345]\nAgent 1:\nAgent 2:", 1, 10, "malformed cell"},
		{"cell of three", "Agent 0: [0,1,2]\nAgent 1:\nAgent 2:", 1, 10, "malformed cell"},
		{"cells then a move", "Agent 0: [0,0] [0,1] DOWN\nAgent 1:\nAgent 2:", 1, 22, "mixes moves and cells"},
		{"a move then cells", "Agent 0: RIGHT [0,1]\nAgent 1:\nAgent 2:", 1, 16, "mixes moves and cells"},
		{"single dash", "Agent 0: UP - DOWN\nAgent 1:\nAgent 2:", 1, 13, "unexpected character '-'"},
		{"glued words", "Agent 0: UPDOWN\nAgent 1:\nAgent 2:", 1, 10, `unknown move "UPDOWN"`},
		{"missing colon", "Agent 0 UP\nAgent 1:\nAgent 2:", 1, 9, "expected ':'"},
		{"prose line", "Here is my plan:\nAgent 0: UP\nAgent 1:\nAgent 2:", 1, 1, `expected "Agent <i>: <moves>"`},
		{"no number", "Agent: UP\nAgent 1:\nAgent 2:", 1, 6, "expected an agent number"},
		{"duplicate", "Agent 0: UP\nAgent 1:\nAgent 0: DOWN\nAgent 2:", 3, 7, "duplicate agent 0"},
		{"out of range", "Agent 0: UP\nAgent 1:\nAgent 3:\nAgent 2:", 3, 7, "agent 3 out of range (want 0..2)"},
		{"huge number", "Agent 123456: UP", 1, 7, "agent number out of range"},
		{"missing agent", "Agent 0: UP\nAgent 2:", 0, 0, "missing agent 1"},
		{"one-based", "Agent 1: UP\nAgent 2:\nAgent 3:", 3, 7, "out of range"},
		{"empty", "", 0, 0, "no answer"},
		{"blank", " \n\t\n", 0, 0, "no answer"},
		{"empty answer block", "<answer>\n```\n```\n</answer>", 0, 0, "no agent lines"},
		{"only thinking", "<think>Agent 0: UP</think>", 0, 0, "no answer"},
		{"unclosed think", "<think>\nAgent 0: UP\nAgent 1:\nAgent 2:", 1, 1, "unclosed <think>"},
		{"unclosed think after answer", "Agent 0: UP\nAgent 1:\nAgent 2:\n<think>wait", 4, 1, "unclosed <think>"},
		{"json unknown field", `{"paths":[[[0,0]]],"cost":3}`, 1, 1, "bad JSON answer"},
		{"json no paths", `{}`, 1, 1, `no "paths"`},
		{"json bad position", `{"paths":[[[0,0,1]]]}`, 1, 1, "bad JSON answer"},
		{"json trailing text", "{\"paths\":[]}\nAgent 0: UP", 2, 1, "text after the JSON answer"},
		{"json after lines", "Agent 0: UP\n{\"paths\":[]}", 2, 1, `expected "Agent <i>: <moves>"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseAnswer(tc.answer, in)
			if err == nil {
				t.Fatal("ParseAnswer succeeded, want an error")
			}
			if !errors.Is(err, ErrParse) {
				t.Fatalf("error %v does not wrap ErrParse", err)
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("error %T is not a *ParseError", err)
			}
			if pe.Line != tc.line || pe.Col != tc.col || !strings.Contains(pe.Reason, tc.reason) {
				t.Fatalf("got line %d col %d reason %q, want line %d col %d reason containing %q (%v)",
					pe.Line, pe.Col, pe.Reason, tc.line, tc.col, tc.reason, err)
			}
			var rep Report
			VerifyAnswer(in, tc.answer, &rep)
			if rep.Passed[CheckParsable] || rep.Valid || rep.ParseErr == nil || rep.ParseErr.Reason != pe.Reason {
				t.Fatalf("VerifyAnswer: parsable=%v valid=%v parseErr=%v", rep.Passed[CheckParsable], rep.Valid, rep.ParseErr)
			}
			for c := range NumChecks {
				if rep.Passed[c] {
					t.Errorf("check %v passed after a parse error", c)
				}
			}
			if len(rep.Failures) != 1 || rep.Failures[0].Kind != KindParse || rep.Failures[0].Check != CheckParsable {
				t.Errorf("failures %v, want one parse failure", rep.Failures)
			}
			if got := rep.Categories(); got[CategoryParse] != 1 {
				t.Errorf("categories %v", got)
			}
		})
	}
}

func TestParseErrorText(t *testing.T) {
	long := "Agent 0: UP " + strings.Repeat("é", 100) + " X"
	_, err := ParseMoves(long)
	var pe *ParseError
	if !errors.As(err, &pe) {
		t.Fatalf("want *ParseError, got %v", err)
	}
	if len(pe.Text) > planMaxErrText || !strings.HasPrefix(pe.Text, "Agent 0: UP") {
		t.Fatalf("Text %q: want a prefix of the line of at most %d bytes", pe.Text, planMaxErrText)
	}
	if !strings.Contains(err.Error(), "line 1 col 13") || !strings.Contains(err.Error(), "unexpected character 'é'") {
		t.Fatalf("Error() = %q", err.Error())
	}
	if (&ParseError{Reason: "no answer"}).Error() != "env: cannot parse plan: no answer" {
		t.Fatal("Error() without a line")
	}
}

func TestParseMoves(t *testing.T) {
	got, err := ParseMoves("<answer>\nAgent 1: up wait\nAgent 0:\n</answer>")
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Move{{}, {Up, Wait}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	for _, bad := range []string{`{"paths":[]}`, "Agent 1: UP", "Agent 10: UP", "Agent 0: UP\nAgent 0: UP", "Agent 0: [0,0]"} {
		if _, err := ParseMoves(bad); !errors.Is(err, ErrParse) {
			t.Errorf("ParseMoves(%q) = %v, want a parse error", bad, err)
		}
	}
}

func TestFormatMovesRoundTrip(t *testing.T) {
	rng := planRNG(t)
	if got := FormatMoves([][]Move{{Up, Right}, {}, {Wait}}); got != "<answer>\nAgent 0: UP RIGHT\nAgent 1:\nAgent 2: WAIT\n</answer>" {
		t.Fatalf("FormatMoves = %q", got)
	}
	for range 200 {
		k := 1 + rng.IntN(MaxAgents)
		moves := make([][]Move, k)
		for i := range moves {
			moves[i] = make([]Move, rng.IntN(12))
			for j := range moves[i] {
				moves[i][j] = Move(rng.IntN(NumMoves))
			}
		}
		text := FormatMoves(moves)
		got, err := ParseMoves(text)
		if err != nil {
			t.Fatalf("ParseMoves(FormatMoves) of %v: %v", moves, err)
		}
		if !reflect.DeepEqual(got, moves) {
			t.Fatalf("round trip: got %v want %v", got, moves)
		}
	}
}

func TestFormatCellsRoundTrip(t *testing.T) {
	p := Plan{Paths: [][]Pos{{{0, 0}, {1, 0}}, {{12, 3}}}}
	if got := FormatCells(&p); got != "<answer>\nAgent 0: [0,0] [1,0]\nAgent 1: [12,3]\n</answer>" {
		t.Fatalf("FormatCells = %q", got)
	}
	// A text answer has exactly one line per agent of the instance.
	planPathsRoundTrip(t, "FormatCells", FormatCells, func(*rand.Rand) int { return 3 })
}

func TestFormatPathsRoundTrip(t *testing.T) {
	p := Plan{Paths: [][]Pos{{{0, 0}, {1, 0}}, {{2, 3}}}}
	if got := FormatPaths(&p); got != "<answer>\n{\"paths\": [\n[[0,0],[1,0]],\n[[2,3]]\n]}\n</answer>" {
		t.Fatalf("FormatPaths = %q", got)
	}
	planPathsRoundTrip(t, "FormatPaths", FormatPaths, func(rng *rand.Rand) int { return 1 + rng.IntN(MaxAgents) })
}

// planPathsRoundTrip formats 200 random plans of agents(rng) paths (1 to 12 cells each) with
// format and parses them back against the 3-agent planOpen4: the same paths must come back.
func planPathsRoundTrip(t *testing.T, name string, format func(*Plan) string, agents func(*rand.Rand) int) {
	t.Helper()
	rng := planRNG(t)
	in := planOpen4(t)
	for range 200 {
		paths := make([][]Pos, agents(rng))
		for i := range paths {
			paths[i] = make([]Pos, 1+rng.IntN(12))
			for j := range paths[i] {
				paths[i][j] = Pos{rng.IntN(12), rng.IntN(12)}
			}
		}
		got, err := ParseAnswer(format(&Plan{Paths: paths}), in)
		if err != nil {
			t.Fatalf("ParseAnswer(%s) of %v: %v", name, paths, err)
		}
		if !reflect.DeepEqual(got.Paths, paths) {
			t.Fatalf("%s round trip: got %v want %v", name, got.Paths, paths)
		}
	}
}

func TestPlanMoves(t *testing.T) {
	p := Plan{Paths: [][]Pos{{{0, 0}, {0, 1}, {1, 1}, {1, 1}, {0, 1}, {0, 0}}, {{2, 2}}, {}}}
	got, err := PlanMoves(&p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Move{{Right, Down, Wait, Up, Left}, nil, nil}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
	in := planOpen4(t)
	back, err := ParseAnswer(FormatMoves([][]Move{got[0], {}, {}}), in)
	if err != nil || !reflect.DeepEqual(back.Paths[0], p.Paths[0]) {
		t.Fatalf("PlanMoves→FormatMoves→ParseAnswer: %v %v", back.Paths, err)
	}
	for _, bad := range [][]Pos{{{0, 0}, {1, 1}}, {{0, 0}, {0, 2}}} {
		_, err := PlanMoves(&Plan{Paths: [][]Pos{{{0, 0}}, bad}})
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "paths[1][1]" {
			t.Errorf("PlanMoves(%v) = %v, want a FieldError on paths[1][1]", bad, err)
		}
	}
}

// TestParseAnswerRandomPlans checks ParseAnswer against the moves it was
// given, for random instances and decorated answers.
func TestParseAnswerRandomPlans(t *testing.T) {
	rng := planRNG(t)
	for range 300 {
		n := 3 + rng.IntN(8)
		k := 1 + rng.IntN(min(n, 5))
		in := planRandInstance(rng, n, k, 0.2)
		moves := make([][]Move, k)
		for i := range moves {
			moves[i] = make([]Move, rng.IntN(10))
			for j := range moves[i] {
				moves[i][j] = Move(rng.IntN(NumMoves))
			}
		}
		answer := "<think>\nplanning...\n</think>\n" + FormatMoves(moves)
		p, err := ParseAnswer(answer, in)
		if err != nil {
			t.Fatalf("%q: %v", answer, err)
		}
		for i, ms := range moves {
			cur := in.Agents[i].Start
			if len(p.Paths[i]) != len(ms)+1 || p.Paths[i][0] != cur {
				t.Fatalf("agent %d: path %v for moves %v", i, p.Paths[i], ms)
			}
			for j, m := range ms {
				cur = m.Apply(cur)
				if p.Paths[i][j+1] != cur {
					t.Fatalf("agent %d step %d: got %v want %v", i, j+1, p.Paths[i][j+1], cur)
				}
			}
		}
	}
}
