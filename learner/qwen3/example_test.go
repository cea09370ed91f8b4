package qwen3_test

import (
	"fmt"
	"math/rand/v2"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/qwen3"
)

// A tiny random model: print its memory budget, sample two completions, and take one GRPO
// step that favours the first.
func Example() {
	backend, err := gomlxtrain.NewBackend("cpu")
	if err != nil {
		panic(err)
	}
	cfg, _ := hfmodel.Preset(hfmodel.PresetTiny)
	fmt.Println(hfmodel.EstimateMemory(cfg, 8, 64, false).Total() > 0)
	m, err := qwen3.NewRandom(backend, cfg, 1)
	if err != nil {
		panic(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	prompt := []int32{1, 2, 3}
	gen, err := m.Generate([][]int32{prompt, prompt}, engine.SampleConfig{MaxNewTokens: 8, Temperature: 1}, rng)
	if err != nil {
		panic(err)
	}
	tr, err := m.NewTrainer(learner.DefaultGRPOConfig())
	if err != nil {
		panic(err)
	}
	batch, err := engine.NewSeqBatch([]engine.Sample{
		{Prompt: prompt, Completion: gen.Tokens[0], LogProbs: gen.LogProbs[0], Advantage: 1},
		{Prompt: prompt, Completion: gen.Tokens[1], LogProbs: gen.LogProbs[1], Advantage: -1},
	})
	if err != nil {
		panic(err)
	}
	st, err := tr.GRPOStep(batch)
	if err != nil {
		panic(err)
	}
	fmt.Println(len(gen.Tokens[0]), st.Positions)
	// (Not run as a test: GoMLX's pure-Go backend prints a line of its own on creation.)
}
