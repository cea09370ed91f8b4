package engineer

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

const engObj = `{"rationale": "more data at 5", "config": {"sizes": [{"size": 3, "data_ratio": 0.5, "hole_ratio": 0.1, "wait_ratio": 0.2}, {"size": 5, "data_ratio": 0.5, "hole_ratio": 0.3, "wait_ratio": 0.4}], "agents": 2, "instances": 100}}`

func TestStripThink(t *testing.T) {
	cases := []struct {
		in, want string
		unclosed bool
	}{
		{"plain", "plain", false},
		{"<think>a {x} b</think>answer", "answer", false},
		{"pre<THINK>x</Think>post", "prepost", false},
		{"<think>a</think>mid<think>b</think>end", "midend", false},
		{"reasoning without open</think>answer", "answer", false},
		{"answer<think>never closed {\"a\":1}", "answer", true},
		{"</think>x</think>y", "x</think>y", false},
		{"\x95</think>ok", "ok", false},
		{"İ<THINK>x</THINK>ok", "İok", false},
	}
	for _, c := range cases {
		got, unclosed := StripThink(c.in)
		if got != c.want || unclosed != c.unclosed {
			t.Errorf("StripThink(%q) = %q, %v; want %q, %v", c.in, got, unclosed, c.want, c.unclosed)
		}
	}
}

func TestExtractJSON(t *testing.T) {
	other := `{"note": 1}`
	cases := []struct {
		name, in, want string
		err            error
	}{
		{"bare", engObj, engObj, nil},
		{"fenced", "Here it is:\n```json\n" + engObj + "\n```\nDone.", engObj, nil},
		{"think", "<think>maybe {\"config\": 1}? no.</think>\n\n" + engObj, engObj, nil},
		{"orphan close", "I think {sizes} so</think>" + engObj, engObj, nil},
		{"text around", "The plan: " + engObj + " — that is all.", engObj, nil},
		{"braces in strings", `{"rationale": "use {x} and \"}\"", "config": {}}`, `{"rationale": "use {x} and \"}\"", "config": {}}`, nil},
		{"prose braces then object", "sets {a, b} then " + engObj, engObj, nil},
		{"one of two has config", other + "\n" + engObj, engObj, nil},
		{"same twice", engObj + engObj, "", ErrAmbiguousJSON},
		{"two without config", other + other, "", ErrAmbiguousJSON},
		{"none", "no json here", "", ErrNoJSON},
		{"empty", "", "", ErrNoJSON},
		{"only in think", "<think>" + engObj + "</think>sorry", "", ErrNoJSON},
		{"unclosed think", "<think>" + engObj, "", ErrNoJSON},
		{"trailing comma", `{"rationale": "x", "config": {"agents": 2,}}`, "", ErrNoJSON},
		{"unbalanced", `{"rationale": "x"`, "", ErrNoJSON},
		{"cut short, a piece inside", `{"rationale": "r", "config": {"sizes": [{"size": 3, "data_ratio": 0.28}}`, "", ErrNoJSON},
		{"stray brace, then the answer", "I use { for sets. " + engObj, engObj, nil},
		{"object, then one cut short", other + ` {"rationale": "r", "config": {"sizes": [{"size": 3}`, other, nil},
		{"array only", `[1, 2]`, "", ErrNoJSON},
	}
	for _, c := range cases {
		got, err := ExtractJSON(c.in)
		if c.err != nil {
			if !errors.Is(err, c.err) {
				t.Errorf("%s: err %v, want %v", c.name, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%s: got %q, %v; want %q", c.name, got, err, c.want)
		}
	}
	// An answer cut short says so.
	_, err := ExtractJSON(`x {"rationale": "r", "config": {"sizes": [{"size": 3, "data_ratio": 0.28}}`)
	if err == nil || !strings.Contains(err.Error(), "opens at byte 2 never closes") {
		t.Errorf("cut short: %v", err)
	}
	// A broken object is reported with its syntax error, and its inner
	// objects are not taken for the answer.
	_, err = ExtractJSON(`{"rationale": "x", "config": {"agents": 2},}`)
	if err == nil || !strings.Contains(err.Error(), "not valid JSON") {
		t.Errorf("broken object: %v", err)
	}
}

func TestParseAnswer(t *testing.T) {
	a, err := ParseAnswer("```json\n" + engObj + "\n```")
	if err != nil {
		t.Fatal(err)
	}
	want := env.Config{Agents: 2, Instances: 100, Sizes: []env.SizeConfig{{Size: 3, DataRatio: 0.5, HoleRatio: 0.1, WaitRatio: 0.2}, {Size: 5, DataRatio: 0.5, HoleRatio: 0.3, WaitRatio: 0.4}}}
	if a.Rationale != "more data at 5" || a.Config.Hash() != want.Hash() {
		t.Errorf("got %+v", a)
	}
	bad := []struct {
		name, in, field string
	}{
		{"unknown top", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "agents": 2, "instances": 1}, "extra": 1}`, "extra"},
		{"unknown size field", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0, "holes": 2}], "agents": 2, "instances": 1}}`, "config.sizes[0].holes"},
		{"wrong case", `{"Rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "agents": 2, "instances": 1}}`, "Rationale"},
		{"wrong case inside", `{"rationale": "", "config": {"sizes": [{"Size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "agents": 2, "instances": 1}}`, "config.sizes[0].Size"},
		{"missing rationale", `{"config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "agents": 2, "instances": 1}}`, "rationale"},
		{"missing config", `{"rationale": "x"}`, "config"},
		{"missing agents", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "instances": 1}}`, "config.agents"},
		{"missing instances", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "agents": 2}}`, "config.instances"},
		{"missing ratio", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "wait_ratio": 0}], "agents": 2, "instances": 1}}`, "config.sizes[0].hole_ratio"},
		{"null ratio", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": null, "wait_ratio": 0}], "agents": 2, "instances": 1}}`, "config.sizes[0].hole_ratio"},
		{"empty sizes", `{"rationale": "", "config": {"sizes": [], "agents": 2, "instances": 1}}`, "config.sizes"},
		{"float agents", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 1, "hole_ratio": 0, "wait_ratio": 0}], "agents": 2.5, "instances": 1}}`, "config.agents"},
		{"string ratio", `{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": "1", "hole_ratio": 0, "wait_ratio": 0}], "agents": 2, "instances": 1}}`, "config.sizes.data_ratio"},
	}
	for _, c := range bad {
		_, err := ParseAnswer(c.in)
		var fe *env.FieldError
		if !errors.Is(err, ErrSchema) {
			t.Errorf("%s: err %v, want ErrSchema", c.name, err)
			continue
		}
		if !errors.As(err, &fe) || fe.Field != c.field {
			t.Errorf("%s: err %v, want field %q", c.name, err, c.field)
		}
	}
	// Numbers out of range decode: judging them is the caller's business.
	a, err = ParseAnswer(`{"rationale": "", "config": {"sizes": [{"size": 3, "data_ratio": 7, "hole_ratio": -1, "wait_ratio": 2}], "agents": 2, "instances": 1}}`)
	if err != nil || a.Config.Sizes[0].DataRatio != 7 {
		t.Errorf("out of range: %+v, %v", a, err)
	}
}

// FuzzExtractJSON: never panics; a result is valid JSON, an object, a
// substring of the answer outside think blocks, and extracts to itself.
func FuzzExtractJSON(f *testing.F) {
	for _, s := range []string{
		engObj, "```json\n" + engObj + "\n```", "<think>{}</think>" + engObj, "{", "}", `{"a":"}"}`, `{"a":{"b":[{}]}}{"config":1}`,
		"</think>{}", "<think><think>{}</think>{\"x\":1}", `{"a":"\"}`, "{{{{{{}}", "[{}]", `{"config":{}} {"config":{}}`, "\x00{}\xff", `</think>{"a":"</think>"}`, "<thi<think>x</think>nk>{}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got, err := ExtractJSON(s)
		if err != nil {
			if !errors.Is(err, ErrNoJSON) && !errors.Is(err, ErrAmbiguousJSON) {
				t.Fatalf("unexpected error type: %v", err)
			}
			return
		}
		var v map[string]any
		if json.Unmarshal([]byte(got), &v) != nil {
			t.Fatalf("result %q is not a JSON object", got)
		}
		stripped, _ := StripThink(s)
		if !strings.Contains(stripped, got) {
			t.Fatalf("result %q is not in the answer", got)
		}
		// Idempotent, unless the object itself spells a think tag (which
		// StripThink cannot tell from a real one).
		if !strings.Contains(strings.ToLower(got), "think>") {
			again, err := ExtractJSON(got)
			if err != nil || again != got {
				t.Fatalf("not idempotent: %q → %q, %v", got, again, err)
			}
		}
		// Decoding never panics either.
		_, _ = ParseAnswer(s)
	})
}
