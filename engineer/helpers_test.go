package engineer

import (
	"flag"
	"math/rand/v2"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

var engSeed = flag.Uint64("engseed", 0, "seed for the engineer's randomised tests (0: a fixed default)")

// engTestRNG returns a generator seeded from -engseed (or def) and logs the
// seed.
func engTestRNG(t testing.TB, def uint64) (*rand.Rand, uint64) {
	t.Helper()
	seed := def
	if *engSeed != 0 {
		seed = *engSeed
	}
	t.Logf("seed %d (replay with -engseed=%d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0xe17)), seed
}

// engStat builds one size's stats from rates.
func engStat(size int, n int64, valid, optimal float64, cats ...int64) SizeStats {
	s := SizeStats{Size: size, Episodes: n, Valid: int64(valid * float64(n)), Optimal: int64(optimal * float64(n)), MeanReward: 0.8*optimal + 0.1*valid}
	copy(s.Categories[:], cats)
	return s
}

// engHandHistory is a fixed three-stage history used by the golden prompt
// and by the strategy tests.
func engHandHistory() *History {
	round0 := env.DefaultConfig()
	for i := range round0.Sizes {
		round0.Sizes[i].HoleRatio = 0.1 + 0.05*float64(i)
		round0.Sizes[i].WaitRatio = 0.6 - 0.05*float64(i)
	}
	c1 := env.DefaultConfig()
	c1.Sizes[0].DataRatio, c1.Sizes[7].DataRatio = 0.05, 0.2
	c2 := c1.Clone()
	c2.Sizes[2].HoleRatio = 0.3
	stats := func(shift float64) (train, val []SizeStats) {
		for s := 3; s <= 10; s++ {
			p := min(max(1.05-0.13*float64(s-3)+shift, 0), 1)
			val = append(val, engStat(s, 100, p, p*0.6, int64(30*(1-p)), int64(5*(1-p)), int64(40*(1-p)), int64(10*(1-p)), 2, int64(20*(1-p)), 0, 1))
			train = append(train, engStat(s, 500, min(p+0.05, 1), p*0.5, int64(100*(1-p)), 3, int64(150*(1-p)), int64(60*(1-p)), 4, int64(80*(1-p)), 1, 0))
		}
		return train, val
	}
	t0, v0 := stats(-0.2)
	t1, v1 := stats(-0.1)
	t2, v2 := stats(0)
	return &History{
		RunID:  "run-golden",
		Budget: Budget{TotalStages: 5, EpochsPerStage: 2},
		Stages: []StageResult{
			{Stage: 0, Config: round0, Train: t0, Val: v0, Epochs: 2, Updates: 16, PolicyVersion: 16},
			{Stage: 1, Config: c1, ConfigVersion: "c1-version", Train: t1, Val: v1, Epochs: 2, Updates: 16, PolicyVersion: 32,
				Rationale: "Shift data toward large maps; the small ones are solved."},
			{Stage: 2, Config: c2, Train: t2, Val: v2, Epochs: 2, Updates: 16, PolicyVersion: 48,
				Rationale: "Raise holes at size 5 where the policy is strong.\nKeep the rest.",
				Examples: []Example{
					{InstanceID: "inst-8a", Size: 8, Category: "conflict", Detail: "agents 0 and 1 both at (3,4) at t=5", Answer: "Agent 0: RIGHT RIGHT DOWN\nAgent 1: LEFT LEFT UP"},
					{InstanceID: "inst-9b", Size: 9, Category: "conflict", Detail: "swap between (2,2) and (2,3) at t=3", Answer: "Agent 0: DOWN\nAgent 1: UP"},
					{InstanceID: "inst-10c", Size: 10, Category: "parse", Detail: "line 3: unknown move \"NORTH\"", Answer: "Agent 0: NORTH NORTH"},
					{InstanceID: "inst-7d", Size: 7, Category: "hole", Detail: "agent 1 enters hole (4,4) at t=6", Answer: "Agent 0: RIGHT\nAgent 1: DOWN DOWN"},
					{InstanceID: "inst-6e", Size: 6, Category: "goal", Detail: "agent 0 ends at (1,1), goal (5,5)", Answer: "Agent 0: RIGHT"},
				}},
		},
	}
}

// engRandHistory builds a random but well-formed history of 0..4 stages
// over the given config shape.
func engRandHistory(rng *rand.Rand) *History {
	h := &History{RunID: "run-rand", Budget: Budget{TotalStages: 1 + rng.IntN(6), EpochsPerStage: 1 + rng.IntN(3)}}
	n := rng.IntN(5)
	r, _ := NewRandom(Options{Seed: rng.Uint64()})
	cfg := env.DefaultConfig()
	if rng.IntN(3) == 0 {
		cfg.Agents = 1 + rng.IntN(5) // sizes below the agents get no data
	}
	for st := range n {
		cfg = r.Draw(rng, cfg)
		sr := StageResult{Stage: st, Config: cfg, Epochs: 2, Updates: 8, PolicyVersion: int64(8 * (st + 1))}
		for _, sc := range cfg.Sizes {
			for _, list := range []*[]SizeStats{&sr.Train, &sr.Val} {
				if rng.IntN(8) == 0 {
					continue // a size without stats
				}
				var ep int64
				if rng.IntN(4) > 0 {
					ep = rng.Int64N(400)
				}
				s := SizeStats{Size: sc.Size, Episodes: ep}
				if ep > 0 {
					s.Valid = rng.Int64N(ep + 1)
					s.Optimal = rng.Int64N(s.Valid + 1)
					for c := range s.Categories {
						s.Categories[c] = rng.Int64N(ep - s.Valid + 1)
					}
					s.MeanReward = rng.Float64()
				}
				*list = append(*list, s)
			}
		}
		for range rng.IntN(6) {
			sr.Examples = append(sr.Examples, Example{InstanceID: "x", Size: 3 + rng.IntN(8), Category: env.Category(rng.IntN(int(env.NumCategories))).String(), Detail: "d", Answer: "a"})
		}
		h.Stages = append(h.Stages, sr)
	}
	return h
}

// engRandFrom is a generator for building equal histories twice.
func engRandFrom(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 1)) }
