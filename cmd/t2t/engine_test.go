package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/learner/textpolicy"
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
	logits := func(dir string, args ...string) []textpolicy.TextLogits {
		t.Helper()
		code, out, e := t2t(t, append([]string{"model", "logits", "--model", dir, "--text", "Agent 0: UP RIGHT", "--text", "hello"}, args...)...)
		if code != 0 {
			t.Fatalf("logits %v: exit %d: %s", args, code, e)
		}
		var rs []textpolicy.TextLogits
		for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
			var r textpolicy.TextLogits
			if err := json.Unmarshal([]byte(line), &r); err != nil {
				t.Fatal(err)
			}
			rs = append(rs, r)
		}
		return rs
	}
	same := func(what string, a, b []textpolicy.TextLogits) {
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
		{"bench", "grpo", "--preset", "tiny", "--engine", "gomlx", "--activation-checkpointing"},
		{"train", "--policy", "gridnet", "--activation-checkpointing", "--stages", "1"},
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

// childWorker returns the pid of the torch worker a process started (a child whose command
// line runs t2t_worker), or 0.
func childWorker(t *testing.T, parent int) int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// Fields after the command name in parentheses: state, ppid, …
		rest := string(stat[strings.LastIndexByte(string(stat), ')')+2:])
		f := strings.Fields(rest)
		if len(f) < 2 || f[1] != strconv.Itoa(parent) {
			continue
		}
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if strings.Contains(string(cmdline), "t2t_worker") {
			return pid
		}
	}
	return 0
}

// TestTrainTorchWorkerKilledResumes kills the torch worker of a `t2t train --policy qwen3
// --engine torch` run with SIGKILL during its stage 1: the run stops with a one-line error
// naming the dead worker, and `--resume` continues after the stage-0 checkpoint (real
// processes, a real redis-server).
func TestTrainTorchWorkerKilledResumes(t *testing.T) {
	killAndResume(t, nil, "worker died")
}

// TestTrainTorchRanksKilledResumes is TestTrainTorchWorkerKilledResumes on two gloo ranks
// (--devices cpu,cpu): one rank killed ends the run with an error naming it, and --resume on the
// ranks continues after the last checkpoint.
func TestTrainTorchRanksKilledResumes(t *testing.T) {
	killAndResume(t, []string{"--devices", "cpu,cpu"}, "torch rank ")
}

// killAndResume runs three tiny qwen3 stages on the torch engine with extra flags, kills a worker
// of the run once stage 1 has a unit, wants an exit whose stderr says died and "signal: killed",
// and resumes the run after its stage-0 checkpoint.
func killAndResume(t *testing.T, extra []string, died string) {
	requireTorch(t)
	redisURL := nodeRedis(t)
	model := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", model); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	ckDir := filepath.Join(t.TempDir(), "ck")
	args := func(more ...string) []string {
		return append([]string{"train", "--engine", "torch", "--policy", "qwen3", "--model", model, "--prompt", "compact",
			"--max-new-tokens", "8", "--stages", "3", "--instances", "8", "--instances-per-unit", "2", "--group", "2",
			"--learner-batch", "2", "--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed", "--rollouts", "1",
			"--redis", redisURL, "--run-id", "q", "--checkpoint-dir", ckDir}, append(slices.Clone(extra), more...)...)
	}
	a := startNode(t, "train-q", args()...)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: redisURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	deadline := time.Now().Add(4 * time.Minute)
	for {
		n, err := st.UnitsApplied(ctx, "q", 1, "train")
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			break
		}
		if isClosed(a.exited) {
			t.Fatalf("the run exited (%v) before its stage 1 recorded a unit", a.err)
		}
		if time.Now().After(deadline) {
			t.Fatal("stage 1 recorded no unit in 4m")
		}
		waitABit(a.exited, 20*time.Millisecond)
	}
	pid := childWorker(t, a.cmd.Process.Pid)
	if pid == 0 {
		t.Fatal("no torch worker among the run's children")
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-a.exited:
	case <-time.After(2 * time.Minute):
		t.Fatal("the run did not stop after its worker was killed")
	}
	a.mu.Lock()
	stderr := a.stderr.String()
	a.mu.Unlock()
	t.Logf("after the kill: %s", strings.TrimSpace(stderr[strings.LastIndex(strings.TrimSpace(stderr), "\n")+1:]))
	if a.err == nil || !strings.Contains(stderr, died) || !strings.Contains(stderr, "signal: killed") {
		t.Fatalf("after the kill: exit %v, stderr:\n%s", a.err, stderr)
	}
	ck, ok, err := st.LatestCheckpoint(ctx, "q")
	if err != nil || !ok || ck.Step != 0 {
		t.Fatalf("latest checkpoint %+v (%v, %v), want the one after stage 0", ck, ok, err)
	}
	b := startNode(t, "train-q-resume", args("--resume")...)
	select {
	case <-b.exited:
	case <-time.After(5 * time.Minute):
		t.Fatal("the resumed run did not finish in 5m")
	}
	b.mu.Lock()
	out := strings.Join(b.lines, "\n")
	b.mu.Unlock()
	if b.err != nil || !strings.Contains(out, "resuming run q after stage 0") || !strings.Contains(out, "done in") {
		t.Fatalf("resumed run: %v\n%s", b.err, out)
	}
	// The resumed run played stages 1 and 2, not 0 again.
	if !regexp.MustCompile(`(?m)^\s+2 \|`).MatchString(out) || !regexp.MustCompile(`(?m)^\s+1 \|`).MatchString(out) || regexp.MustCompile(`(?m)^\s+0 \|`).MatchString(out) {
		t.Fatalf("resumed run's stages:\n%s", out)
	}
}

// TestBenchTorchEngine runs t2t bench grpo and decode on the torch engine with a preset shape
// override: the steps move the weights, and the worker's memory is reported.
func TestBenchTorchEngine(t *testing.T) {
	requireTorch(t)
	code, out, e := t2t(t, "bench", "grpo", "--engine", "torch", "--preset", "tiny", "--layers", "3", "--hidden", "96", "--heads", "6",
		"--batch", "4", "--prompt-len", "16", "--completion-len", "16", "--steps", "2", "--micro-batch", "2", "--lora-rank", "2",
		"--activation-checkpointing", "--json")
	if code != 0 {
		t.Fatalf("bench grpo: exit %d: %s", code, e)
	}
	var g bench.GRPOReport
	if err := json.Unmarshal([]byte(out), &g); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !strings.HasPrefix(g.Backend, "torch: cpu") || !(g.ParamDelta > 0) || !(g.StepSec > 0) || g.Memory.WorkerPeakRSS <= 0 || g.LoRARank != 2 || !g.ActivationCheckpointing {
		t.Fatalf("bench grpo --engine torch: %s", out)
	}
	code, out, e = t2t(t, "bench", "decode", "--engine", "torch", "--preset", "tiny", "--batch", "3", "--prompt-len", "10", "--new-tokens", "12", "--json")
	if code != 0 {
		t.Fatalf("bench decode: exit %d: %s", code, e)
	}
	var d bench.DecodeReport
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if d.Generated != 36 || !(d.DecodeTokPS > 0) || !strings.HasPrefix(d.Backend, "torch: cpu") {
		t.Fatalf("bench decode --engine torch: %s", out)
	}
}
