package engineer

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// FuzzReadHistory: a --config-history file never panics the reader nor
// what `t2t engineer propose` does with it (the prompt with every module,
// the rules, learnability and random strategies); every proposal is a
// valid config.
func FuzzReadHistory(f *testing.F) {
	add := func(h *History) {
		b, err := json.Marshal(h)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b, uint8(0))
	}
	add(engHandHistory())
	add(&History{})
	rng := rand.New(rand.NewPCG(7, 1))
	for range 3 {
		add(engRandHistory(rng))
	}
	for _, s := range []string{
		`{}`, `null`, `{"stages":[{"stage":0}]}`, `{"run_id":"r","stages":[{"stage":-5,"config":{"sizes":[]}}]}`,
		`{"stages":[{"stage":1,"config":{"sizes":[{"size":3,"data_ratio":1}],"agents":9},"val":[{"size":3,"episodes":-1,"valid":7}]}]}`,
		`{"bogus":1}`, `{"stages":[{"config":{"sizes":[{"size":1e300}]}}]}`,
	} {
		f.Add([]byte(s), uint8(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, before uint8) {
		h, err := ReadHistory(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if before > 0 {
			h.Before(int(before))
		}
		_ = h.NextStage()
		mods, err := ParseModules("F,G,H,S,T")
		if err != nil {
			t.Fatal(err)
		}
		_, _ = BuildPrompt(h, mods, 4096)
		rules, err := NewRules(Options{})
		if err != nil {
			t.Fatal(err)
		}
		learn, err := NewLearnability(Options{})
		if err != nil {
			t.Fatal(err)
		}
		random, err := NewRandom(Options{Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range []Strategy{rules, learn, random} {
			prop, err := s.Propose(context.Background(), h)
			if err != nil {
				continue
			}
			if err := prop.Config.Validate(); err != nil {
				t.Fatalf("%s proposed an invalid config: %v", s.Name(), err)
			}
		}
	})
}
