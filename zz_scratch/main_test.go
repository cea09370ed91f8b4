package p

import (
	"testing"
	"time"
	"math/rand/v2"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/qwen3"
)

func TestSpeed(t *testing.T) {
	be, err := learner.NewBackend("cpu")
	if err != nil { t.Fatal(err) }
	cfg, _ := qwen3.Preset("tiny")
	cfg.VocabSize = 1024
	m, err := qwen3.NewRandom(be, cfg, 1)
	if err != nil { t.Fatal(err) }
	rng := rand.New(rand.NewPCG(1,2))
	for _, b := range []int{8} {
		for _, plen := range []int{700} {
			for _, nt := range []int{1, 2, 24} {
			ps := make([][]int32, b)
			for i := range ps { ps[i] = make([]int32, plen); for j := range ps[i] { ps[i][j] = int32(rng.IntN(1000)) } }
			for rep := 0; rep < 2; rep++ {
				t0 := time.Now()
				g, err := m.Generate(ps, qwen3.SampleConfig{MaxNewTokens: nt, Temperature: 1}, rng)
				if err != nil { t.Fatal(err) }
				t.Logf("b=%d p=%d nt=%d: %v (%d tokens)", b, plen, nt, time.Since(t0), len(g.Tokens[0]))
			}
			}
		}
	}
}
