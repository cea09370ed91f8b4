package env

import (
	"errors"
	"reflect"
	"testing"
)

func planFuzzInstances(t testing.TB) []*Instance {
	return []*Instance{
		planInst(t, []string{"....", "....", "....", "...."}, planAg(0, 0, 1, 1), planAg(3, 3, 3, 1), planAg(2, 0, 2, 0)),
		planInst(t, []string{"...", ".H.", "..."}, planAg(0, 0, 2, 2)),
		planInst(t, []string{"..H..", ".....", "H....", ".....", "....."}, planAg(0, 0, 4, 4), planAg(4, 0, 0, 4), planAg(1, 1, 3, 3), planAg(2, 2, 2, 1)),
	}
}

func FuzzParseAnswer(f *testing.F) {
	for _, s := range []string{
		"",
		"<answer>\nAgent 0: RIGHT DOWN\nAgent 1: LEFT LEFT\nAgent 2:\n</answer>",
		"<think>\nhmm\n</think>\n<answer>\n- **Agent 0**: up, down -> left\n* A1: WAIT\nagent2: right\n</answer>",
		"prompt opened it</think>Agent 0: UP\nAgent 1:\nAgent 2:",
		"<answer>x</answer><answer>\n```\nAgent0: UP\nAgent 1: DOWN\nAgent 2:\n```",
		"<answer>Agent 0: UP\n<think>x</think>Agent 1: UP\n<think>y</think>\nAgent 2: UP</answer>",
		"<think>never closed",
		"Agent 0: UP JUMP",
		"Agent 0: UP\nAgent 0: UP",
		"Agent 99999: UP",
		`{"paths":[[[0,0],[0,1],[1,1]],[[3,3],[3,2],[3,1]],[[2,0]]]}`,
		"```json\n{\"paths\":[[[0,0]],[[9,-9]]]}\n```",
		`{"paths":[[]]}`,
		`{"paths":null}`,
		"<ANSWER>\n• Agent 0 **:** right\n</answer>",
		"</think></think><think></think><answer></answer>",
		"<answer>\nAgent 0: [0,0] [0,1] [1,1]\nAgent 1: RIGHT\nAgent 2: [ 2 , 0 ]\n</answer>",
		"Agent 0: [0,0] DOWN\nAgent 1: [1,\nAgent 2: [9999,1]",
		"<answer>\nT0: [0,0] [3,3] [2,0]\nT1: [0,1] [3,2] [2,0]\nT2: [1,1] [3,1] [2,0]\n</answer>",
		"**Step 0:** [0,0], [3,3], [2,0]\nt 1: [0,1] [3,2]\nT1: UP",
	} {
		f.Add(s, uint8(0))
		f.Add(s, uint8(2))
	}
	ins := planFuzzInstances(f)
	var r1, r2 Report
	f.Fuzz(func(t *testing.T, answer string, which uint8) {
		in := ins[int(which)%len(ins)]
		p, err := ParseAnswer(answer, in)
		VerifyAnswer(in, answer, &r2)
		if err != nil {
			var pe *ParseError
			if !errors.Is(err, ErrParse) || !errors.As(err, &pe) || pe.Reason == "" || pe.Line < 0 || pe.Col < 0 {
				t.Fatalf("bad error %#v", err)
			}
			_ = err.Error()
			if r2.Passed[CheckParsable] || r2.ParseErr == nil || r2.ParseErr.Reason != pe.Reason {
				t.Fatalf("VerifyAnswer disagrees on parse error: %v vs %v", err, r2.ParseErr)
			}
		} else {
			Verify(in, &p, &r1)
			if !r2.Passed[CheckParsable] || !reflect.DeepEqual(r1.Failures, r2.Failures) || r1.Passed != r2.Passed || r1.SOC != r2.SOC {
				t.Fatalf("Verify %v vs VerifyAnswer %v", r1.Failures, r2.Failures)
			}
			planFuzzRoundTrip(t, in, p)
		}
		if ms, err := ParseMoves(answer); err == nil {
			back, err := ParseMoves(FormatMoves(ms))
			if err != nil || !reflect.DeepEqual(back, ms) {
				t.Fatalf("ParseMoves round trip: %v %v -> %v", ms, err, back)
			}
		} else if !errors.Is(err, ErrParse) {
			t.Fatalf("ParseMoves error %v", err)
		}
	})
}

// planFuzzRoundTrip: a plan that the text form can express comes back
// unchanged through FormatMoves, or FormatCells, and ParseAnswer; through FormatSteps less the
// copies of its last cell that end a path.
func planFuzzRoundTrip(t *testing.T, in *Instance, p Plan) {
	if len(p.Paths) != len(in.Agents) {
		return
	}
	cells := true
	for _, path := range p.Paths {
		for _, c := range path {
			cells = cells && len(path) > 0 && c.R >= 0 && c.C >= 0 && c.R < 10000 && c.C < 10000
		}
		cells = cells && len(path) > 0
	}
	if cells {
		if back, err := ParseAnswer(FormatCells(&p), in); err != nil || !reflect.DeepEqual(back, p) {
			t.Fatalf("cells round trip of %v: %v %v", p.Paths, back.Paths, err)
		}
		text, err := FormatSteps(&p)
		if err != nil {
			t.Fatalf("FormatSteps of %v: %v", p.Paths, err)
		}
		if back, err := ParseAnswer(text, in); err != nil || !reflect.DeepEqual(back.Paths, trimRepeats(p.Paths)) {
			t.Fatalf("steps round trip of %v: %v %v", p.Paths, back.Paths, err)
		}
	}
	for i, path := range p.Paths {
		if len(path) == 0 || path[0] != in.Agents[i].Start {
			return
		}
	}
	ms, err := PlanMoves(&p)
	if err != nil {
		return
	}
	back, err := ParseAnswer(FormatMoves(ms), in)
	if err != nil || !reflect.DeepEqual(back, p) {
		t.Fatalf("round trip of %v: %v %v", p.Paths, back.Paths, err)
	}
}

// planFuzzDecode builds an instance and a plan from bytes; ok is false when
// the bytes do not give a valid instance.
func planFuzzDecode(data []byte) (in *Instance, p *Plan, ok bool) {
	next := func() int {
		if len(data) == 0 {
			return 0
		}
		b := data[0]
		data = data[1:]
		return int(b)
	}
	n := 2 + next()%7
	k := 1 + next()%min(n, 5)
	in = &Instance{Width: n, Height: n, Holes: make([]bool, n*n)}
	for i := range in.Holes {
		in.Holes[i] = next()%5 == 0
	}
	for range k {
		s := Pos{next() % n, next() % n}
		g := Pos{next() % n, next() % n}
		in.Agents = append(in.Agents, Agent{Start: s, Goal: g})
	}
	if in.Validate() != nil {
		return nil, nil, false
	}
	in.SOC = next() % 20
	in.Makespan = next() % 10
	npaths := k
	if b := next(); b >= 250 {
		npaths = b - 250 // 0..5 paths
	}
	p = &Plan{Paths: make([][]Pos, npaths)}
	for i := range npaths {
		l := next() % 24
		for range l {
			p.Paths[i] = append(p.Paths[i], Pos{next()%(n+4) - 2, next()%(n+4) - 2})
		}
	}
	return in, p, true
}

func FuzzVerify(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 2, 2, 2, 2, 2, 2})
	f.Add([]byte("\x03\x02holesholesholesABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789abcdefghijklmnopqrstuvwxyz"))
	f.Add([]byte("\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\xff\x07\x07\x07\x07\x07"))
	var rep Report
	f.Fuzz(func(t *testing.T, data []byte) {
		in, p, ok := planFuzzDecode(data)
		if !ok {
			return
		}
		Verify(in, p, &rep)
		planCheckNaive(t, in, p, &rep)
		total := 0
		for _, c := range rep.Counts {
			total += c
		}
		if len(rep.Failures)+rep.Truncated != total || len(rep.Failures) > MaxFailures {
			t.Fatalf("stored %d + truncated %d != %d", len(rep.Failures), rep.Truncated, total)
		}
		cats := rep.Categories()
		sum := 0
		for _, c := range cats {
			sum += c
		}
		if sum != total {
			t.Fatalf("categories %v sum to %d, want %d", cats, sum, total)
		}
		for _, fl := range rep.Failures {
			if fl.Check != fl.Kind.Check() || fl.Agent < 0 || fl.Agent >= max(len(in.Agents), len(p.Paths)) {
				t.Fatalf("bad failure %+v", fl)
			}
		}
		if rep.Optimal && (!rep.Valid || rep.SOC > in.SOC) {
			t.Fatalf("optimal without being valid and at most the optimum: %+v", rep)
		}
	})
}
