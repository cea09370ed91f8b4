package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// historiesFile is the committed record of real gridnet runs' stage aggregates
// (scripts/engineer-histories/record.sh).
const historiesFile = "../../configs/engineer-histories.jsonl"

// TestEngineerTurnsInSFTData: `t2t engineer turns` on the recorded histories marks a held-out
// share by context hash, `t2t sft --engineer-turns` refuses to take more turns than the file
// has for training, and the turns it takes are never held out.
func TestEngineerTurnsInSFTData(t *testing.T) {
	dir := t.TempDir()
	turns := filepath.Join(dir, "turns.jsonl")
	code, out, e := t2t(t, "engineer", "turns", "--histories", historiesFile, "--out", turns, "--teacher", "rules")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	m := regexp.MustCompile(`(\d+) turns from (\d+) histories .* (\d+) held out \(20% of the hash space\), (\d+) for training`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("output: %s", out)
	}
	t.Log(strings.TrimSpace(out))
	all, err := engineer.ReadTurnsFile(turns)
	if err != nil {
		t.Fatal(err)
	}
	train, err := engineer.TrainingTurns(all, engineer.DefaultHeldOutPercent)
	if err != nil {
		t.Fatal(err)
	}
	held := 0
	for _, tu := range all {
		if tu.HeldOut {
			held++
		}
	}
	if held == 0 || len(train) == 0 || held+len(train) != len(all) {
		t.Fatalf("%d turns, %d held out, %d for training", len(all), held, len(train))
	}
	// The sft flags take exactly the training turns, in order.
	f := &sftFlags{engData: &turns, engTurns: new(int), engEvery: new(int), engHeld: new(int)}
	*f.engTurns, *f.engEvery, *f.engHeld = len(train), 2, engineer.DefaultHeldOutPercent
	var o textpolicy.SFTOptions
	got, err := f.engineerTurns(&o)
	if err != nil {
		t.Fatal(err)
	}
	for i, tu := range got {
		if tu.HeldOut || engineer.IsHeldOut(engineer.ContextHash(tu.History), engineer.DefaultHeldOutPercent) || tu.Context != train[i].Context {
			t.Fatalf("sft turn %d: held out %v, context %s", i, tu.HeldOut, tu.Context)
		}
	}
	if o.EngineerEvery != 2 {
		t.Fatalf("EngineerEvery %d", o.EngineerEvery)
	}
	for _, c := range [][]string{
		{"--engineer-turns", "1000000", "--engineer-data", turns},
		{"--engineer-turns", "2"},
		{"--engineer-data", turns},
		{"--engineer-turns", "2", "--engineer-data", turns, "--engineer-every", "0"},
	} {
		args := append([]string{"sft", "--model", dir, "--out", filepath.Join(dir, "o")}, c...)
		if code, _, e := t2t(t, args...); code != 2 || !strings.Contains(e, "--engineer") {
			t.Errorf("%v: exit %d, %q: want a usage error naming the flag", c, code, e)
		}
	}
	if code, _, e := t2t(t, "engineer", "turns", "--histories", historiesFile, "--out", turns, "--teacher", "random"); code != 2 || !strings.Contains(e, "teacher") {
		t.Errorf("--teacher random: exit %d, %q", code, e)
	}
}

// traineeRun returns the t2t train arguments args followed by the run shape that
// TestTraineeAsEngineer records a context on and then trains with: issue #28's 2–5-agent
// curriculum (configs/two-to-five-agents.json: agents 2..5, sizes 3..6), 4 instances, 2 stages,
// and the smallest validation and
// benchmark sets. The recorded run and the self run share it, so that the self engineer's
// stage-1 prompt is the taught one.
func traineeRun(args ...string) []string {
	return append(append([]string{"train"}, args...), "--stages", "2", "--config", "../../configs/two-to-five-agents.json", "--instances", "4",
		"--instances-per-unit", "2", "--group", "2", "--learner-batch", "2", "--val-per-size", "1", "--eval-per-size", "1")
}

// The SFT budget of TestTraineeAsEngineer: traineeFirstSteps steps at traineeLR on the one
// turn, then rounds of traineeMoreSteps until the score accepts the answer, at most
// traineeMaxSteps in all. Measured on 2026-12-06 (torch 2 threads, seed 1): 80 steps answer
// valid JSON with a garbled rationale key (rejected), 100 steps answer the taught proposal
// token for token; at 3e-2 the loss still stood at 1.3 after 50 steps.
const (
	traineeFirstSteps = 100
	traineeMoreSteps  = 50
	traineeMaxSteps   = 200
	traineeLR         = "1e-2"
	// traineeAnswerTokens bounds the engineer's answer: the taught one is over 256 tokens of
	// the tiny byte-level tokenizer.
	traineeAnswerTokens = "512"
)

// TestTraineeAsEngineer is issue #28's proof on a tiny checkpoint (torch engine): it trains a
// random tiny model on one engineer turn until it writes a proposal the guardrails accept, then
// runs `t2t train --strategy llm --engineer self` for 2 stages and checks that the self engineer's
// stage-1 proposal was accepted on its first attempt, without a fall-back, and became stage 1's
// config.
//
// The taught turn is the run's own stage-1 context, produced before the run. That is possible
// because the context modules are T alone: the compact prompt with T shows the stage, the stage
// count, the agents, the instances and the previous config's sizes and ratios, and no result of
// the policy (F's failure table, H's valid rates, S's rationale are off). So the stage-1 prompt of
// any run of the same shape (traineeRun) is the same bytes, whatever its policy did in stage
// 0: a scripted-policy run of that shape is recorded, `t2t engineer propose --dump-history` reads
// its history back as the self engineer would (2 planned stages), `t2t engineer turns` answers it
// with the rules teacher, and the audit's prompt hash (SHA-256 of the system and user messages)
// must equal the turn's. A tiny model learns to memorise that answer, not to design: the test shows
// the path from the policy's weights through the guardrails into the run's next config, not skill.
func TestTraineeAsEngineer(t *testing.T) {
	requireTorch(t)
	redisURL := nodeRedis(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: redisURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	t.Log("seeds: the commands' default, 1 (model init, sft, train)")

	// The context: stage 1 of a 2-stage run of this shape, with module T.
	rec := "trainee-record"
	code, out, e := t2t(t, traineeRun("--policy", "scripted", "--strategy", "fixed", "--redis", redisURL, "--run-id", rec)...)
	if code != 0 {
		t.Fatalf("scripted train: exit %d: %s\n%s", code, e, out)
	}
	hist := filepath.Join(dir, "history.json")
	if code, out, e := t2t(t, "engineer", "propose", "--run", rec, "--redis", redisURL, "--total-stages", "2", "--stage", "1",
		"--strategy", "llm", "--prompt", "compact", "--modules", "T", "--dump-history", hist); code != 0 {
		t.Fatalf("engineer propose: exit %d: %s\n%s", code, e, out)
	}
	turns := filepath.Join(dir, "turn.jsonl")
	if code, out, e := t2t(t, "engineer", "turns", "--histories", hist, "--out", turns, "--teacher", "rules", "--prompt", "compact",
		"--modules", "T", "--held-out", "0"); code != 0 {
		t.Fatalf("engineer turns: exit %d: %s", code, e)
	} else {
		t.Log(strings.TrimSpace(out))
	}
	all, err := engineer.ReadTurnsFile(turns)
	if err != nil || len(all) != 1 || all[0].Stage != 1 || all[0].HeldOut {
		t.Fatalf("turns %+v, %v: want one training turn for stage 1", all, err)
	}
	turn := all[0]
	if !turn.Config.HasAgentRange() || !strings.Contains(turn.User, "agents 2..5") || !strings.Contains(turn.Answer, `"agents_max": 5`) {
		t.Fatalf("the taught turn is not on the 2..5-agent range: config %+v, prompt %q, answer %s", turn.Config, turn.User, turn.Answer)
	}
	t.Logf("taught prompt %s:\n%s\nanswer: %s", turn.PromptHash, turn.User, turn.Answer)

	// SFT on that one turn until the guardrails accept the greedy answer.
	model := filepath.Join(dir, "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", model); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	ck, steps, accepted := model, 0, false
	for round := 1; !accepted && steps < traineeMaxSteps; round++ {
		n := traineeFirstSteps
		if round > 1 {
			n = min(traineeMoreSteps, traineeMaxSteps-steps)
		}
		next := filepath.Join(dir, "eng"+strconv.Itoa(round))
		code, out, e := t2t(t, "sft", "--model", ck, "--out", next, "--engine", "torch", "--threads", "2", "--steps", strconv.Itoa(n), "--batch", "1",
			"--lr", traineeLR, "--eval", "1", "--report-every", strconv.Itoa(n), "--engineer-turns", "1", "--engineer-data", turns,
			"--engineer-every", "1", "--engineer-held-out", "0")
		if code != 0 {
			t.Fatalf("sft round %d: exit %d: %s\n%s", round, code, e, out)
		}
		ck, steps = next, steps+n
		accepted = scoreTurn(t, ck, turns, filepath.Join(dir, "score"+strconv.Itoa(round)+".json"))
		t.Logf("sft round %d: %d steps in all at lr %s, accepted %v", round, steps, traineeLR, accepted)
	}
	if !accepted {
		t.Fatalf("after %d SFT steps the checkpoint's answer to the taught context is still rejected", steps)
	}

	// The self run. Its learning rate is the qwen3 default, 1e-6, a test-size choice: AdamW moves
	// each weight by about 1e-6 per update, so stage 0's GRPO on 4 instances cannot undo the
	// memorised answer before the engineer is asked for stage 1. (The checkpoint was taught no MAPF
	// answer, so every group's rewards are equal and carry no gradient anyway: on 2026-12-06 the
	// audit named self@v0. A run whose rewards differ would need the same small rate.)
	run := "trainee-self"
	code, out, e = t2t(t, traineeRun("--engine", "torch", "--threads", "2", "--policy", "qwen3", "--model", ck, "--max-new-tokens", "8",
		"--lr", "1e-6", "--prompt", "compact", "--strategy", "llm", "--engineer", "self", "--engineer-prompt", "compact", "--engineer-modules", "T",
		"--engineer-temperature", "0", "--engineer-retries", "0", "--engineer-max-tokens", traineeAnswerTokens, "--redis", redisURL, "--run-id", run)...)
	if code != 0 || !strings.Contains(out, "done in") {
		t.Fatalf("train --engineer self: exit %d: %s\n%s", code, e, out)
	}
	audit, err := st.Audit(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 1 || audit[0].Stage != 1 || audit[0].Attempt != 0 || !strings.HasPrefix(audit[0].Engineer, "self@v") {
		t.Fatalf("audit %+v: want one attempt (--engineer-retries 0) at stage 1 by self@v…", audit)
	}
	a := audit[0]
	t.Logf("self engineer %s: accepted=%v %q, answer %s", a.Engineer, a.Accepted, a.Reason, a.RawAnswer)
	if a.PromptHash != turn.PromptHash {
		t.Fatalf("the self engineer was asked prompt %s, the taught one is %s", a.PromptHash, turn.PromptHash)
	}
	if !a.Accepted || a.Reason != "accepted" {
		t.Fatalf("stage 1's proposal: accepted=%v, reason %q: want accepted as written (no projection)", a.Accepted, a.Reason)
	}
	cfgs, err := st.Configs(ctx, run)
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || cfgs[1].Stage != 1 {
		t.Fatalf("configs %+v: want stage 0's and stage 1's", cfgs)
	}
	if strings.Contains(cfgs[1].Rationale, "kept the previous config") {
		t.Fatalf("stage 1 fell back: rationale %q", cfgs[1].Rationale)
	}
	var stage1, proposed env.Config
	if err := json.Unmarshal(cfgs[1].JSON, &stage1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(a.Projected), &proposed); err != nil {
		t.Fatalf("audit's config %q: %v", a.Projected, err)
	}
	if stage1.Hash() != proposed.Hash() || stage1.Diff(proposed) != "" {
		t.Fatalf("stage 1's config %s is not the accepted proposal %s", cfgs[1].JSON, a.Projected)
	}
	if lo, hi := stage1.AgentRange(); lo != 2 || hi != 5 {
		t.Fatalf("stage 1's config has agents %d..%d, want the curriculum's 2..5", lo, hi)
	}
	t.Logf("stage 1 config %s = the self engineer's proposal (the taught one: %v), rationale %q", cfgs[1].Version, stage1.Hash() == turn.Config.Hash(), cfgs[1].Rationale)
}

// scoreTurn runs `t2t engineer score --all` on the one turn of turns with checkpoint ck and
// reports whether its answer was accepted; the printed counts and the --json file must agree.
func scoreTurn(t *testing.T, ck, turns, jsonPath string) bool {
	t.Helper()
	code, out, e := t2t(t, "engineer", "score", "--model", ck, "--contexts", turns, "--all", "--engine", "torch", "--threads", "2",
		"--max-tokens", traineeAnswerTokens, "--json", jsonPath)
	if code != 0 {
		t.Fatalf("score: exit %d: %s\n%s", code, e, out)
	}
	m := regexp.MustCompile(`valid JSON [\d.]+% \((\d+)/(\d+)\), accepted by the guardrails [\d.]+% \((\d+)/(\d+)\)`).FindStringSubmatch(out)
	if m == nil || m[2] != "1" || m[4] != "1" || m[3] > m[1] {
		t.Fatalf("score output %q: want counts over the 1 context, accepted ≤ valid", out)
	}
	var doc struct {
		Turns, Accepted int
		PerTurn         []struct {
			Accepted bool
			Reason   string
			Raw      string
		} `json:"per_turn"`
	}
	if b, err := os.ReadFile(jsonPath); err != nil || json.Unmarshal(b, &doc) != nil || doc.Turns != 1 || len(doc.PerTurn) != 1 {
		t.Fatalf("score --json: %v %+v", err, doc)
	}
	p := doc.PerTurn[0]
	acc := 0
	if p.Accepted {
		acc = 1
	}
	if acc != doc.Accepted || strconv.Itoa(acc) != m[3] {
		t.Fatalf("score --json: turn accepted %v, summary %d, printed %s", p.Accepted, doc.Accepted, m[3])
	}
	t.Logf("score: %s (%s); answer %s", strings.TrimSpace(out), p.Reason, p.Raw)
	return p.Accepted
}
