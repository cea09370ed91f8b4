package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// TestOneTinyModel: `t2t model init --preset tiny` and `t2t bench --preset
// tiny` build one shape (the bench's parameters are the checkpoint's), and
// --tokenizer-vocab's help names the vocabulary it really yields, which a
// larger value does not change.
func TestOneTinyModel(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	code, out, e := t2t(t, "model", "init", "--preset", "tiny", "--out", dir)
	if code != 0 {
		t.Fatalf("model init: exit %d: %s", code, e)
	}
	ck, err := hfmodel.LoadConfig(dir)
	if err != nil {
		t.Fatal(err)
	}
	code, js, e := t2t(t, "bench", "grpo", "--preset", "tiny", "--batch", "2", "--prompt-len", "4", "--completion-len", "4", "--steps", "1", "--json")
	if code != 0 {
		t.Fatalf("bench grpo: exit %d: %s", code, e)
	}
	var rep struct {
		Params int64 `json:"params"`
	}
	if err := json.Unmarshal([]byte(js), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Params != ck.NumParams() {
		t.Errorf("bench grpo --preset tiny: %d parameters; model init --preset tiny: %d", rep.Params, ck.NumParams())
	}
	// The shapes both print (the parameter counts above cover the intermediate size).
	initShape := regexp.MustCompile(`(\d+) layers, hidden (\d+), heads (\d+)/(\d+) × (\d+), intermediate \d+, vocab (\d+)`)
	benchShape := regexp.MustCompile(`tiny \((\d+) layers, hidden (\d+), (\d+)/(\d+) heads × (\d+), vocab (\d+)\)`)
	_, text, _ := t2t(t, "bench", "grpo", "--preset", "tiny", "--batch", "2", "--prompt-len", "4", "--completion-len", "4", "--steps", "1")
	a, b := initShape.FindStringSubmatch(out), benchShape.FindStringSubmatch(text)
	if a == nil || b == nil || strings.Join(a[1:], " ") != strings.Join(b[1:], " ") {
		t.Errorf("model init's shape %q, bench grpo's %q: want one tiny shape", a, b)
	}

	// --tokenizer-vocab: its help says what the default yields, and 4096 yields the same.
	_, _, usage := t2t(t, "model", "init", "-h")
	want := strconv.Itoa(ck.VocabSize)
	if i := strings.Index(usage, "-tokenizer-vocab"); i < 0 || !strings.Contains(usage[i:min(i+300, len(usage))], "("+want+" from the testbed's texts alone)") {
		t.Errorf("model init -h: --tokenizer-vocab does not say it yields %s:\n%s", want, usage)
	}
	if ck.VocabSize != textpolicy.DefaultTinyVocab {
		t.Errorf("model init --preset tiny: vocab %d, want %d", ck.VocabSize, textpolicy.DefaultTinyVocab)
	}
	big := filepath.Join(t.TempDir(), "big")
	if code, out, e := t2t(t, "model", "init", "--out", big, "--tokenizer-vocab", "4096"); code != 0 || !strings.Contains(out, "(vocab "+want+",") {
		t.Errorf("model init --tokenizer-vocab 4096: exit %d, %q %q: want vocab %s", code, out, e, want)
	}
}

// TestTokenizerTurns: `t2t model init --tokenizer-turns` learns the tiny
// tokenizer from the testbed's texts and the file's training turns, so
// that held-out engineer turns (never read) take under half the tokens of
// the default tokenizer's; editing a held-out turn changes nothing, and
// bad combinations are refused.
func TestTokenizerTurns(t *testing.T) {
	dir := t.TempDir()
	turnsPath := filepath.Join(dir, "turns.jsonl")
	if code, _, e := t2t(t, "engineer", "turns", "--histories", historiesFile, "--out", turnsPath, "--teacher", "learnability",
		"--prompt", "compact", "--modules", "F,G,H0,T"); code != 0 {
		t.Fatalf("engineer turns: exit %d: %s", code, e)
	}
	turns, err := engineer.ReadTurnsFile(turnsPath)
	if err != nil {
		t.Fatal(err)
	}
	var held []engineer.Turn
	for _, tu := range turns {
		if tu.HeldOut {
			held = append(held, tu)
		}
	}
	if len(held) == 0 || len(held) == len(turns) {
		t.Fatalf("%d of %d turns held out: want some of each", len(held), len(turns))
	}
	withTurns := filepath.Join(dir, "A")
	code, out, e := t2t(t, "model", "init", "--out", withTurns, "--tokenizer-turns", turnsPath)
	if code != 0 || !strings.Contains(out, fmt.Sprintf("%d engineer training turns", len(turns)-len(held))) {
		t.Fatalf("model init --tokenizer-turns: exit %d: %q %q", code, out, e)
	}
	plain := filepath.Join(dir, "B")
	if code, _, e := t2t(t, "model", "init", "--out", plain); code != 0 {
		t.Fatalf("model init: exit %d: %s", code, e)
	}
	tokA, err := tokenizer.Load(filepath.Join(withTurns, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tokB, err := tokenizer.Load(filepath.Join(plain, "tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	if tokA.VocabSize() <= tokB.VocabSize() {
		t.Errorf("vocab %d with the turns, %d without: want more", tokA.VocabSize(), tokB.VocabSize())
	}
	var nA, nB int
	for _, text := range textpolicy.EngineerTexts(held) {
		nA += len(tokA.Encode(text))
		nB += len(tokB.Encode(text))
	}
	t.Logf("held-out engineer turns: %d tokens with the turns in the corpus, %d without", nA, nB)
	if 2*nA >= nB {
		t.Errorf("held-out engineer turns take %d tokens, %d with the default tokenizer: want under half", nA, nB)
	}

	// A held-out turn is never read: rewriting its answer gives the same tokenizer.
	edited := slices.Clone(turns)
	for i := range edited {
		if edited[i].HeldOut {
			edited[i].Answer = strings.Repeat("zqx wvk ", 200)
		}
	}
	editedPath := filepath.Join(dir, "edited.jsonl")
	writeTurns(t, editedPath, edited)
	again := filepath.Join(dir, "C")
	if code, _, e := t2t(t, "model", "init", "--out", again, "--tokenizer-turns", editedPath); code != 0 {
		t.Fatalf("model init --tokenizer-turns (edited held-out turns): exit %d: %s", code, e)
	}
	a, _ := os.ReadFile(filepath.Join(withTurns, "tokenizer.json"))
	c, _ := os.ReadFile(filepath.Join(again, "tokenizer.json"))
	if !bytes.Equal(a, c) {
		t.Error("editing held-out turns changed the learned tokenizer: they were read")
	}

	heldPath := filepath.Join(dir, "held.jsonl")
	writeTurns(t, heldPath, held)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--tokenizer-turns", heldPath}, "no training turn"},
		{[]string{"--tokenizer-turns", filepath.Join(dir, "missing.jsonl")}, "missing.jsonl"},
		{[]string{"--tokenizer", filepath.Join(plain, "tokenizer.json"), "--tokenizer-turns", turnsPath}, "--tokenizer-turns"},
		{[]string{"--tokenizer", filepath.Join(plain, "tokenizer.json"), "--tokenizer-vocab", "300"}, "--tokenizer-vocab"},
	} {
		bad := filepath.Join(dir, "bad")
		code, _, e := t2t(t, append([]string{"model", "init", "--out", bad}, tc.args...)...)
		if code != 2 || !strings.Contains(e, tc.want) {
			t.Errorf("model init %v: exit %d, %q: want exit 2 naming %q", tc.args, code, e, tc.want)
		}
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Errorf("model init %v: wrote %s (stat: %v)", tc.args, bad, err)
		}
	}
}

// writeTurns writes turns to path as t2t engineer turns does.
func writeTurns(t *testing.T, path string, turns []engineer.Turn) {
	t.Helper()
	var buf bytes.Buffer
	if err := engineer.WriteTurns(&buf, turns); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}
