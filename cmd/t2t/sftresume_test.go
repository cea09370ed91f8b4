package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSFTResume: `t2t sft --resume` in two pieces (2 steps, then on to 5 from the first
// piece's checkpoint) writes the weights and AdamW state of one 5-step run bit for bit, on both
// engines, with engineer turns mixed in (every 2nd step), so the data, the turns and the
// optimizer all continue; continuing without --resume (fresh AdamW, steps from 1) does not.
// A training run's checkpoint, a piece beyond --steps and a corrupt checkpoint are refused.
func TestSFTResume(t *testing.T) {
	dir := t.TempDir()
	tiny := filepath.Join(dir, "tiny")
	if code, _, e := t2t(t, "model", "init", "--preset", "tiny", "--out", tiny); code != 0 {
		t.Fatalf("model init: exit %d: %s", code, e)
	}
	turns := filepath.Join(dir, "turns.jsonl")
	if code, _, e := t2t(t, "engineer", "turns", "--histories", historiesFile, "--out", turns, "--teacher", "rules",
		"--prompt", "compact", "--modules", "T"); code != 0 {
		t.Fatalf("engineer turns: exit %d: %s", code, e)
	}
	for _, eng := range []string{"gomlx", "torch"} {
		t.Run(eng, func(t *testing.T) {
			if eng == "torch" {
				requireTorch(t)
			}
			d := t.TempDir()
			sft := func(model, out string, steps string, extra ...string) string {
				t.Helper()
				args := append([]string{"sft", "--engine", eng, "--threads", "1", "--model", model, "--out", filepath.Join(d, out),
					"--steps", steps, "--prompt", "compact", "--batch", "2", "--eval", "1", "--eval-before=false", "--max-tokens", "4",
					"--engineer-turns", "5", "--engineer-data", turns, "--engineer-every", "2", "--lr", "1e-2", "--seed", "7"}, extra...)
				code, out, e := t2t(t, args...)
				if code != 0 {
					t.Fatalf("t2t %v: exit %d: %s", args, code, e)
				}
				return out
			}
			sft(tiny, "whole", "5", "--resume")
			sft(tiny, "half", "2", "--resume")
			if out := sft(filepath.Join(d, "half"), "rest", "5", "--resume"); !strings.Contains(out, "saved after step 2: steps 3..5") {
				t.Errorf("the second piece does not say where it resumes:\n%s", out)
			}
			for _, f := range []string{"model.safetensors", "optimizer.safetensors"} {
				if !sameFile(t, filepath.Join(d, "whole", f), filepath.Join(d, "rest", f)) {
					t.Errorf("%s: two pieces differ from one run", f)
				}
			}
			sft(filepath.Join(d, "half"), "fresh", "3")
			if sameFile(t, filepath.Join(d, "whole", "model.safetensors"), filepath.Join(d, "fresh", "model.safetensors")) {
				t.Error("continuing without --resume gave the same weights: the comparison cannot tell")
			}
		})
	}

	// Refusals, each naming the problem and writing nothing.
	half := filepath.Join(dir, "half")
	if code, _, e := t2t(t, "sft", "--model", tiny, "--out", half, "--steps", "2", "--resume", "--batch", "2", "--eval", "1", "--max-tokens", "4"); code != 0 {
		t.Fatalf("sft: exit %d: %s", code, e)
	}
	corrupt := filepath.Join(dir, "corrupt")
	if err := os.CopyFS(corrupt, os.DirFS(half)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(corrupt, "optimizer.safetensors"), []byte("not an optimizer"), 0o644); err != nil {
		t.Fatal(err)
	}
	trainRun := filepath.Join(dir, "train-ck")
	if err := os.CopyFS(trainRun, os.DirFS(half)); err != nil {
		t.Fatal(err)
	}
	man := filepath.Join(trainRun, "manifest.json")
	b, err := os.ReadFile(man)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(man, bytes.Replace(b, []byte(`"kind": "sft",`), nil, 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		model, steps, want string
	}{
		{half, "1", "saved after step 2, beyond --steps 1"},
		{corrupt, "4", "corrupt checkpoint"},
		{trainRun, "4", "a training run's checkpoint, not a t2t sft checkpoint"},
	} {
		out := filepath.Join(dir, "refused")
		code, _, e := t2t(t, "sft", "--model", tc.model, "--out", out, "--steps", tc.steps, "--resume", "--batch", "2", "--eval", "1", "--max-tokens", "4")
		if code != 2 || !strings.Contains(e, tc.want) {
			t.Errorf("sft --resume --model %s --steps %s: exit %d, %q: want exit 2 naming %q", filepath.Base(tc.model), tc.steps, code, e, tc.want)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("a refused resume wrote %s (%v)", out, err)
		}
	}
}

// sameFile reports whether files a and b hold the same bytes.
func sameFile(t *testing.T, a, b string) bool {
	t.Helper()
	x, err := os.ReadFile(a)
	if err != nil {
		t.Fatal(err)
	}
	y, err := os.ReadFile(b)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Equal(x, y)
}
