package evaluate

import (
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// RowsFirst is the blind baseline as a Player (t2t eval --policy rows-first): every agent goes
// to its goal's row, then to its goal's column (env.ManhattanPlan), blind to the holes and to
// the other agents. It is what a model that reads only the coordinates reaches, so its failure
// categories are the ones to set a model's beside: a model that reads the map fails fewer hole
// checks than it, one that plans around the other agents fewer conflict checks. Deterministic;
// temperature and seed are ignored.
type RowsFirst struct{}

// Name implements Player.
func (RowsFirst) Name() string { return "rows-first" }

// Play implements Player: groupSize copies of each instance's rows-first plan, verified and
// rewarded as any policy's answer.
func (RowsFirst) Play(ins []*env.Instance, groupSize int, _ float64, _ uint64) (*learner.Rollout, error) {
	ro := &learner.Rollout{Episodes: make([]learner.Episode, 0, len(ins)*groupSize)}
	for _, in := range ins {
		plan := env.ManhattanPlan(in)
		for range groupSize {
			ep := learner.Episode{Instance: in, Plan: env.Plan{Paths: plan.Paths}}
			env.Verify(in, &ep.Plan, &ep.Report)
			ep.Report.Failures = append([]env.Failure(nil), ep.Report.Failures...)
			ep.Reward = env.AccuracyReward(in, &ep.Report, env.SumOfCosts)
			ro.Episodes = append(ro.Episodes, ep)
		}
	}
	return ro, nil
}
