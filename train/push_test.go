package train

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/rolloutengine"
	"github.com/t2t-lab/t2t/serve"
)

// tinyQwen3Dir writes a tiny random Qwen3 checkpoint (as t2t model init
// does) and returns its directory.
func tinyQwen3Dir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	js, err := textpolicy.TinyTokenizerJSON(textpolicy.DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hfmodel.Init(dir, hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Seed: 1, Tokenizer: js,
		TokenizerConfig: []byte(hfmodel.TokenizerConfigJSON), ExactVocab: true}, nil); err != nil {
		t.Fatal(err)
	}
	return dir
}

// parseTrainFlags parses args into fresh Flags.
func parseTrainFlags(t *testing.T, args ...string) *Flags {
	t.Helper()
	var f Flags
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	f.Register(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	return &f
}

// TestRolloutEngineFlags: the --rollout-*, --lora-rank and --reward-l*
// flags build a pusher and a LoRA policy, and each bad combination is an
// *fielderr.Error naming the flag to fix.
func TestRolloutEngineFlags(t *testing.T) {
	dir := tinyQwen3Dir(t)
	qwen := []string{"--policy", "qwen3", "--model", dir, "--max-new-tokens", "8"}
	eng := []string{"--rollout-url", "http://127.0.0.1:1/v1", "--rollout-dir", t.TempDir()}
	ctx := context.Background()
	for _, c := range []struct {
		name  string
		args  []string
		field string
		says  string
	}{
		{"url without engine", []string{"--rollout-url", "http://h/v1"}, "rollout-engine", "needed by --rollout-url"},
		{"gridnet", append([]string{"--rollout-engine", "vllm"}, eng...), "rollout-engine", "--policy qwen3"},
		{"vllm without lora", slices.Concat(qwen, []string{"--rollout-engine", "vllm"}, eng), "rollout-engine", "--lora-rank"},
		{"t2t full without model", slices.Concat(qwen, []string{"--rollout-engine", "t2t"}, eng), "rollout-model", "t2t serve"},
		{"unknown engine", slices.Concat(qwen, []string{"--rollout-engine", "tgi", "--lora-rank", "2"}, eng), "rollout-engine", "want t2t, vllm, sglang"},
		{"bad url", slices.Concat(qwen, []string{"--rollout-engine", "vllm", "--lora-rank", "2", "--rollout-url", "ftp://h", "--rollout-dir", "d"}), "rollout-url", "http(s)"},
		{"no dir", slices.Concat(qwen, []string{"--rollout-engine", "vllm", "--lora-rank", "2", "--rollout-url", "http://h"}), "rollout-dir", "required"},
		{"sglang without model", slices.Concat(qwen, []string{"--rollout-engine", "sglang"}, eng), "rollout-model", "served-model-name"},
		{"negative rank", append(qwen, "--lora-rank", "-1"), "lora-rank", "≥ 0"},
		{"gridnet rank", []string{"--lora-rank", "4"}, "lora-rank", "--policy qwen3"},
		{"rank and resume", append(qwen, "--lora-rank", "4", "--resume", "--redis", "redis://127.0.0.1:1/0", "--checkpoint-dir", t.TempDir()), "lora-rank", "--resume"},
		{"reward", append(qwen, "--reward-l1", "10", "--reward-l2", "10"), "reward-l2", "must exceed --reward-l1 (10)"},
		{"partial at the floor", append(qwen, "--reward-partial", "0.3"), "reward-partial", "a valid plan always earns more"},
		{"negative partial", append(qwen, "--reward-partial", "-0.1"), "reward-partial", "in [0,0.3)"},
		{"gridnet partial", []string{"--reward-partial", "0.2"}, "reward-partial", "--policy qwen3"},
	} {
		s, err := parseTrainFlags(t, c.args...).Build(ctx, slog.New(slog.DiscardHandler), io.Discard)
		var oe *fielderr.Error
		if !errors.As(err, &oe) || oe.Flag != c.field || !strings.Contains(oe.Usage(), c.says) {
			t.Errorf("%s: %v, want a field error about --%s saying %q", c.name, err, c.field, c.says)
		}
		if err == nil {
			_ = s.Close()
		}
	}

	// Good flags: a t2t engine for a LoRA policy, SGLang for the merged weights.
	for _, c := range []struct {
		args     []string
		adapters bool
		prefix   string
	}{
		{slices.Concat(qwen, []string{"--rollout-engine", "t2t", "--lora-rank", "4", "--reward-l1", "4", "--reward-l2", "64", "--reward-partial", "0.2"}, eng), true, "t2t-v"},
		{slices.Concat(qwen, []string{"--rollout-engine", "sglang", "--rollout-model", "Qwen/Qwen3-4B"}, eng), false, ""},
		{slices.Concat(qwen, []string{"--rollout-engine", "SGLang", "--rollout-model", "q", "--lora-rank", "2"}, eng), false, ""},
		{slices.Concat(qwen, []string{"--rollout-engine", "t2t", "--rollout-model", "base"}, eng), false, ""},
	} {
		f := parseTrainFlags(t, c.args...)
		s, err := f.Build(ctx, slog.New(slog.DiscardHandler), io.Discard)
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		p := f.Options(s, io.Discard).RolloutEngine
		if p == nil || p.Adapters() != c.adapters || p.ModelPrefix() != c.prefix || p.BaseURL() != "http://127.0.0.1:1/v1" {
			t.Fatalf("%v: pusher %+v", c.args, p)
		}
		tp := s.Policy.(*textpolicy.Policy)
		lora, ok := tp.LM().Model.LoRA()
		wantRank := 0
		if i := slices.Index(c.args, "--lora-rank"); i >= 0 {
			wantRank = int(c.args[i+1][0] - '0')
		}
		if ok != (wantRank > 0) || lora.Rank != wantRank || (ok && lora.Alpha != float64(2*wantRank)) {
			t.Fatalf("%v: LoRA %+v (%v)", c.args, lora, ok)
		}
		if slices.Contains(c.args, "--reward-l1") && (tp.Options().Reward.L1 != 4 || tp.Options().Reward.L2 != 64 || tp.Options().Reward.Partial != 0.2) {
			t.Fatalf("reward %+v", tp.Options().Reward)
		}
		_ = s.Close()
	}
}

// recordingEngine is a t2t serve over its own copy of a checkpoint, as a
// rollout engine: it records the model every chat completion names.
type recordingEngine struct {
	srv    *httptest.Server
	mu     sync.Mutex
	models []string
}

func newRecordingEngine(t *testing.T, dir string) *recordingEngine {
	t.Helper()
	lm, err := textpolicy.OpenLM(context.Background(), engine.Spec{}, dir)
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(lm, serve.Options{ModelName: "base"})
	if err != nil {
		t.Fatal(err)
	}
	e := &recordingEngine{}
	e.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			body, _ := io.ReadAll(r.Body)
			var req struct {
				Model string `json:"model"`
			}
			_ = json.Unmarshal(body, &req)
			e.mu.Lock()
			e.models = append(e.models, req.Model)
			e.mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { e.srv.Close(); _ = lm.Close() })
	return e
}

// take returns the models named since the last call.
func (e *recordingEngine) take() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	m := e.models
	e.models = nil
	return m
}

// TestPushToEngine drives a LoRA policy's versions through a t2t serve
// standing in for vLLM: version 0 is loaded before anything samples; a
// version made by an update is written, loaded and only then published in
// Redis; rollouts here sample the newest loaded version by its adapter's
// name; and a rollout node told of a version the engine has not loaded
// samples the older adapter and labels its groups with it.
func TestPushToEngine(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	dir := tinyQwen3Dir(t)
	eng := newRecordingEngine(t, dir)
	pushDir := filepath.Join(t.TempDir(), "push")
	f := parseTrainFlags(t, "--policy", "qwen3", "--model", dir, "--max-new-tokens", "6", "--prompt", "compact", "--group", "2",
		"--lora-rank", "2", "--lr", "1e-2", "--rollout-engine", "t2t", "--rollout-url", eng.srv.URL+"/v1", "--rollout-dir", pushDir, "--run-id", "push")
	s, err := f.Build(ctx, slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	st := openStore(t)
	ps := openPolicyStore(t, st)
	opt := f.Options(s, io.Discard)
	opt.Cluster.Policies = ps
	opt.SetDefaults()
	tp := s.Policy.(*textpolicy.Policy)

	p, err := startPush(ctx, opt, tp)
	if err != nil {
		t.Fatal(err)
	}
	defer p.stop()
	if cur := p.push.Current(); cur != 0 {
		t.Fatalf("after the start the engine holds %d, want 0", cur)
	}
	ins, err := env.Generate(smallConfig(), seed, 0, 2)
	if err != nil {
		t.Fatal(err)
	}
	v, play, release, err := p.acquire(ctx, actors.WorkUnit{UnitID: "u0"})
	if err != nil || v != 0 {
		t.Fatalf("acquire: %d, %v", v, err)
	}
	ro, err := play.Play(ins, 2, 1, seed)
	release()
	if err != nil {
		t.Fatal(err)
	}
	if got := eng.take(); !slices.Equal(got, []string{"t2t-v0", "t2t-v0"}) {
		t.Fatalf("version 0 sampled as %v", got)
	}

	// An update with signal makes version 1: written, loaded, published.
	var groups []learner.ReplayedGroup
	for i, in := range ins {
		g := learner.ReplayedGroup{Instance: in}
		for e := 2 * i; e < 2*i+2; e++ {
			ep := ro.Episodes[e]
			g.Actions = append(g.Actions, ro.Actions[ep.Lo:ep.Hi])
			g.LogProbs = append(g.LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
			g.Rewards = append(g.Rewards, float32(e%2))
		}
		groups = append(groups, g)
	}
	if _, _, err := tp.Update(groups); err != nil || tp.Version() != 1 {
		t.Fatalf("update: version %d, %v", tp.Version(), err)
	}
	if latest, err := ps.Latest(ctx, "push"); err == nil {
		t.Fatalf("version %d published before the engine loaded anything new", latest)
	}
	p.written(ctx, 1, true)
	deadline := time.Now().Add(10 * time.Second)
	for { // published by the loader after the load: Redis is a network edge, poll it
		if v, err := ps.Latest(ctx, "push"); err == nil && v == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("version 1 never published")
		}
		waitTick(5 * time.Millisecond)
	}
	v, play, release, err = p.acquire(ctx, actors.WorkUnit{UnitID: "u1"})
	if err != nil || v != 1 {
		t.Fatalf("acquire after the push: %d, %v", v, err)
	}
	if _, err := play.Play(ins[:1], 2, 1, seed); err != nil {
		t.Fatal(err)
	}
	release()
	if got := eng.take(); !slices.Equal(got, []string{"t2t-v1"}) {
		t.Fatalf("version 1 sampled as %v", got)
	}

	// A rollout node that heard of version 2 (not loaded anywhere) plays
	// the engine's version 1, by its adapter's name, and says so.
	spec, err := SpecOf(opt, tp)
	if err != nil {
		t.Fatal(err)
	}
	if spec.Endpoint != eng.srv.URL+"/v1" || spec.ModelPrefix != rolloutengine.AdapterPrefix || spec.Policy != EndpointPolicyName {
		t.Fatalf("spec %+v", spec)
	}
	if err := ps.PutSpec(ctx, spec); err != nil {
		t.Fatal(err)
	}
	var logs []UnitLog
	rr := NewRemoteRunner(st, ps, "cpu", nil, func(l UnitLog) { logs = append(logs, l) })
	rr.SetLearnerVersion(func() int64 { return 2 })
	cfgJSON, _ := json.Marshal(smallConfig())
	d, err := rr.RunUnit(ctx, actors.WorkUnit{UnitID: "push/s0/u0", RunID: "push", ConfigVersion: "c0", ConfigJSON: cfgJSON, Seed: seed, Lo: 0, Hi: 2, PolicyVersion: 2})
	if err != nil {
		t.Fatal(err)
	}
	for _, g := range d.Groups {
		if g.PolicyVersion != 1 {
			t.Fatalf("a group labelled %d, want 1", g.PolicyVersion)
		}
	}
	if got := eng.take(); !slices.Equal(got, []string{"t2t-v1", "t2t-v1"}) {
		t.Fatalf("the rollout node sampled %v", got)
	}
	if len(logs) != 1 || logs[0].PolicyVersion != 1 || logs[0].LearnerVersion != 2 || logs[0].Lag != 1 {
		t.Fatalf("unit log %+v", logs)
	}
	ex, err := st.Examples(ctx, "push", 0, "train", 10)
	if err != nil || len(ex) == 0 {
		t.Fatalf("examples %v, %v", ex, err)
	}
	for _, e := range ex {
		if e.PolicyVersion != 1 {
			t.Fatalf("Redis records a sample of version %d, want 1", e.PolicyVersion)
		}
	}
}

// TestPushNeedsLoRA: an adapter engine refuses a policy without adapters
// before writing anything.
func TestPushNeedsLoRA(t *testing.T) {
	dir := tinyQwen3Dir(t)
	f := parseTrainFlags(t, "--policy", "qwen3", "--model", dir, "--max-new-tokens", "4")
	s, err := f.Build(context.Background(), slog.New(slog.DiscardHandler), io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pushDir := t.TempDir()
	p, err := rolloutengine.New(rolloutengine.Config{Kind: rolloutengine.T2T, URL: "http://127.0.0.1:1", Dir: pushDir, Adapters: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt := f.Options(s, io.Discard)
	opt.RolloutEngine = p
	opt.SetDefaults()
	_, err = startPush(context.Background(), opt, s.Policy)
	var oe *fielderr.Error
	if !errors.As(err, &oe) || !strings.Contains(oe.Usage(), "--lora-rank") {
		t.Fatalf("%v", err)
	}
	if _, err := startPush(context.Background(), opt, &ScriptedPolicy{}); !errors.As(err, &oe) || !strings.Contains(oe.Usage(), "qwen3") {
		t.Fatalf("scripted: %v", err)
	}
}
