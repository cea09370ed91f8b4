package train

import (
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// maxExamplesPerUnit bounds the failure examples a unit sends to Redis.
const maxExamplesPerUnit = 2

// AggregateEpisodes is the record of one work unit: eps counted per (size, agents) bucket with
// their failure categories and a few failed examples, under the unit's ids and versions.
func AggregateEpisodes(runID string, stage int, split, unitID string, eps []learner.Episode, policyVersion int64, configVersion string) store.UnitResult {
	r := store.UnitResult{
		RunID: runID, Stage: stage, Split: split, UnitID: unitID,
		Buckets: map[store.Key]store.Counts{}, PolicyVersion: policyVersion, ConfigVersion: configVersion,
	}
	for i := range eps {
		ep := &eps[i]
		in := ep.Instance
		key := store.Key{Size: in.Width, Agents: len(in.Agents)}
		c := r.Buckets[key]
		c.Episodes++
		c.RewardSum += ep.Reward
		if ep.Report.Valid {
			c.Valid++
			if ep.Report.Optimal {
				c.Optimal++
			}
		} else {
			cats := ep.Report.Categories()
			for cat, n := range cats {
				if n == 0 {
					continue
				}
				if c.Categories == nil {
					c.Categories = map[string]int64{}
				}
				c.Categories[env.Category(cat).String()]++
			}
			if len(r.Examples) < maxExamplesPerUnit && len(ep.Report.Failures) > 0 {
				f := ep.Report.Failures[0]
				answer := ""
				if moves, err := env.PlanMoves(&ep.Plan); err == nil {
					answer = env.FormatMoves(moves)
				}
				r.Examples = append(r.Examples, store.Example{
					InstanceID: in.ID, Size: in.Width, Agents: len(in.Agents),
					Category: env.CategoryOf(f.Check).String(), Detail: f.String(), Answer: answer,
				})
			}
		}
		r.Buckets[key] = c
	}
	return r
}

// mergeResult adds src's counts (a later chunk of the same unit) to dst,
// keeping at most maxExamplesPerUnit examples.
func mergeResult(dst *store.UnitResult, src store.UnitResult) {
	for k, c := range src.Buckets {
		dst.Buckets[k] = dst.Buckets[k].Add(c)
	}
	for _, e := range src.Examples {
		if len(dst.Examples) < maxExamplesPerUnit {
			dst.Examples = append(dst.Examples, e)
		}
	}
}
