package textpolicy

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestParseShape: t2t sft's --agents and --sizes parse into the options;
// a bad value is a field error worded as the flag.
func TestParseShape(t *testing.T) {
	var o SFTOptions
	if err := o.ParseShape("2, 3", "3-7"); err != nil || fmt.Sprint(o.Agents) != "[2 3]" || o.MinSize != 3 || o.MaxSize != 7 {
		t.Fatalf("%+v, %v", o, err)
	}
	o = SFTOptions{}
	if err := o.ParseShape("4", "6"); err != nil || o.MinSize != 6 || o.MaxSize != 6 {
		t.Fatalf("one size: %+v, %v", o, err)
	}
	for _, tc := range []struct{ agents, sizes, usage string }{
		{"2,x", "3-5", fmt.Sprintf(`--agents "2,x": want agent counts in 1..%d, comma-separated`, env.MaxAgents)},
		{"0", "3-5", fmt.Sprintf(`--agents "0": want agent counts in 1..%d, comma-separated`, env.MaxAgents)},
		{"2", "5-3", fmt.Sprintf(`--sizes "5-3": want MIN-MAX within %d..%d`, env.MinSize, env.MaxSize)},
		{"2", "3-999", fmt.Sprintf(`--sizes "3-999": want MIN-MAX within %d..%d`, env.MinSize, env.MaxSize)},
	} {
		var fe *fielderr.Error
		o := SFTOptions{}
		if err := o.ParseShape(tc.agents, tc.sizes); !errors.As(err, &fe) || fe.Usage() != tc.usage {
			t.Errorf("%q %q: %v, want %q", tc.agents, tc.sizes, err, tc.usage)
		}
	}
}

// TestAddEngineerTurns: each turn becomes its EngineerSample, and the line
// naming them is written only when there are turns.
func TestAddEngineerTurns(t *testing.T) {
	lm := tpLM(t, 1)
	turns := []engineer.Turn{{System: "sys", User: "user", Answer: `{"rationale": "r"}`, Teacher: "rules", Prompt: "compact", Modules: "F,T"}}
	var b strings.Builder
	o := SFTOptions{EngineerEvery: 4}
	o.AddEngineerTurns(&b, lm, nil, false, "t.jsonl")
	if b.Len() != 0 || len(o.Engineer) != 0 {
		t.Fatalf("no turns: wrote %q, %d samples", b.String(), len(o.Engineer))
	}
	o.AddEngineerTurns(&b, lm, turns, true, "t.jsonl")
	want := EngineerSample(lm, &turns[0], true)
	if len(o.Engineer) != 1 || !reflect.DeepEqual(o.Engineer[0], want) {
		t.Fatalf("samples %+v, want %+v", o.Engineer, want)
	}
	if got := b.String(); got != "engineer turns: 1 from t.jsonl (teacher rules, prompt compact, modules F,T), every 4 steps\n" {
		t.Fatalf("wrote %q", got)
	}
}

// TestEngineerTexts: the texts a tokenizer learns from for engineer turns
// encode to exactly the prompt and completion EngineerSample teaches
// (thinking off), the end-of-turn marker as the stop token.
func TestEngineerTexts(t *testing.T) {
	lm := tpLM(t, 1)
	turns := []engineer.Turn{
		{System: "sys", User: "user one", Answer: `{"rationale": "r", "config": {"agents": 2}}`},
		{System: "sys", User: "user two", Answer: `{"rationale": "s"}`},
	}
	texts := EngineerTexts(turns)
	if len(texts) != 2*len(turns) {
		t.Fatalf("%d texts for %d turns", len(texts), len(turns))
	}
	for i := range turns {
		s := EngineerSample(lm, &turns[i], false)
		if got := lm.Tok.Encode(texts[2*i]); !reflect.DeepEqual(got, s.Prompt) {
			t.Errorf("turn %d: prompt text encodes to %v, EngineerSample's prompt is %v", i, got, s.Prompt)
		}
		if got := lm.Tok.Encode(texts[2*i+1]); len(got) != len(s.Completion)+1 || !reflect.DeepEqual(got[:len(s.Completion)], s.Completion) {
			t.Errorf("turn %d: answer text encodes to %v, EngineerSample's completion is %v (then a newline)", i, got, s.Completion)
		}
	}
}
