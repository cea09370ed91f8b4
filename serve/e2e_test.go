package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
	"github.com/t2t-lab/t2t/train"
)

func srvSmallConfig() env.Config {
	return env.Config{Agents: 2, Instances: 4, Sizes: []env.SizeConfig{
		{Size: 3, DataRatio: 0.5, HoleRatio: 0.1, WaitRatio: 0.5}, {Size: 4, DataRatio: 0.5, HoleRatio: 0.2, WaitRatio: 0.5}}}
}

// The endpoint client, pointed at `t2t serve`, brings back training-grade rollouts: the
// model's own token ids and log-probs, which the in-process learner trains on at ratio 1.
func TestClientRolloutsThroughServeTrainInProcess(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, hs, _ := srvStart(t, lm, serve.Options{})
	off := false
	prompt := env.DefaultPromptOptions()
	c, err := textpolicy.NewClient(textpolicy.ClientOptions{BaseURL: hs.URL + "/v1", Model: "tiny", Prompt: prompt, Thinking: &off,
		MaxTokens: 12, RequireLogProbs: true, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	ins, err := env.Generate(srvSmallConfig(), seed, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := c.Play(ins, 2, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := textpolicy.New(lm, textpolicy.Options{Prompt: prompt, MaxNewTokens: 12, GRPO: srvGRPO()})
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]learner.ReplayedGroup, len(ins))
	for e, ep := range ro.Episodes {
		if ep.Hi-ep.Lo < 1 || ep.Report.Valid {
			t.Fatalf("episode %d: %d tokens, valid %v", e, ep.Hi-ep.Lo, ep.Report.Valid)
		}
		ids := ro.Actions[ep.Lo:ep.Hi]
		for k, want := range srvModelLogProbs(t, lm, pol.Prompt(ep.Instance), ids) {
			if got := float64(ro.LogProbs[ep.Lo+k]); math.Abs(got-want) > 1e-4 {
				t.Fatalf("episode %d token %d: endpoint log-prob %v, model %v", e, k, got, want)
			}
		}
		g := &groups[e/2]
		g.Instance = ep.Instance
		g.Actions = append(g.Actions, ids)
		g.LogProbs = append(g.LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
		g.Rewards = append(g.Rewards, float32(e%2))
	}
	st, _, err := pol.Update(groups)
	if err != nil {
		t.Fatal(err)
	}
	if st.Positions != len(ro.Actions) || math.Abs(st.MeanRatio-1) > 1e-3 || pol.Version() != 1 {
		t.Fatalf("update on endpoint rollouts: %+v", st)
	}
}

func srvGRPO() learner.GRPOConfig {
	g := learner.DefaultGRPOConfig()
	g.LR, g.MicroBatch = 1e-3, 8
	g.LengthBuckets = []int{64, 128, 256, 512, 1024}
	return g
}

// The whole loop on the tiny model: train.Run drives the text policy through two stages,
// and the engineer is the llm strategy talking to `t2t serve`, which serves the same model
// (so the engineer prompt is answered by the policy being trained). The random model's answer
// is no config, so the engineer keeps the previous one, which the audit in Redis records.
func TestTrainRunWithServedPolicyAsEngineer(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	pol, err := textpolicy.New(lm, textpolicy.Options{Prompt: env.DefaultPromptOptions(), MaxNewTokens: 24, GRPO: srvGRPO()})
	if err != nil {
		t.Fatal(err)
	}
	srv, err := serve.New(pol.LM(), serve.Options{ModelName: "policy"})
	if err != nil {
		t.Fatal(err)
	}
	var engineerCalls atomic.Int64
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			engineerCalls.Add(1)
		}
		srv.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	cfg := srvSmallConfig()
	// Module T only: the tiny tokenizer is learned on planning prompts, so the engineer's
	// F+G+H+T prompt is ~2,800 tokens, ~10 s per call on the pure-Go backend; T's is ~1,600.
	mods, err := engineer.ParseModules("T")
	if err != nil {
		t.Fatal(err)
	}
	strat, err := engineer.NewLLM(engineer.Options{Base: &cfg, Feasible: env.CheckFeasible, LLM: engineer.LLMOptions{
		BaseURL: hs.URL + "/v1", Model: "policy", Modules: mods, MaxRetries: 1, MaxTokens: 24,
		Timeout: time.Minute, Backoff: -1,
	}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var out bytes.Buffer
	start := time.Now()
	res, err := train.Run(ctx, train.Options{
		RunID: "e2e", Stages: 2, Seed: seed, Config: cfg, InstancesPerUnit: 2, Rollouts: 1, MaxInFlight: 1,
		GroupSize: 2, LearnerBatch: 2, Strategy: strat, ValPerSize: 1, EvalPerSize: 1, Out: &out,
	}, pol, st)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	t.Logf("run took %s\n%s", time.Since(start).Round(time.Millisecond), out.String())
	if len(res.Stages) != 2 || res.Stages[0].Train.Episodes != 8 || res.Stages[1].Train.Episodes != 8 {
		t.Fatalf("stage reports %+v", res.Stages)
	}
	if res.Stages[0].Updates < 1 {
		t.Fatalf("stage 0 ran %d learner updates", res.Stages[0].Updates)
	}
	// The engineer asked the served policy (twice: the answer and one retry), got no config,
	// and kept the stage-0 config.
	if n := engineerCalls.Load(); n != 2 {
		t.Fatalf("%d chat-completion calls through serve, want 2", n)
	}
	audit, err := st.Audit(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if len(audit) != 2 {
		t.Fatalf("%d audit records, want 2: %+v", len(audit), audit)
	}
	for _, a := range audit {
		if a.Stage != 1 || a.Accepted || a.PromptHash == "" || a.Reason == "" {
			t.Fatalf("audit record %+v: want a rejected stage-1 attempt with its reason", a)
		}
	}
	cfgs, err := st.Configs(ctx, "e2e")
	if err != nil {
		t.Fatal(err)
	}
	if len(cfgs) != 2 || cfgs[1].Proposer != "llm" || !strings.HasPrefix(cfgs[1].Rationale, "kept the previous config") {
		t.Fatalf("configs %+v", cfgs)
	}
	var c0, c1 env.Config
	if json.Unmarshal(cfgs[0].JSON, &c0) != nil || json.Unmarshal(cfgs[1].JSON, &c1) != nil || c0.Hash() != c1.Hash() {
		t.Fatalf("stage 1 config %s differs from stage 0's %s", cfgs[1].JSON, cfgs[0].JSON)
	}
}
