package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/report"
)

// TestTrainEngineerSelfAndBase runs `t2t train --policy qwen3 --strategy llm` (and `t2t engineer
// propose` offline) with the
// checkpoint as its own engineer (self) and with its frozen starting checkpoint (base), on a
// random tiny model on the torch engine: the run finishes, the audit in Redis names the engineer (self with the
// policy version at the time), and the model's unusable answers fall back to the previous
// config, saying so.
func TestTrainEngineerSelfAndBase(t *testing.T) {
	requireTorch(t) // the engineer prompt is ~2k tokens: fast on the torch engine
	redisURL := nodeRedis(t)
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", dir); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: redisURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, eng := range []string{"self", "base"} {
		run := "eng-" + eng
		code, out, e := t2t(t, "train", "--engine", "torch", "--policy", "qwen3", "--model", dir, "--max-new-tokens", "8", "--stages", "2",
			"--instances", "4", "--instances-per-unit", "2", "--group", "2", "--learner-batch", "2",
			"--val-per-size", "1", "--eval-per-size", "1", "--prompt", "compact", "--strategy", "llm", "--engineer", eng,
			"--engineer-max-tokens", "16", "--engineer-retries", "1", "--redis", redisURL, "--run-id", run)
		if code != 0 || !strings.Contains(out, "done in") {
			t.Fatalf("--engineer %s: exit %d: %s\n%s", eng, code, e, out)
		}
		audit, err := st.Audit(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(audit) != 2 { // stage 1's proposal: two attempts (one retry)
			t.Fatalf("--engineer %s: %d audit records, want 2: %+v", eng, len(audit), audit)
		}
		for _, a := range audit {
			want := "base@" + dir
			if eng == "self" {
				want = "self@v"
			}
			if !strings.HasPrefix(a.Engineer, want) || a.Accepted || a.Reason == "" {
				t.Errorf("--engineer %s: audit %+v: want engineer %s…, rejected with a reason", eng, a, want)
			}
		}
		cfgs, err := st.Configs(ctx, run)
		if err != nil {
			t.Fatal(err)
		}
		if len(cfgs) != 2 || cfgs[1].Version != cfgs[0].Version || !strings.Contains(cfgs[1].Rationale, "no acceptable proposal") {
			t.Fatalf("--engineer %s: configs %+v: want stage 1 to keep stage 0's config as the fallback", eng, cfgs)
		}
	}
	// Offline, the checkpoint answers the prompt built from the run's history in Redis.
	code, out, e := t2t(t, "engineer", "propose", "--run", "eng-self", "--redis", redisURL, "--engineer", "self", "--model", dir,
		"--engine", "torch", "--max-tokens", "16", "--retries", "1")
	if code != 0 {
		t.Fatalf("engineer propose --engineer self: exit %d: %s\n%s", code, e, out)
	}
	for _, want := range []string{"--- system ---", "=== proposal (llm) for stage 2", "attempt 0: rejected", "attempt 1: rejected", "fallback: the previous config is kept", "audit: rejected, all 2 attempt(s)"} {
		if !strings.Contains(out, want) {
			t.Errorf("engineer propose --engineer self: no %q in\n%s", want, out)
		}
	}
	if code, _, e := t2t(t, "engineer", "propose", "--run", "eng-self", "--redis", redisURL, "--engineer", "base"); code != 2 || !strings.Contains(e, "--model") {
		t.Fatalf("engineer propose --engineer base without --model: exit %d, %q", code, e)
	}
	// Without a qwen3 policy self and base are usage errors.
	if code, _, e := t2t(t, "train", "--policy", "scripted", "--strategy", "llm", "--engineer", "self"); code != 2 || !strings.Contains(e, "--policy qwen3") {
		t.Fatalf("scripted --engineer self: exit %d, %q", code, e)
	}
	if code, _, e := t2t(t, "train", "--policy", "scripted", "--strategy", "llm"); code != 2 || !strings.Contains(e, "--engineer URL") {
		t.Fatalf("scripted --strategy llm: exit %d, %q", code, e)
	}
}

// TestExperimentSelfAndBaseArms runs `t2t experiment --policy qwen3` with the arms fixed, self and
// base on a random tiny model (torch engine): every arm runs, the self and base arms ask their
// checkpoint (whose unusable answers fall back, as the audit in the report shows), and a second
// call reuses the saved runs.
func TestExperimentSelfAndBaseArms(t *testing.T) {
	requireTorch(t)
	model := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", model); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	dir := t.TempDir()
	args := []string{"experiment", "--policy", "qwen3", "--model", model, "--engine", "torch", "--strategies", "fixed,self,base",
		"--seeds", "1", "--stages", "2", "--instances", "4", "--instances-per-unit", "2", "--group", "2", "--learner-batch", "2",
		"--val-per-size", "1", "--eval-per-size", "1", "--max-new-tokens", "8", "--prompt", "compact",
		"--engineer-max-tokens", "16", "--engineer-retries", "0", "--out", dir}
	code, out, e := t2t(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, e, out)
	}
	jb, err := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := report.ParseExperimentJSON(jb)
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, r := range exp.Runs {
		labels = append(labels, r.Strategy)
		if len(r.Stages) != 2 {
			t.Fatalf("%s: %d stages", r.Strategy, len(r.Stages))
		}
		if s1 := r.Stages[1]; r.Strategy != "fixed" && (len(s1.Audit) != 1 || s1.Audit[0].Accepted || !strings.Contains(s1.Rationale, "no acceptable proposal")) {
			t.Errorf("%s: stage 1 audit %+v, rationale %q: want one rejected attempt and the fallback", r.Strategy, s1.Audit, s1.Rationale)
		}
	}
	if got := strings.Join(labels, " "); got != "fixed self[F,G,H0,T] base[F,G,H0,T]" {
		t.Fatalf("arms %s", got)
	}
	code, out, e = t2t(t, args...)
	if code != 0 || strings.Count(out, ": reusing ") != 3 {
		t.Fatalf("second call: exit %d, %d runs reused: %s\n%s", code, strings.Count(out, ": reusing "), e, out)
	}
	if code, _, e := t2t(t, "experiment", "--strategies", "self", "--out", t.TempDir()); code != 2 || !strings.Contains(e, "--model") {
		t.Fatalf("self without --model: exit %d, %q", code, e)
	}
}
