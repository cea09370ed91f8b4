package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/bench"
)

// TestDevicesFlagErrors: a bad --devices is a one-line usage error (exit 2) naming the problem,
// on every command that has the flag, before any worker starts.
func TestDevicesFlagErrors(t *testing.T) {
	bench := []string{"bench", "grpo", "--preset", "tiny", "--engine", "torch"}
	train := []string{"train", "--policy", "qwen3", "--model", "/nonexistent", "--engine", "torch", "--stages", "1"}
	sft := []string{"sft", "--model", "/nonexistent", "--out", "/nonexistent-out", "--engine", "torch"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"empty item", append(bench, "--devices", "cpu,,cpu"), "item 2 is empty"},
		{"trailing comma", append(sft, "--devices", "cpu,"), "item 2 is empty"},
		{"unknown device", append(bench, "--devices", "tpu,tpu"), `unknown device "tpu"`},
		{"bad gpu index", append(train, "--devices", "cuda:x,cuda:1"), `"cuda:x": want cuda:N`},
		{"mixes cpu and cuda", append(train, "--devices", "cpu,cuda:0"), "mixes cpu and cuda"},
		{"gpu twice", append(bench, "--devices", "cuda:0,cuda:0"), "cuda:0 twice"},
		{"cuda without index in a list", append(bench, "--devices", "cuda,cuda:1"), "name each GPU"},
		{"gomlx engine", []string{"bench", "grpo", "--preset", "tiny", "--engine", "gomlx", "--devices", "cpu,cpu"}, "only the torch engine"},
		{"default engine", []string{"train", "--policy", "qwen3", "--model", "/nonexistent", "--devices", "cpu,cpu", "--stages", "1"}, "only the torch engine"},
		{"--device disagrees", append(sft, "--device", "cuda:0", "--devices", "cpu,cpu"), "disagrees with --devices cpu,cpu"},
		{"--device not one of a list", append(bench, "--device", "cuda:0", "--devices", "cuda:0,cuda:1"), "give --devices alone"},
		{"gridnet policy", []string{"train", "--policy", "gridnet", "--devices", "cpu,cpu", "--stages", "1"}, "needs --policy qwen3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, e := t2t(t, tc.args...)
			if code != 2 || strings.Count(strings.TrimSpace(e), "\n") > 0 || !strings.Contains(e, tc.want) {
				t.Errorf("%v: exit %d, stderr %q: want exit 2 and one line containing %q", tc.args, code, e, tc.want)
			}
		})
	}
}

// TestTrainTorchDevices runs a tiny qwen3 training stage on two gloo ranks (--devices cpu,cpu).
func TestTrainTorchDevices(t *testing.T) {
	requireTorch(t)
	model := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", model); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	code, so, e := t2t(t, "train", "--engine", "torch", "--devices", "cpu,cpu", "--policy", "qwen3", "--model", model, "--max-new-tokens", "8", "--stages", "1",
		"--instances", "4", "--instances-per-unit", "2", "--group", "2", "--learner-batch", "2",
		"--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed", "--prompt", "compact", "-v")
	if code != 0 || !strings.Contains(so, "done in") {
		t.Fatalf("train --devices cpu,cpu: exit %d: %s\n%s", code, e, so)
	}
	if !strings.Contains(e, "rank 1 of 2 on cpu: gloo") {
		t.Errorf("no log line of rank 1 joining the gloo group in stderr:\n%s", e)
	}
}

// TestBenchTorchDevices: t2t bench grpo on two gloo ranks reports the loss of one worker on the
// same global batch (≤ 1e-4 relative), after the same steps.
func TestBenchTorchDevices(t *testing.T) {
	requireTorch(t)
	loss := map[string]float64{}
	for _, devs := range []string{"cpu", "cpu,cpu"} {
		code, out, e := t2t(t, "bench", "grpo", "--engine", "torch", "--devices", devs, "--preset", "tiny", "--layers", "3",
			"--batch", "4", "--prompt-len", "16", "--completion-len", "16", "--micro-batch", "2", "--steps", "1", "--json")
		if code != 0 {
			t.Fatalf("bench grpo --devices %s: exit %d: %s", devs, code, e)
		}
		var g bench.GRPOReport
		if err := json.Unmarshal([]byte(out), &g); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		if want := map[string]string{"cpu": "torch: cpu (", "cpu,cpu": "torch: 2 ranks cpu,cpu (gloo"}[devs]; !strings.HasPrefix(g.Backend, want) {
			t.Errorf("--devices %s: backend %q, want it to start %q", devs, g.Backend, want)
		}
		loss[devs] = g.Loss
	}
	t.Logf("loss: one rank %.9g, two ranks %.9g", loss["cpu"], loss["cpu,cpu"])
	if rel := math.Abs(loss["cpu"]-loss["cpu,cpu"]) / math.Max(math.Abs(loss["cpu"]), 1e-12); !(rel <= 1e-4) {
		t.Errorf("bench grpo loss: %g on one rank, %g on two: relative difference %g > 1e-4", loss["cpu"], loss["cpu,cpu"], rel)
	}
}
