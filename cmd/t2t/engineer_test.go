package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

// engTestRun trains a short scripted run into an embedded Redis and
// returns the store (its URL serves --redis).
func engTestRun(t *testing.T, runID string) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg := env.Config{Agents: 2, Instances: 24}
	for s := 3; s <= 5; s++ {
		cfg.Sizes = append(cfg.Sizes, env.SizeConfig{Size: s, DataRatio: 1.0 / 3, HoleRatio: 0.2, WaitRatio: 0.3})
	}
	strat, err := engineer.ParseStrategy(engineer.NameRules, engineer.Options{Base: &cfg, Feasible: env.CheckFeasible})
	if err != nil {
		t.Fatal(err)
	}
	opt := train.Options{RunID: runID, Stages: 3, Seed: 5, Config: cfg, InstancesPerUnit: 8, GroupSize: 2, LearnerBatch: 4, ValPerSize: 2, EvalPerSize: 1, Strategy: strat}
	if _, err := train.Run(context.Background(), opt, &train.ScriptedPolicy{MistakeRate: 0.3}, st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestEngineerProposeRedisAndFile proposes from a run in Redis, dumps the
// history, and proposes again from the dump: same prompt, same proposal.
func TestEngineerProposeRedisAndFile(t *testing.T) {
	st := engTestRun(t, "eng-run")
	dir := t.TempDir()
	hist := filepath.Join(dir, "history.json")
	code, fromRedis, e := t2t(t, "engineer", "propose", "--run", "eng-run", "--redis", st.URL(), "--total-stages", "3", "--strategy", "learnability", "--dump-history", hist)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if !strings.Contains(fromRedis, `history: run "eng-run", 3 finished stages; proposing stage 3`) || !strings.Contains(fromRedis, "=== proposal (learnability) for stage 3") ||
		!strings.Contains(fromRedis, "audit: accepted by the guardrails at attempt 0 of ") || !strings.Contains(fromRedis, "diff from the stage 2 config:") {
		t.Fatalf("output:\n%s", fromRedis)
	}
	code, fromFile, e := t2t(t, "engineer", "propose", "--config-history", hist, "--strategy", "learnability")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if fromFile != fromRedis {
		t.Fatalf("proposal from the dumped history differs:\n--- redis\n%s\n--- file\n%s", fromRedis, fromFile)
	}
	// The llm prompt is engineer.BuildPrompt of the same history.
	b, _ := os.ReadFile(hist)
	var h engineer.History
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	h.Stages = h.Stages[:2]
	mods, _ := engineer.ParseModules("F,G,H0,T")
	p, err := engineer.BuildPrompt(&h, mods, 0)
	if err != nil {
		t.Fatal(err)
	}
	code, out, e := t2t(t, "engineer", "propose", "--config-history", hist, "--stage", "2", "--modules", "F,G,H0,T")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if !strings.Contains(out, "proposing stage 2 with strategy llm") || !strings.Contains(out, "hash "+p.Hash) ||
		!strings.Contains(out, "--- system ---\n"+p.System+"\n--- user ---\n"+p.User+"\n") || !strings.Contains(out, "no --engineer: prompt only") {
		t.Fatalf("llm prompt output:\n%s", out)
	}
	// Rules from stage 2's view prints a diff against the stage-1 config.
	code, out, e = t2t(t, "engineer", "propose", "--run", "eng-run", "--redis", st.URL(), "--stage", "2", "--strategy", "rules", "--out", filepath.Join(dir, "next.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	if !strings.Contains(out, "proposing stage 2") || !(strings.Contains(out, "diff from the stage 1 config:") || strings.Contains(out, "no change from the previous config")) {
		t.Fatalf("rules output:\n%s", out)
	}
	nb, err := os.ReadFile(filepath.Join(dir, "next.json"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := env.ParseConfig(nb); err != nil {
		t.Fatalf("proposed config: %v\n%s", err, nb)
	}
}

func TestEngineerProposeBadInput(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"RunID":"x","Nope":1}`), 0o644)
	for _, args := range [][]string{
		{"engineer", "propose"},
		{"engineer", "propose", "--run", "r"},
		{"engineer", "propose", "--run", "r", "--config-history", bad},
		{"engineer", "propose", "--config-history", bad},
		{"engineer", "propose", "--config-history", filepath.Join(dir, "missing.json")},
		{"engineer", "propose", "--config-history", bad, "--modules", "F,X"},
		{"engineer", "nosuch"},
	} {
		if code, _, _ := t2t(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
}
