package qwen3

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

func strmPrompts(seed uint64, vocab int) [][]int32 {
	rng := rand.New(rand.NewPCG(seed, 9))
	out := make([][]int32, 3)
	for i := range out {
		p := make([]int32, 3+rng.IntN(9))
		for j := range p {
			p[j] = int32(rng.IntN(vocab))
		}
		out[i] = p
	}
	return out
}

// GenerateStream with a callback that never stops equals Generate, token for token.
func TestGenerateStreamMatchesGenerate(t *testing.T) {
	seed := qwenTestSeed(t)
	m, err := NewRandom(qwenBackend(t), qwenTiny(t), seed)
	if err != nil {
		t.Fatal(err)
	}
	prompts := strmPrompts(seed, m.Config().VocabSize)
	sc := engine.SampleConfig{MaxNewTokens: 12, Temperature: 1, StopTokens: []int32{7, 8}}
	want, err := m.Generate(prompts, sc, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	var events []engine.TokenEvent
	got, err := m.GenerateStream(prompts, sc, 3, rand.New(rand.NewPCG(seed, 1)), func(ev engine.TokenEvent) bool {
		ev.Top = slices.Clone(ev.Top)
		events = append(events, ev)
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	for i := range prompts {
		if !slices.Equal(want.Tokens[i], got.Tokens[i]) || !slices.Equal(want.LogProbs[i], got.LogProbs[i]) || want.Stopped[i] != got.Stopped[i] {
			t.Fatalf("row %d: stream %v %v, generate %v %v", i, got.Tokens[i], got.Stopped[i], want.Tokens[i], want.Stopped[i])
		}
	}
	n := 0
	for _, ev := range events {
		if got.Tokens[ev.Row][ev.Step] != ev.Token || got.LogProbs[ev.Row][ev.Step] != ev.LogProb {
			t.Fatalf("event %+v disagrees with the result", ev)
		}
		if len(ev.Top) != 3 {
			t.Fatalf("event %+v: %d alternatives, want 3", ev, len(ev.Top))
		}
		var mass float64
		for k, a := range ev.Top {
			if k > 0 && a.LogProb > ev.Top[k-1].LogProb {
				t.Fatalf("alternatives not sorted: %+v", ev.Top)
			}
			mass += math.Exp(float64(a.LogProb))
		}
		if mass > 1+1e-5 {
			t.Fatalf("alternatives hold mass %v > 1", mass)
		}
		if ev.LogProb > ev.Top[0].LogProb+1e-6 {
			t.Fatalf("sampled token log-prob %v above the most likely %v", ev.LogProb, ev.Top[0].LogProb)
		}
		for _, a := range ev.Top {
			if a.Token == ev.Token && math.Abs(float64(a.LogProb-ev.LogProb)) > 1e-6 {
				t.Fatalf("token %d: log-prob %v in the event, %v among the alternatives", ev.Token, ev.LogProb, a.LogProb)
			}
		}
		n++
	}
	total := 0
	for _, toks := range got.Tokens {
		total += len(toks)
	}
	if n != total {
		t.Fatalf("%d events for %d tokens", n, total)
	}
}

// A callback that returns true ends its row there; the other rows go on.
func TestGenerateStreamCallbackStops(t *testing.T) {
	seed := qwenTestSeed(t)
	m, err := NewRandom(qwenBackend(t), qwenTiny(t), seed)
	if err != nil {
		t.Fatal(err)
	}
	prompts := strmPrompts(seed, m.Config().VocabSize)
	got, err := m.GenerateStream(prompts, engine.SampleConfig{MaxNewTokens: 10}, 0, nil, func(ev engine.TokenEvent) bool {
		if ev.Top != nil {
			t.Errorf("alternatives without asking: %v", ev.Top)
		}
		return ev.Row == 1 && ev.Step == 3
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Tokens[1]) != 4 || !got.Stopped[1] {
		t.Fatalf("row 1: %d tokens, stopped %v; want 4, true", len(got.Tokens[1]), got.Stopped[1])
	}
	for _, r := range []int{0, 2} {
		if len(got.Tokens[r]) != 10 || got.Stopped[r] {
			t.Fatalf("row %d: %d tokens, stopped %v; want 10, false", r, len(got.Tokens[r]), got.Stopped[r])
		}
	}
	stopAll, err := m.GenerateStream(prompts, engine.SampleConfig{MaxNewTokens: 10}, 0, nil, func(engine.TokenEvent) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	for r := range prompts {
		if len(stopAll.Tokens[r]) != 1 {
			t.Fatalf("row %d: %d tokens after every row stopped at once", r, len(stopAll.Tokens[r]))
		}
	}
	if _, err := m.GenerateStream(prompts, engine.SampleConfig{MaxNewTokens: 1}, -1, nil, nil); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Fatalf("topLogProbs -1: %v, want ErrInvalidConfig", err)
	}
}

func TestInspect(t *testing.T) {
	seed := qwenTestSeed(t)
	dir := t.TempDir()
	cfg, err := hfmodel.WriteRandomCheckpoint(dir, qwenTiny(t), seed, "")
	if err != nil {
		t.Fatal(err)
	}
	ins, err := hfmodel.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if ins.Params != cfg.NumParams() || len(ins.Problems) != 0 || ins.ParamsByDType["F32"] != cfg.NumParams() {
		t.Fatalf("inspection %+v; want %d F32 parameters and no problems", ins, cfg.NumParams())
	}
	layered := 0
	for _, g := range ins.Groups {
		if strings.Contains(g.Pattern, ".layers.N.") {
			if g.Count != cfg.NumHiddenLayers {
				t.Fatalf("group %+v: want one tensor per layer (%d)", g, cfg.NumHiddenLayers)
			}
			layered++
		}
	}
	if layered != len(hfmodel.LayerModules) || ins.Tensors != len(cfg.WeightSpecs()) {
		t.Fatalf("%d layer groups, %d tensors; want %d and %d", layered, ins.Tensors, len(hfmodel.LayerModules), len(cfg.WeightSpecs()))
	}
	// A config that asks for another layer makes the check name the missing tensors.
	js, err := os.ReadFile(filepath.Join(dir, hfmodel.ConfigFile))
	if err != nil {
		t.Fatal(err)
	}
	js = []byte(strings.Replace(string(js), `"num_hidden_layers": 2`, `"num_hidden_layers": 3`, 1))
	if err := os.WriteFile(filepath.Join(dir, hfmodel.ConfigFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	ins, err = hfmodel.Inspect(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ins.Problems) != len(hfmodel.LayerModules) || !strings.Contains(ins.Problems[0], "model.layers.2.") {
		t.Fatalf("problems %v; want the %d tensors of layer 2 missing", ins.Problems, len(hfmodel.LayerModules))
	}
}
