package engineer

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// writeTestFile writes data to name in a test folder and returns its path.
func writeTestFile(t *testing.T, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// usageOf is err's *fielderr.Error's Usage, failing the test without one.
func usageOf(t *testing.T, err error) string {
	t.Helper()
	var fe *fielderr.Error
	if !errors.As(err, &fe) {
		t.Fatalf("%v: not a *fielderr.Error", err)
	}
	return fe.Usage()
}

// TestReadFiles: the history, histories and turns files read back what was
// written; a missing file and a malformed one are field errors, the second
// naming the file.
func TestReadFiles(t *testing.T) {
	h := engHandHistory()
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ReadHistoryFile(writeTestFile(t, "h.json", b)); err != nil || len(got.Stages) != len(h.Stages) {
		t.Fatalf("ReadHistoryFile: %v", err)
	}
	two := append(append(append([]byte(nil), b...), '\n'), b...)
	if got, err := ReadHistoriesFile(writeTestFile(t, "h.jsonl", two)); err != nil || len(got) != 2 {
		t.Fatalf("ReadHistoriesFile: %d histories, %v", len(got), err)
	}
	mods, _ := ParseModules("F,T")
	turns, err := Turns(context.Background(), []*History{h}, TurnOptions{Teacher: NameRules, Modules: mods, Prompt: PromptCompact})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := WriteTurns(&buf, turns); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTurnsFile(writeTestFile(t, "t.jsonl", buf.Bytes())); err != nil || len(got) != len(turns) {
		t.Fatalf("ReadTurnsFile: %d of %d turns, %v", len(got), len(turns), err)
	}
	missing := filepath.Join(t.TempDir(), "none.json")
	for _, read := range []func(string) error{
		func(p string) error { _, err := ReadHistoryFile(p); return err },
		func(p string) error { _, err := ReadHistoriesFile(p); return err },
		func(p string) error { _, err := ReadTurnsFile(p); return err },
	} {
		if u := usageOf(t, read(missing)); !strings.Contains(u, "none.json") || !strings.Contains(u, "no such file") {
			t.Errorf("missing file: %q", u)
		}
		bad := writeTestFile(t, "bad.json", []byte(`{"nope": 1}`))
		if u := usageOf(t, read(bad)); !strings.HasPrefix(u, bad+": ") {
			t.Errorf("malformed file: %q, want it to start with the path", u)
		}
	}
}

// TestReadScoredAndTrainingTurns: the held-out or all turns to score, the
// first n training turns, and the field errors when there are too few.
func TestReadScoredAndTrainingTurns(t *testing.T) {
	turns := []Turn{{Context: ContextHash(engHandHistory()), History: engHandHistory(), Answer: "{}"}}
	turns = append(turns, turns[0])
	turns[1].HeldOut = true
	var buf bytes.Buffer
	if err := WriteTurns(&buf, turns); err != nil {
		t.Fatal(err)
	}
	path := writeTestFile(t, "t.jsonl", buf.Bytes())
	if got, err := ReadScoredTurns(path, false); err != nil || len(got) != 1 || !got[0].HeldOut {
		t.Fatalf("held-out turns: %d, %v", len(got), err)
	}
	if got, err := ReadScoredTurns(path, true); err != nil || len(got) != 2 {
		t.Fatalf("all turns: %d, %v", len(got), err)
	}
	train, err := ReadTrainingTurns(path, 0, 1)
	if err != nil || len(train) != 1 || train[0].HeldOut {
		t.Fatalf("training turns: %d, %v", len(train), err)
	}
	_, err = ReadTrainingTurns(path, 0, 2)
	if u := usageOf(t, err); u != "--engineer-turns 2: "+path+" has 1 training turns (1 held out)" {
		t.Fatalf("too few training turns: %q", u)
	}
	buf.Reset()
	if err := WriteTurns(&buf, turns[:1]); err != nil {
		t.Fatal(err)
	}
	none := writeTestFile(t, "none.jsonl", buf.Bytes())
	_, err = ReadScoredTurns(none, false)
	if u := usageOf(t, err); u != none+": no held-out turn to score (--all scores every turn)" {
		t.Fatalf("no held-out turn: %q", u)
	}
}

// TestBuildStyledPrompt: each style builds the prompt its own builder does.
func TestBuildStyledPrompt(t *testing.T) {
	h := engHandHistory()
	mods, _ := ParseModules("F,G,H0,T")
	full, err := BuildPrompt(h, mods, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := BuildStyledPrompt(h, mods, PromptFull, 0); err != nil || got.Hash != full.Hash {
		t.Fatalf("full: %s, want %s (%v)", got.Hash, full.Hash, err)
	}
	if got, err := BuildStyledPrompt(h, mods, PromptCompact, 0); err != nil || got.Hash != BuildCompactPrompt(h, mods).Hash {
		t.Fatalf("compact: %s (%v)", got.Hash, err)
	}
}

// TestWriteVerdicts: one line per turn, its reason on one line, cut to 160
// runes.
func TestWriteVerdicts(t *testing.T) {
	var b strings.Builder
	per := []TurnScore{
		{RunID: "r", Stage: 2, Accepted: true, Distance: 0.25, Reason: "fine"},
		{RunID: "r", Stage: 3, Reason: "two\n  lines " + strings.Repeat("x", 200)},
	}
	if err := WriteVerdicts(&b, per); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 2 || lines[0] != "run r stage 2: accepted, distance 0.250 (fine)" {
		t.Fatalf("verdicts:\n%s", b.String())
	}
	want := "run r stage 3: rejected (two lines " + strings.Repeat("x", 160-len("two lines ")) + "…)"
	if lines[1] != want {
		t.Fatalf("long reason:\n%s\nwant\n%s", lines[1], want)
	}
}
