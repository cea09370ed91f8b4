package train

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/tokenizer"
	"github.com/t2t-lab/t2t/learner/torch"
)

// recordingChat answers with a fixed text and keeps the messages it was asked.
type recordingChat struct {
	answer string
	msgs   []engineer.ChatMessage
}

func (r *recordingChat) Chat(_ context.Context, msgs []engineer.ChatMessage, _ float64, _ int) (engineer.ChatAnswer, error) {
	r.msgs = msgs
	return engineer.ChatAnswer{Content: r.answer, Engineer: "recorder"}, nil
}

// TestSelfEngineerAcceptsALearnedProposal is the engineer's accept path with a real checkpoint:
// a tiny model (torch engine) is taught by behaviour cloning to answer the engineer prompt with
// one valid proposal, and then, as the self engineer through NewEngineer, its greedy answer
// passes every guardrail and becomes the next config.
func TestSelfEngineerAcceptsALearnedProposal(t *testing.T) {
	ctx := context.Background()
	if _, err := torch.FindPython(ctx, ""); err != nil {
		if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
			t.Fatalf("T2T_REQUIRE_TORCH=1: %v", err)
		}
		t.Skipf("no Python imports torch (apt-get install python3-torch): %v", err)
	}
	dir := filepath.Join(t.TempDir(), "tiny")
	tok, err := textpolicy.TinyTokenizerJSON(textpolicy.DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := hfmodel.Init(dir, hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Seed: 3, Tokenizer: tok,
		TokenizerConfig: []byte(hfmodel.TokenizerConfigJSON), ExactVocab: true}, nil); err != nil {
		t.Fatal(err)
	}
	spec := engine.Spec{Kind: engine.Torch, Threads: 1}
	lm, err := textpolicy.OpenLM(ctx, spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer lm.Close()
	pol, err := textpolicy.New(lm, textpolicy.SFTPolicyOptions(textpolicy.Options{Thinking: false}, 3e-3))
	if err != nil {
		t.Fatal(err)
	}

	// Stage 0 trained on cfg; the answer taught raises the hole ratio.
	cfg := env.Config{Sizes: []env.SizeConfig{{Size: 3, DataRatio: 1, HoleRatio: 0.1, WaitRatio: 0.2}}, Agents: 2, Instances: 8}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	want := cfg.Clone()
	want.Sizes[0].HoleRatio = 0.2
	cj, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	answer := `{"rationale": "more holes", "config": ` + string(cj) + `}`
	h := &engineer.History{RunID: "accept", Stages: []engineer.StageResult{{Stage: 0, Config: cfg,
		Train: []engineer.SizeStats{{Size: 3, Episodes: 16, Valid: 12, Optimal: 10}},
		Val:   []engineer.SizeStats{{Size: 3, Episodes: 8, Valid: 6, Optimal: 5}}}}}
	const modules = "G"
	mods, err := engineer.ParseModules(modules)
	if err != nil {
		t.Fatal(err)
	}

	// The messages the llm strategy sends for h, and a check that the answer passes as text.
	rec := &recordingChat{answer: answer}
	strat, err := engineer.ParseStrategy(engineer.NameLLM, engineer.Options{Base: &cfg, Feasible: env.CheckFeasible,
		LLM: engineer.LLMOptions{Chat: rec, Modules: mods, MaxRetries: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if prop, err := strat.Propose(ctx, h); err != nil || prop.Fallback || prop.Config.Hash() != want.Hash() {
		t.Fatalf("the taught answer itself: %+v, %v", prop, err)
	}
	turns := make([]tokenizer.Message, len(rec.msgs))
	for i, m := range rec.msgs {
		turns[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	prompt := lm.Tok.Encode(tokenizer.ChatPrompt(turns, true, false))
	target := append(lm.Tok.Encode(answer), lm.Stop[0])
	t.Logf("prompt %d tokens, answer %d tokens", len(prompt), len(target))

	// Teach it until its greedy answer is the target (checked every 25 steps).
	learned := false
	for step := 1; step <= 600 && !learned; step++ {
		if _, err := pol.BCStep([]engine.Sample{{Prompt: prompt, Completion: target}}); err != nil {
			t.Fatal(err)
		}
		if step%25 == 0 {
			gen, err := lm.Generate([][]int32{prompt}, engine.SampleConfig{MaxNewTokens: len(target) + 4, StopTokens: lm.Stop}, nil)
			if err != nil {
				t.Fatal(err)
			}
			learned = lm.CompletionText(gen.Tokens[0]) == answer
			t.Logf("step %d: learned %v", step, learned)
		}
	}
	if !learned {
		t.Fatal("600 behaviour-cloning steps did not teach the answer")
	}

	self, closeEng, err := NewEngineer(ctx, EngineerSpec{Strategy: engineer.NameLLM, Target: EngineerSelf, Modules: modules,
		MaxTokens: len(target) + 8, Temperature: 0, Retries: 0}, &cfg, pol)
	if err != nil {
		t.Fatal(err)
	}
	defer closeEng()
	prop, err := self.Propose(ctx, h)
	if err != nil {
		t.Fatal(err)
	}
	if prop.Fallback || len(prop.Attempts) != 1 || !prop.Attempts[0].Accepted || prop.Config.Hash() != want.Hash() {
		t.Fatalf("self engineer: fallback %v, attempts %+v, config %s (want %s)", prop.Fallback, prop.Attempts, prop.Config.Hash(), want.Hash())
	}
	if e := prop.Attempts[0].Engineer; len(e) < 6 || e[:6] != "self@v" {
		t.Fatalf("attempt engineer %q, want self@v…", e)
	}
}
