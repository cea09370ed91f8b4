package train

import (
	"context"
	"fmt"
	"testing"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// waitPolicy is a policy that costs nothing: every agent waits where it
// starts. Its episodes are verified and recorded like any other.
type waitPolicy struct{}

func (waitPolicy) Name() string   { return "wait" }
func (waitPolicy) Version() int64 { return 0 }
func (waitPolicy) Update([]learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error) {
	return learner.UpdateStats{}, learner.SignalStats{}, nil
}
func (waitPolicy) Play(ins []*env.Instance, g int, _ float64, _ uint64) (*learner.Rollout, error) {
	ro := &learner.Rollout{}
	for _, in := range ins {
		for range g {
			ep := learner.Episode{Instance: in, Lo: len(ro.Actions)}
			paths := make([][]env.Pos, len(in.Agents))
			for a, ag := range in.Agents {
				paths[a] = []env.Pos{ag.Start}
				ro.Actions = append(ro.Actions, int32(env.Wait))
				ro.LogProbs = append(ro.LogProbs, 0)
			}
			ep.Hi = len(ro.Actions)
			ep.Plan = env.Plan{Paths: paths}
			env.Verify(in, &ep.Plan, &ep.Report)
			ep.Reward = env.AccuracyReward(in, &ep.Report, env.SumOfCosts)
			ro.Episodes = append(ro.Episodes, ep)
		}
	}
	return ro, nil
}

// BenchmarkPipeline compares one training stage through the actor
// pipeline (coordinator, rollouts, learner, engineer, embedded Redis) with
// the same work in a plain Go loop: generate each unit's instances, play
// them with a policy that costs nothing, verify, and record the unit in
// Redis. Compare the ns/op of the two sub-benchmarks in one run; both report
// episodes/s.
func BenchmarkPipeline(b *testing.B) {
	const instances, perUnit, group = 256, 16, 8
	cfg := env.DefaultLocalConfig()
	cfg.Instances = instances
	for _, rollouts := range []int{1, 2} {
		b.Run(fmt.Sprintf("actors/rollouts=%d", rollouts), func(b *testing.B) {
			st := openStoreB(b)
			for i := range b.N {
				opt := Options{RunID: fmt.Sprintf("bench-%d-%d", rollouts, i), Stages: 1, Seed: 1, Config: cfg, InstancesPerUnit: perUnit,
					GroupSize: group, Rollouts: rollouts, ValPerSize: 1, EvalPerSize: 1}
				if _, err := Run(context.Background(), opt, waitPolicy{}, st); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*instances*group)/b.Elapsed().Seconds(), "episodes/s")
		})
	}
	b.Run("plain-loop", func(b *testing.B) {
		st := openStoreB(b)
		ctx := context.Background()
		// The actor run also evaluates the initial and final policy once
		// each on its (tiny) validation and benchmark suites; so does this.
		valSpec, evalSpec := env.ValidationSpec(2026, 1), env.PaperEvalSpec(2026, 1)
		for i := range b.N {
			val, _ := env.GenerateSuite(&valSpec, 0, valSpec.Len())
			ev, _ := env.GenerateSuite(&evalSpec, 0, evalSpec.Len())
			for range 2 {
				waitPolicy{}.Play(val, 1, 0, 0)
				waitPolicy{}.Play(ev, 1, 0, 0)
			}
			for u := 0; u < instances/perUnit; u++ {
				ins, err := env.Generate(cfg, actors.StageSeed(1, 0), u*perUnit, (u+1)*perUnit)
				if err != nil {
					b.Fatal(err)
				}
				ro, _ := waitPolicy{}.Play(ins, group, 1, 0)
				res := AggregateEpisodes(fmt.Sprintf("plain-%d", i), 0, store.SplitTrain, fmt.Sprintf("u%d", u), ro.Episodes, 0, cfg.Hash())
				if _, err := st.RecordUnit(ctx, res); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(b.N*instances*group)/b.Elapsed().Seconds(), "episodes/s")
	})
}
