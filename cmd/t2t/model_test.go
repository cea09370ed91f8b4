package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

func TestModelInitInspect(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	code, out, e := t2t(t, "model", "init", "--preset", "tiny", "--out", dir, "--seed", "3")
	if code != 0 {
		t.Fatalf("init: exit %d: %s", code, e)
	}
	if !strings.Contains(out, "vocab 1228") || !strings.Contains(out, "training memory") {
		t.Fatalf("init output:\n%s", out)
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	code, out, e = t2t(t, "model", "inspect", dir)
	if code != 0 {
		t.Fatalf("inspect: exit %d: %s", code, e)
	}
	for _, want := range []string{"2 layers, hidden 64", "parameters: 152704 (config: 152704) in 24 tensors", "dtype F32",
		"model.layers.N.self_attn.q_proj.weight", "×2", "every tensor the config needs", "tokenizer: 1228 ids", "<|im_end|>", "LoRA"} {
		if !strings.Contains(out, want) {
			t.Fatalf("inspect output lacks %q:\n%s", want, out)
		}
	}
	// The same tokenizer given explicitly: same vocabulary, other seed.
	dir2 := filepath.Join(t.TempDir(), "tiny2")
	if code, out, e := t2t(t, "model", "init", "--out", dir2, "--tokenizer", filepath.Join(dir, "tokenizer.json"), "--seed", "4"); code != 0 || !strings.Contains(out, "vocab 1228") {
		t.Fatalf("init --tokenizer: exit %d: %s%s", code, out, e)
	}
	// A tokenizer that also learned the cells prompts and answers: more ids; a style that
	// does not exist, or one given with --tokenizer, is refused and writes nothing.
	cells := filepath.Join(t.TempDir(), "cells")
	if code, out, e := t2t(t, "model", "init", "--out", cells, "--tokenizer-prompt", "cells"); code != 0 || !strings.Contains(out, "wrote") || strings.Contains(out, "vocab 1228") {
		t.Fatalf("init --tokenizer-prompt cells: exit %d: %s%s", code, out, e)
	}
	for _, args := range [][]string{{"--tokenizer-prompt", "maze"}, {"--tokenizer-prompt", "cells", "--tokenizer", filepath.Join(dir, "tokenizer.json")}} {
		bad := filepath.Join(t.TempDir(), "bad")
		if code, _, e := t2t(t, append([]string{"model", "init", "--out", bad}, args...)...); code != 2 || !strings.Contains(e, "--tokenizer") {
			t.Fatalf("init %v: exit %d: %s", args, code, e)
		}
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Fatalf("init %v wrote %s", args, bad)
		}
	}
	// Shape overrides: a deeper, narrower model with another RoPE θ.
	dir3 := filepath.Join(t.TempDir(), "custom")
	if code, out, e := t2t(t, "model", "init", "--out", dir3, "--layers", "3", "--hidden", "32", "--intermediate", "96", "--rope-theta", "10000"); code != 0 ||
		!strings.Contains(out, "3 layers, hidden 32, heads 4/2 × 8, intermediate 96") {
		t.Fatalf("init with overrides: exit %d: %s%s", code, out, e)
	}
	if code, out, e := t2t(t, "model", "inspect", dir3); code != 0 || !strings.Contains(out, "3 layers, hidden 32") || !strings.Contains(out, "rope θ 10000") {
		t.Fatalf("inspect the custom shape: exit %d: %s%s", code, out, e)
	}
	big := filepath.Join(t.TempDir(), "big")
	code, out, e = t2t(t, "model", "init", "--preset", "4b-shape", "--out", big)
	if code != 2 || !strings.Contains(e, "--force") || !strings.Contains(out, "train total") {
		t.Fatalf("4b-shape without --force: exit %d\n%s%s", code, out, e)
	}
	if _, err := os.Stat(big); !os.IsNotExist(err) {
		t.Fatalf("4b-shape without --force wrote %s", big)
	}
	for _, args := range [][]string{
		{"model", "init", "--preset", "huge", "--out", big},
		{"model", "init", "--preset", "tiny"},
		{"model", "init", "--out", big, "--hidden", "30"},
		{"model", "init", "--out", big, "--layers", "-1"},
		{"model", "inspect", t.TempDir()},
		{"model", "inspect"},
		{"serve"},
		{"serve", "--model", big, "--max-queue", "0"},
		{"serve", "--model", big, "--max-memory", "12X"},
	} {
		if code, _, _ := t2t(t, args...); code != 2 {
			t.Fatalf("%v: exit %d, want 2", args, code)
		}
	}
}

func TestSFTCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", dir); code != 0 {
		t.Fatalf("init: %s", e)
	}
	out := filepath.Join(t.TempDir(), "sft")
	prof := filepath.Join(t.TempDir(), "cpu.prof")
	code, so, e := t2t(t, "sft", "--model", dir, "--out", out, "--steps", "3", "--batch", "2", "--eval", "2", "--max-tokens", "4", "--prompt", "compact", "--cpuprofile", prof,
		"--eval-every", "2", "--save-every", "1", "--lr-schedule", "cosine", "--lr-segments", "2")
	if code != 0 {
		t.Fatalf("sft: exit %d: %s", code, e)
	}
	for _, want := range []string{"step 2: 2 instances", "step 1: wrote " + out, "step 2: wrote " + out} {
		if !strings.Contains(so, want) {
			t.Fatalf("output lacks %q:\n%s", want, so)
		}
	}
	if st, err := os.Stat(prof); err != nil || st.Size() == 0 {
		t.Fatalf("--cpuprofile: %v", err)
	}
	// The cosine schedule ends at the default --lr-min, a tenth of --lr.
	for _, want := range []string{"before: 2 instances", "baseline: rows-first Manhattan paths", "step 3: cross-entropy", "lr 0.0001,", "after: 2 instances", "wrote " + out} {
		if !strings.Contains(so, want) {
			t.Fatalf("output lacks %q:\n%s", want, so)
		}
	}
	if code, so, e := t2t(t, "model", "inspect", out); code != 0 || !strings.Contains(so, "tokenizer: 1228 ids") {
		t.Fatalf("inspect the SFT checkpoint: exit %d\n%s%s", code, so, e)
	}
	// --eval-seed fixes the evaluation set whatever the training seed.
	evalSet := func(args ...string) string {
		t.Helper()
		code, so, e := t2t(t, append([]string{"sft", "--model", dir, "--out", filepath.Join(t.TempDir(), "s0"), "--steps", "0", "--eval", "3", "--max-tokens", "2"}, args...)...)
		if code != 0 {
			t.Fatalf("sft %v: exit %d: %s", args, code, e)
		}
		if strings.Contains(so, "after:") {
			t.Errorf("--steps 0 evaluated twice:\n%s", so)
		}
		line, _, _ := strings.Cut(so[strings.Index(so, "evaluation set:"):], "\n")
		return line
	}
	a, b, c := evalSet("--seed", "1", "--eval-seed", "9"), evalSet("--seed", "2", "--eval-seed", "9"), evalSet("--seed", "2")
	if a != b || a == c || !strings.Contains(a, "from seed 9") {
		t.Fatalf("evaluation sets: %q, %q, %q", a, b, c)
	}
	// --map-probe plays the set again with its holes moved and prints the counts.
	code, so, e = t2t(t, "sft", "--model", dir, "--out", filepath.Join(t.TempDir(), "s1"), "--steps", "0", "--eval", "4",
		"--max-tokens", "3", "--prompt", "compact", "--map-probe")
	var changed, n, crossing, avoided, through int
	if _, err := fmt.Sscanf(so[max(0, strings.Index(so, "before: map probe:")):], "before: map probe: plans change with the holes moved on %d of %d; of the %d whose plan there crosses a real hole, %d change; %d plans on the real map cross one",
		&changed, &n, &crossing, &avoided, &through); code != 0 || err != nil || n != 4 || avoided > crossing || avoided > changed || changed > n || through > n {
		t.Fatalf("sft --map-probe: exit %d (%v):\n%s%s", code, err, so, e)
	}
	if code, _, _ := t2t(t, "sft", "--model", dir); code != 2 {
		t.Fatalf("sft without --out: exit %d", code)
	}
	if code, _, e := t2t(t, "sft", "--model", dir, "--out", out, "--prompt", "verbose"); code != 2 || !strings.Contains(e, "want full, compact, cells, steps or grid") {
		t.Fatalf("sft --prompt verbose: exit %d: %s", code, e)
	}
	for _, bad := range [][]string{{"--agents", "2,x"}, {"--agents", "11"}, {"--sizes", "6-4"}, {"--sizes", "1-5"},
		{"--lr-schedule", "linear"}, {"--lr-min", "0.5", "--lr-schedule", "cosine"}, {"--lr-segments", "1"},
		{"--holes", "0.1,x"}, {"--holes", "0.9"}, {"--holes", "1"}} {
		if code, _, e := t2t(t, append([]string{"sft", "--model", dir, "--out", out}, bad...)...); code != 2 || !strings.Contains(e, strings.TrimLeft(bad[0], "-")) {
			t.Fatalf("sft %v: exit %d: %s", bad, code, e)
		}
	}
}

// TestTrainQwen3Policy runs one tiny stage of t2t train with the text
// policy on a random tiny checkpoint made by t2t model init: the LLM loop
// (prompt, sample, parse, verify, GRPO update, evaluation) end to end.
func TestTrainQwen3Policy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", dir); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	code, out, e := t2t(t, "train", "--policy", "qwen3", "--model", dir, "--max-new-tokens", "8", "--stages", "1",
		"--instances", "4", "--instances-per-unit", "2", "--group", "2", "--learner-batch", "2",
		"--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed", "--prompt", "compact")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, e, out)
	}
	if !strings.Contains(out, "qwen3 policy") || !strings.Contains(out, "done in") {
		t.Fatalf("unexpected output:\n%s", out)
	}
	if code, _, e := t2t(t, "train", "--policy", "qwen3"); code != 2 || !strings.Contains(e, "--model") {
		t.Fatalf("qwen3 without --model: exit %d, %q", code, e)
	}
	if code, _, e := t2t(t, "train", "--policy", "qwen3", "--model", dir, "--prompt", "short"); code != 2 || !strings.Contains(e, "want full, compact, cells, steps or grid") {
		t.Fatalf("qwen3 --prompt short: exit %d, %q", code, e)
	}
}

// TestModelLogits prints the logits of texts as JSON and checks them against
// the model's own forward pass on the same ids.
func TestModelLogits(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", dir); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	code, out, e := t2t(t, "model", "logits", "--model", dir, "--text", "Agent 0: UP RIGHT", "--text", "hello", "--vocab", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	lm, err := textpolicy.OpenLM(context.Background(), engine.Spec{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	v := lm.Model.Config().VocabSize
	for _, line := range lines {
		var r textpolicy.TextLogits
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		want, err := lm.Model.Logits([][]int32{r.IDs})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Logits) != len(r.IDs) || len(r.Logits[0]) != 7 {
			t.Fatalf("%q: %d positions × %d values", r.Text, len(r.Logits), len(r.Logits[0]))
		}
		for p, row := range r.Logits {
			for j, x := range row {
				if x != want[0][p*v+j] {
					t.Fatalf("%q position %d entry %d: %v, forward gives %v", r.Text, p, j, x, want[0][p*v+j])
				}
			}
		}
	}
	if code, _, _ := t2t(t, "model", "logits", "--model", dir); code != 2 {
		t.Fatalf("no text: exit %d, want 2", code)
	}
}
