package main

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/cluster/store"
)

// TestTrainEngineerSelfAndBase runs `t2t train --policy qwen3 --strategy llm` with the
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
	// Without a qwen3 policy self and base are usage errors.
	if code, _, e := t2t(t, "train", "--policy", "scripted", "--strategy", "llm", "--engineer", "self"); code != 2 || !strings.Contains(e, "--policy qwen3") {
		t.Fatalf("scripted --engineer self: exit %d, %q", code, e)
	}
	if code, _, e := t2t(t, "train", "--policy", "scripted", "--strategy", "llm"); code != 2 || !strings.Contains(e, "--engineer URL") {
		t.Fatalf("scripted --strategy llm: exit %d, %q", code, e)
	}
}
