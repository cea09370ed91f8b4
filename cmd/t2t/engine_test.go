package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner/torch"
)

// requireTorch skips where no Python imports torch (fails with T2T_REQUIRE_TORCH=1, as in CI).
func requireTorch(t *testing.T) {
	t.Helper()
	if _, err := torch.FindPython(t.Context(), ""); err != nil {
		if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
			t.Fatalf("T2T_REQUIRE_TORCH=1 but %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// TestEngineTorchCommands runs the LLM commands on the torch engine: model logits agree with
// the gomlx engine's, SFT writes a checkpoint that gomlx loads, and a qwen3 training stage
// finishes.
func TestEngineTorchCommands(t *testing.T) {
	requireTorch(t)
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", dir); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	logits := func(dir string, args ...string) []logitsResult {
		t.Helper()
		code, out, e := t2t(t, append([]string{"model", "logits", "--model", dir, "--text", "Agent 0: UP RIGHT", "--text", "hello"}, args...)...)
		if code != 0 {
			t.Fatalf("logits %v: exit %d: %s", args, code, e)
		}
		var rs []logitsResult
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r logitsResult
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	same := func(what string, a, b []logitsResult) {
		t.Helper()
		for i := range a {
			for p := range a[i].Logits {
				for j := range a[i].Logits[p] {
					if d := math.Abs(float64(a[i].Logits[p][j] - b[i].Logits[p][j])); d > 1e-4 {
						t.Fatalf("%s: text %d position %d entry %d differs by %g", what, i, p, j, d)
					}
				}
			}
		}
	}
	same("gomlx vs torch", logits(dir), logits(dir, "--engine", "torch"))

	out := filepath.Join(t.TempDir(), "sft")
	code, so, e := t2t(t, "sft", "--engine", "torch", "--model", dir, "--out", out, "--steps", "3", "--batch", "2", "--eval", "2", "--max-tokens", "4", "--prompt", "compact")
	if code != 0 || !strings.Contains(so, "step 3: cross-entropy") {
		t.Fatalf("sft --engine torch: exit %d: %s\n%s", code, e, so)
	}
	same("torch-trained checkpoint, gomlx vs torch", logits(out), logits(out, "--engine", "torch"))

	code, so, e = t2t(t, "train", "--engine", "torch", "--policy", "qwen3", "--model", out, "--max-new-tokens", "8", "--stages", "1",
		"--instances", "4", "--instances-per-unit", "2", "--group", "2", "--learner-batch", "2",
		"--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed", "--prompt", "compact")
	if code != 0 || !strings.Contains(so, "done in") {
		t.Fatalf("train --engine torch: exit %d: %s\n%s", code, e, so)
	}

	// Bad engine flags are one-line usage errors.
	for _, args := range [][]string{
		{"model", "logits", "--model", dir, "--text", "x", "--engine", "jax"},
		{"model", "logits", "--model", dir, "--text", "x", "--engine", "torch", "--device", "xla:/x.so"},
		{"model", "logits", "--model", dir, "--text", "x", "--engine", "gomlx", "--autocast", "bf16"},
	} {
		if code, _, e := t2t(t, args...); code != 2 || strings.Count(strings.TrimSpace(e), "\n") > 0 {
			t.Errorf("%v: exit %d, stderr %q: want 2 and one line", args, code, e)
		}
	}
	// A missing torch is one line naming what was tried, exit 1.
	code, _, e = t2t(t, "model", "logits", "--model", dir, "--text", "x", "--engine", "torch", "--python", "/nonexistent/python")
	if code != 1 || !strings.Contains(e, "/nonexistent/python") || !strings.Contains(e, "python3-torch") {
		t.Errorf("--python /nonexistent/python: exit %d, %q", code, e)
	}
}
