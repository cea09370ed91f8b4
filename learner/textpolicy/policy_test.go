package textpolicy

import (
	"errors"
	"flag"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

var tpSeed = flag.Uint64("tpseed", 0, "seed for the textpolicy tests (0: a fixed default)")

func tpTestSeed(t testing.TB) uint64 {
	s := *tpSeed
	if s == 0 {
		s = 20261202
	}
	t.Logf("seed %d (replay with -tpseed %d)", s, s)
	return s
}

var (
	tpOnce    sync.Once
	tpBackend backends.Backend
	tpTok     *tokenizer.Tokenizer
	tpErr     error
)

// tpLM builds a tiny random Qwen3 with the tiny tokenizer (built once per test binary).
func tpLM(t testing.TB, seed uint64) *LM {
	t.Helper()
	tpOnce.Do(func() {
		tpBackend, tpErr = gomlxtrain.NewBackend("cpu")
		if tpErr != nil {
			return
		}
		var js []byte
		if js, tpErr = TinyTokenizerJSON(DefaultTinyVocab); tpErr == nil {
			tpTok, tpErr = tokenizer.Parse(js)
		}
	})
	if tpErr != nil {
		t.Fatal(tpErr)
	}
	cfg, err := hfmodel.Preset(hfmodel.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	cfg.VocabSize = tpTok.VocabSize()
	m, err := qwen3.NewRandom(tpBackend, cfg, seed)
	if err != nil {
		t.Fatal(err)
	}
	lm, err := NewLM(qwen3.NewEngine(m), tpTok)
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

// tpInstances returns n solved 2-agent instances of side 3 or 4.
func tpInstances(t testing.TB, seed uint64, n int) []*env.Instance {
	t.Helper()
	cfg := env.Config{Agents: 2, Instances: n, Sizes: []env.SizeConfig{
		{Size: 3, DataRatio: 0.5, HoleRatio: 0.1, WaitRatio: 0.5}, {Size: 4, DataRatio: 0.5, HoleRatio: 0.2, WaitRatio: 0.5}}}
	ins, err := env.Generate(cfg, seed, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

func tpOptions() Options {
	o := Options{Prompt: env.DefaultPromptOptions(), MaxNewTokens: 16}
	o.defaults()
	o.GRPO.LR = 1e-3
	return o
}

func TestPlayRolloutWellFormed(t *testing.T) {
	seed := tpTestSeed(t)
	lm := tpLM(t, seed)
	p, err := New(lm, tpOptions())
	if err != nil {
		t.Fatal(err)
	}
	ins := tpInstances(t, seed, 2)
	const g = 3
	ro, err := p.Play(ins, g, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if len(ro.Episodes) != len(ins)*g || len(ro.Actions) != len(ro.LogProbs) {
		t.Fatalf("%d episodes, %d actions, %d log-probs", len(ro.Episodes), len(ro.Actions), len(ro.LogProbs))
	}
	lo := 0
	wAcc, wLen := (*env.LengthSchedule)(nil).Weights()
	for e, ep := range ro.Episodes {
		if ep.Instance != ins[e/g] || ep.Lo != lo || ep.Hi <= ep.Lo || ep.Hi-ep.Lo > 16 {
			t.Fatalf("episode %d: instance %s, tokens [%d,%d) after %d", e, ep.Instance.ID, ep.Lo, ep.Hi, lo)
		}
		lo = ep.Hi
		toks := ro.Actions[ep.Lo:ep.Hi]
		for i, id := range toks {
			lp := ro.LogProbs[ep.Lo+i]
			if id < 0 || int(id) >= lm.Tok.VocabSize() || !(lp <= 0) || math.IsInf(float64(lp), 0) {
				t.Fatalf("episode %d token %d: id %d log-prob %v", e, i, id, lp)
			}
			if lm.IsStop(id) && i != len(toks)-1 {
				t.Fatalf("episode %d: stop token before the end", e)
			}
		}
		// A random model does not write a parsable plan: the reward is the length term alone.
		var rep env.Report
		Judge(ep.Instance, lm.CompletionText(toks), &rep)
		if ep.Report.Passed[env.CheckParsable] || ep.Report.Valid || rep.Passed != ep.Report.Passed {
			t.Fatalf("episode %d: %q judged %+v", e, lm.CompletionText(toks), ep.Report.Passed)
		}
		want := wAcc*0 + wLen*env.LengthReward(len(toks), p.opt.Reward)
		if ep.Reward != want {
			t.Fatalf("episode %d: reward %v, want %v", e, ep.Reward, want)
		}
	}
	if lo != len(ro.Actions) {
		t.Fatalf("episodes cover %d of %d tokens", lo, len(ro.Actions))
	}
	if s := p.Schedule(); !s.Initialized || s.EMA != 1 {
		t.Fatalf("schedule after one sampled play: %+v; want the share of short answers, 1", s)
	}
	again, err := p.Play(ins, g, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(again.Actions, ro.Actions) || !slices.Equal(again.LogProbs, ro.LogProbs) {
		t.Fatal("same seed, different rollout")
	}
	other, err := p.Play(ins, g, 1, seed+1)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(other.Actions, ro.Actions) {
		t.Fatal("another seed gave the same rollout")
	}
	// Greedy play is the model's greedy generation of the same prompts.
	greedy, err := p.Play(ins, 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := lm.Generate([][]int32{p.Prompt(ins[0]), p.Prompt(ins[1])}, engine.SampleConfig{MaxNewTokens: 16, StopTokens: lm.Stop}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i, ep := range greedy.Episodes {
		if !slices.Equal(greedy.Actions[ep.Lo:ep.Hi], gen.Tokens[i]) {
			t.Fatalf("greedy episode %d differs from Generate", i)
		}
	}
	if _, err := p.Play(ins, 0, 1, seed); !errors.Is(err, ErrOptions) {
		t.Fatalf("group 0: %v", err)
	}
}

// The rollout's log-probs are what the trainer computes for the same tokens (the GRPO ratio
// starts at 1), and an update with advantages moves them the right way.
func TestUpdateGRPOStep(t *testing.T) {
	seed := tpTestSeed(t)
	lm := tpLM(t, seed)
	p, err := New(lm, tpOptions())
	if err != nil {
		t.Fatal(err)
	}
	ins := tpInstances(t, seed, 2)
	const g = 2
	ro, err := p.Play(ins, g, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	groups := make([]learner.ReplayedGroup, len(ins))
	for i, in := range ins {
		groups[i].Instance = in
		for e := i * g; e < (i+1)*g; e++ {
			ep := ro.Episodes[e]
			groups[i].Actions = append(groups[i].Actions, ro.Actions[ep.Lo:ep.Hi])
			groups[i].LogProbs = append(groups[i].LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
			groups[i].Rewards = append(groups[i].Rewards, float32(1-e%g)) // first of each group good
		}
	}
	meanLP := func() []float64 {
		out := make([]float64, len(ro.Episodes))
		for e, ep := range ro.Episodes {
			prompt := p.Prompt(ep.Instance)
			seq := append(slices.Clone(prompt), ro.Actions[ep.Lo:ep.Hi]...)
			logits, err := lm.Model.Logits([][]int32{seq})
			if err != nil {
				t.Fatal(err)
			}
			v := lm.Model.Config().VocabSize
			for k, id := range ro.Actions[ep.Lo:ep.Hi] {
				row := logits[0][(len(prompt)-1+k)*v : (len(prompt)+k)*v]
				mx := math.Inf(-1)
				for _, x := range row {
					mx = max(mx, float64(x))
				}
				var s float64
				for _, x := range row {
					s += math.Exp(float64(x) - mx)
				}
				lp := float64(row[id]) - mx - math.Log(s)
				if e2 := math.Abs(lp - float64(ro.LogProbs[ep.Lo+k])); out != nil && p.Version() == 0 && e2 > 1e-4 {
					t.Fatalf("episode %d token %d: sampled log-prob %v, model %v", e, k, ro.LogProbs[ep.Lo+k], lp)
				}
				out[e] += lp / float64(ep.Hi-ep.Lo)
			}
		}
		return out
	}
	before := meanLP()
	st, sig, err := p.Update(groups)
	if err != nil {
		t.Fatal(err)
	}
	if p.Version() != 1 || st.Step != 1 || sig.Groups != 2 || sig.ZeroSignal != 0 {
		t.Fatalf("version %d, stats %+v, signal %+v", p.Version(), st, sig)
	}
	if st.Positions != len(ro.Actions) || math.Abs(st.MeanRatio-1) > 1e-3 {
		t.Fatalf("step trained %d positions (want %d) with mean ratio %v (want 1: on-policy)", st.Positions, len(ro.Actions), st.MeanRatio)
	}
	after := meanLP()
	for e := range before {
		up := after[e] > before[e]
		if want := e%g == 0; up != want {
			t.Fatalf("episode %d (advantage %+v): mean log-prob %v → %v", e, e%g == 0, before[e], after[e])
		}
	}
	// Groups whose rewards are equal carry no signal: no step.
	for i := range groups {
		groups[i].Rewards = []float32{0.5, 0.5}
	}
	st, sig, err = p.Update(groups)
	if err != nil || p.Version() != 1 || st.Positions != 0 || sig.ZeroSignal != 2 {
		t.Fatalf("zero-signal update: err %v, version %d, stats %+v, signal %+v", err, p.Version(), st, sig)
	}
	groups[0].LogProbs = groups[0].LogProbs[:1]
	if _, _, err := p.Update(groups); !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("mismatched group: %v, want ErrBadBatch", err)
	}
}

// An optimal answer is valid and earns the accuracy reward; the prompt ends with the
// template's generation prompt.
func TestJudgeAndPrompt(t *testing.T) {
	seed := tpTestSeed(t)
	in := tpInstances(t, seed, 1)[0]
	sol, err := env.Solve(in, env.SolveOptions{})
	if err != nil {
		t.Fatal(err)
	}
	moves, err := env.PlanMoves(&sol.Plan)
	if err != nil {
		t.Fatal(err)
	}
	var rep env.Report
	plan := Judge(in, "<think>\n\n</think>\n\n"+env.FormatMoves(moves), &rep)
	if !rep.Valid || !rep.Optimal || len(plan.Paths) != 2 {
		t.Fatalf("optimal answer judged %+v", rep.Passed)
	}
	if r := env.Reward(in, &rep, 10, env.DefaultRewardConfig(), nil); r != 0.5 {
		t.Fatalf("reward %v, want 0.5 (w_acc 0.5 × 1)", r)
	}
	lm := tpLM(t, seed)
	for _, thinking := range []bool{false, true} {
		o := tpOptions()
		o.Thinking = thinking
		p, err := New(lm, o)
		if err != nil {
			t.Fatal(err)
		}
		text := lm.Tok.Decode(p.Prompt(in))
		want := "<|im_start|>assistant\n"
		if !thinking {
			want += "<think>\n\n</think>\n\n"
		}
		if text != ChatText(env.RenderPrompt(in, o.Prompt), thinking) || text[len(text)-len(want):] != want {
			t.Fatalf("thinking %v: prompt ends %q", thinking, text[max(0, len(text)-40):])
		}
	}
	bad := tpOptions()
	bad.GenBatch = -1
	if _, err := New(lm, bad); !errors.Is(err, ErrOptions) {
		t.Fatalf("GenBatch -1: %v", err)
	}
}
