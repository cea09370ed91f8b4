package textpolicy_test

import (
	"context"
	"fmt"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Train a checkpoint directory (for example one written by `t2t model init`) with GRPO on
// two instances: play a group per instance, then learn from it.
func Example() {
	lm, err := textpolicy.OpenLM(context.Background(), engine.Spec{Device: "cpu"}, "/tmp/tiny")
	if err != nil {
		panic(err)
	}
	pol, err := textpolicy.New(lm, textpolicy.Options{Prompt: env.DefaultPromptOptions(), MaxNewTokens: 64})
	if err != nil {
		panic(err)
	}
	ins, err := env.Generate(env.DefaultConfig(), 1, 0, 2)
	if err != nil {
		panic(err)
	}
	const group = 4
	ro, err := pol.Play(ins, group, 1, 1)
	if err != nil {
		panic(err)
	}
	groups := make([]learner.ReplayedGroup, len(ins))
	for e, ep := range ro.Episodes {
		g := &groups[e/group]
		g.Instance = ep.Instance
		g.Actions = append(g.Actions, ro.Actions[ep.Lo:ep.Hi])
		g.LogProbs = append(g.LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
		g.Rewards = append(g.Rewards, float32(ep.Reward))
	}
	st, sig, err := pol.Update(groups)
	if err != nil {
		panic(err)
	}
	fmt.Println(pol.Version(), st.Positions, sig.ZeroSignal)
	// (Not run as a test: it needs a checkpoint directory.)
}

// Evaluate a model behind any OpenAI-compatible endpoint as a direct solver.
func ExampleClient() {
	c, err := textpolicy.NewClient(textpolicy.ClientOptions{BaseURL: "http://127.0.0.1:8000/v1", Model: "Qwen/Qwen3-4B", Concurrency: 8})
	if err != nil {
		panic(err)
	}
	spec := env.QuickSpec(2026, 4)
	ins, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		panic(err)
	}
	ro, err := c.Play(ins, 1, 0, 1)
	if err != nil {
		panic(err)
	}
	valid := 0
	for _, ep := range ro.Episodes {
		if ep.Report.Valid {
			valid++
		}
	}
	fmt.Printf("valid %d/%d\n", valid, len(ro.Episodes))
}
