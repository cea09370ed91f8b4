package main

import (
	"encoding/json"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
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
	if i := strings.Index(usage, "-tokenizer-vocab"); i < 0 || !strings.Contains(usage[i:min(i+300, len(usage))], want+" is all") {
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
