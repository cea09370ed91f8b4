package gridnet_test

import (
	"math/rand/v2"
	"testing"

	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/learner/gridnet/gomlxnet"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/testseed"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
)

func gridrollInstances(t *testing.T, seed uint64, n, agents int, sizes ...int) []*env.Instance {
	t.Helper()
	cfg := env.Config{Agents: agents, Instances: n}
	for _, s := range sizes {
		cfg.Sizes = append(cfg.Sizes, env.SizeConfig{Size: s, DataRatio: 1 / float64(len(sizes)), HoleRatio: 0.2, WaitRatio: 0.3})
	}
	ins, err := env.Generate(cfg, seed, 0, n)
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

func gridrollNet(t *testing.T, seed uint64) *gomlxnet.Net {
	t.Helper()
	be, err := gomlxtrain.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	g, err := gomlxnet.New(be, gridnet.Config{ObsSize: env.ObsSize(env.ObsRadius), Hidden: []int{64, 64}, Seed: seed}, learner.DefaultGRPOConfig())
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// TestPlayGridNetReplayMatches plays groups, then rebuilds the batch from
// action ids alone by replaying: observations, masks, actions, log-probs and
// advantages must equal the batch built from the rollout directly, and each
// episode's plan must verify as the rollout reported.
func TestPlayGridNetReplayMatches(t *testing.T) {
	seed := testseed.Get(t, 3)
	ins := gridrollInstances(t, seed, 6, 2, 3, 4, 5)
	g := gridrollNet(t, seed)
	cfg := gridnet.DefaultRolloutConfig()
	cfg.GroupSize = 4
	ro, err := gridnet.Play(g, ins, cfg, rand.New(rand.NewPCG(seed, 1)))
	if err != nil {
		t.Fatal(err)
	}
	if len(ro.Episodes) != len(ins)*cfg.GroupSize {
		t.Fatalf("%d episodes, want %d", len(ro.Episodes), len(ins)*cfg.GroupSize)
	}
	direct, _ := gridnet.BatchFromRollouts([]*learner.Rollout{ro}, cfg.GroupSize, true)
	var groups []learner.ReplayedGroup
	for i := range ins {
		rg := learner.ReplayedGroup{Instance: ins[i]}
		for e := i * cfg.GroupSize; e < (i+1)*cfg.GroupSize; e++ {
			ep := ro.Episodes[e]
			rg.Actions = append(rg.Actions, ro.Actions[ep.Lo:ep.Hi])
			rg.LogProbs = append(rg.LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
			rg.Rewards = append(rg.Rewards, float32(ep.Reward))
			var rep env.Report
			env.Verify(ep.Instance, &ep.Plan, &rep)
			if rep.Valid != ep.Report.Valid || float64(float32(env.AccuracyReward(ep.Instance, &rep, env.SumOfCosts))) != float64(float32(ep.Reward)) {
				t.Fatalf("episode %d: re-verification disagrees", e)
			}
			if want := (ep.Hi - ep.Lo) / len(ins[i].Agents); len(ep.Plan.Paths[0])-1 != want {
				t.Fatalf("episode %d: plan of %d steps for %d joint decisions", e, len(ep.Plan.Paths[0])-1, want)
			}
		}
		groups = append(groups, rg)
	}
	replayed, _, err := gridnet.BatchFromGroups(groups, cfg, true)
	if err != nil {
		t.Fatal(err)
	}
	if replayed.N != direct.N || len(replayed.Obs) != len(direct.Obs) || len(replayed.Legal) != len(direct.Legal) {
		t.Fatalf("replayed batch N=%d obs=%d legal=%d, direct N=%d obs=%d legal=%d", replayed.N, len(replayed.Obs), len(replayed.Legal), direct.N, len(direct.Obs), len(direct.Legal))
	}
	for i := range direct.Obs {
		if direct.Obs[i] != replayed.Obs[i] {
			t.Fatalf("observation value %d differs after replay", i)
		}
	}
	for i := range direct.Actions {
		if direct.Actions[i] != replayed.Actions[i] || direct.LogProbs[i] != replayed.LogProbs[i] || direct.Advantages[i] != replayed.Advantages[i] {
			t.Fatalf("decision %d differs after replay", i)
		}
	}
	for i := range direct.Legal {
		if direct.Legal[i] != replayed.Legal[i] {
			t.Fatalf("legal flag %d differs after replay", i)
		}
	}
	if _, err := g.Update(direct); err != nil {
		t.Fatal(err)
	}
}

func TestReplayRejectsBadActions(t *testing.T) {
	ins := gridrollInstances(t, 1, 1, 2, 4)
	cfg := gridnet.DefaultRolloutConfig()
	if _, _, err := gridnet.ReplayEpisode(ins[0], cfg, []int32{0}, nil, nil); err == nil {
		t.Fatal("odd action count for 2 agents accepted")
	}
	if _, _, err := gridnet.ReplayEpisode(ins[0], cfg, []int32{0, 9}, nil, nil); err == nil {
		t.Fatal("action id 9 accepted")
	}
}
