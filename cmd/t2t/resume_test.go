package main

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// TestTrainResumeAfterKill: run A is a deterministic `t2t train` run to
// completion; run B, with the same flags, is killed with SIGKILL while its
// stage 1 is in progress and restarted with --resume. B must end with A's
// weights and optimizer state, bit for bit, and Redis must hold the same
// outcomes for both, every unit counted once. Real processes and a real
// redis-server (skipped without one unless T2T_REQUIRE_REDIS=1).
func TestTrainResumeAfterKill(t *testing.T) {
	seed := nodeTestSeed(t, 5)
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	const stages, instances, perUnit, batch, group = 3, 48, 8, 8, 4
	const units, updates = instances / perUnit, instances / batch // per stage
	args := func(runID string, extra ...string) []string {
		return append([]string{"train", "--deterministic", "--redis", redisURL, "--checkpoint-dir", filepath.Join(dir, runID),
			"--run-id", runID, "--seed", strconv.FormatUint(seed, 10), "--stages", strconv.Itoa(stages),
			"--instances", strconv.Itoa(instances), "--instances-per-unit", strconv.Itoa(perUnit), "--learner-batch", strconv.Itoa(batch),
			"--group", strconv.Itoa(group), "--hidden", "16", "--val-per-size", "1", "--eval-per-size", "1"}, extra...)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: redisURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	a := startNode(t, "train-a", args("a")...)
	b := startNode(t, "train-b", args("b")...)
	// Kill B as soon as its stage 1 recorded a unit (a poll at the
	// process edge, with a deadline).
	deadline := time.Now().Add(3 * time.Minute)
	var atKill int64
	for {
		n, err := st.UnitsApplied(ctx, "b", 1, "train")
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-b.exited
			atKill, _ = st.UnitsApplied(ctx, "b", 1, "train")
			break
		}
		if isClosed(b.exited) {
			t.Fatalf("run b exited (%v) before its stage 1 recorded a unit", b.err)
		}
		if time.Now().After(deadline) {
			t.Fatal("run b's stage 1 recorded no unit in 3m")
		}
		waitABit(b.exited, 5*time.Millisecond)
	}
	ck, ok, err := st.LatestCheckpoint(ctx, "b")
	if err != nil || !ok || ck.Step != 0 {
		t.Fatalf("after the kill: latest checkpoint %+v (%v, %v), want the one after stage 0", ck, ok, err)
	}
	t.Logf("killed run b with %d of %d stage-1 units recorded", atKill, units)
	if atKill >= units {
		t.Fatalf("the kill came after stage 1's units were all recorded (%d)", atKill)
	}

	b2 := startNode(t, "train-b-resumed", args("b", "--resume")...)
	b2.line(fmt.Sprintf("resuming run b after stage 0 (policy version %d)", updates), time.Minute)
	if code := b2.wait(3 * time.Minute); code != 0 {
		t.Fatalf("resumed run b exited with %d", code)
	}
	if code := a.wait(3 * time.Minute); code != 0 {
		t.Fatalf("run a exited with %d", code)
	}

	last := fmt.Sprintf("stage-%03d", stages-1)
	ca, err := learner.ReadCheckpoint(filepath.Join(dir, "a", last))
	if err != nil {
		t.Fatal(err)
	}
	cb, err := learner.ReadCheckpoint(filepath.Join(dir, "b", last))
	if err != nil {
		t.Fatal(err)
	}
	wa, _ := os.ReadFile(filepath.Join(dir, "a", last, learner.CheckpointWeightsFile))
	wb, _ := os.ReadFile(filepath.Join(dir, "b", last, learner.CheckpointWeightsFile))
	if len(wa) == 0 || !bytes.Equal(wa, wb) {
		t.Fatal("final weights of a and b differ")
	}
	if ca.Manifest.PolicyVersion != stages*updates || cb.Manifest.PolicyVersion != stages*updates || ca.Manifest.Step != cb.Manifest.Step {
		t.Fatalf("manifests: a %+v, b %+v", ca.Manifest, cb.Manifest)
	}
	// The optimizer file's tensor order follows variable creation, which
	// a load changes: compare by name.
	moments := map[string]safetensors.Tensor{}
	for _, ts := range ca.Optimizer {
		moments[ts.Name] = ts
	}
	if len(moments) == 0 || len(moments) != len(cb.Optimizer) {
		t.Fatalf("optimizer tensors: %d and %d", len(moments), len(cb.Optimizer))
	}
	for _, ts := range cb.Optimizer {
		if m, ok := moments[ts.Name]; !ok || !reflect.DeepEqual(m, ts) {
			t.Fatalf("optimizer tensor %s differs", ts.Name)
		}
	}

	for stage := range stages {
		for _, split := range []string{"train", "val", "eval:paper"} {
			ga, err := st.Aggregates(ctx, "a", stage, split)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := st.Aggregates(ctx, "b", stage, split)
			if err != nil {
				t.Fatal(err)
			}
			if len(ga) == 0 || !reflect.DeepEqual(ga, gb) {
				t.Fatalf("stage %d %s: a recorded %v, b %v", stage, split, ga, gb)
			}
		}
		na, _ := st.UnitsApplied(ctx, "a", stage, "train")
		nb, _ := st.UnitsApplied(ctx, "b", stage, "train")
		agg, _ := st.Aggregates(ctx, "b", stage, "train")
		var episodes int64
		for _, c := range agg {
			episodes += c.Episodes
		}
		if na != units || nb != units || episodes != instances*group {
			t.Fatalf("stage %d: units applied a %d b %d (want %d), b episodes %d (want %d)", stage, na, nb, units, episodes, instances*group)
		}
	}
	cfa, _ := st.Configs(ctx, "a")
	cfb, _ := st.Configs(ctx, "b")
	if len(cfa) != stages || len(cfb) != stages {
		t.Fatalf("config histories: %d and %d", len(cfa), len(cfb))
	}
	for i := range cfa {
		if cfa[i].Version != cfb[i].Version {
			t.Fatalf("stage %d config: a %s, b %s", i, cfa[i].Version, cfb[i].Version)
		}
	}
}

// TestTrainResumeBadInput: --resume needs a real Redis and a checkpoint
// folder.
func TestTrainResumeBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--resume", "--checkpoint-dir", t.TempDir()},
		{"train", "--resume", "--redis", "redis://127.0.0.1:1/0"},
	} {
		code, _, stderr := t2t(t, args...)
		if code != 2 || !strings.Contains(stderr, "--resume needs --redis") {
			t.Errorf("t2t %v: exit %d, %s", args, code, stderr)
		}
	}
}
