package train

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sort"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// historyExamples is the number of validation failure examples per stage
// in the engineer's history.
const historyExamples = 4

// ProposeHistory is the history `t2t engineer propose` starts from: the
// history file at path (engineer.ReadHistoryFile) when path is not empty,
// else RunHistory of run runID in the Redis at redisURL, with stages
// planned.
func ProposeHistory(ctx context.Context, path, runID, redisURL string, stages int) (*engineer.History, error) {
	if path != "" {
		return engineer.ReadHistoryFile(path)
	}
	return RunHistory(ctx, redisURL, runID, stages)
}

// RunHistory is History of run runID in the Redis at redisURL, as `t2t
// engineer propose --run` starts from it. Redis that cannot be reached is
// an error wrapping the store's; a run with no finished stage is a
// *fielderr.Error.
func RunHistory(ctx context.Context, redisURL, runID string, stages int) (*engineer.History, error) {
	st, err := store.Open(ctx, store.Options{URL: redisURL, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	h, err := History(ctx, st, runID, stages)
	if err != nil {
		return nil, err
	}
	if len(h.Stages) == 0 {
		return nil, &fielderr.Error{Reason: fmt.Sprintf("run %q has no finished stage in %s", runID, st.URL())}
	}
	return h, nil
}

// History rebuilds the engineer's view of run runID from the store, exactly
// as a run does before each proposal: one StageResult per recorded config
// that has training or validation outcomes, with per-size statistics, a few
// validation failure examples and the rationale that produced the config.
// stages is the run's planned stage count (Budget.TotalStages; 0: unknown).
func History(ctx context.Context, st *store.Store, runID string, stages int) (*engineer.History, error) {
	recs, err := st.Configs(ctx, runID)
	if err != nil {
		return nil, err
	}
	h := &engineer.History{RunID: runID, Budget: engineer.Budget{TotalStages: stages, EpochsPerStage: 1}}
	for _, rec := range recs {
		var cfg env.Config
		if err := json.Unmarshal(rec.JSON, &cfg); err != nil {
			return nil, fmt.Errorf("config of stage %d: %w", rec.Stage, err)
		}
		sr := engineer.StageResult{Stage: rec.Stage, Config: cfg, ConfigVersion: rec.Version, Rationale: rec.Rationale, Epochs: 1}
		for _, split := range []string{store.SplitTrain, store.SplitVal} {
			agg, err := st.Aggregates(ctx, runID, rec.Stage, split)
			if err != nil {
				return nil, err
			}
			if len(agg) == 0 {
				continue
			}
			stats := sizeStats(agg)
			if split == store.SplitTrain {
				sr.Train = stats
				if cfg.HasAgentRange() {
					sr.TrainByAgents = agentStats(agg)
				}
			} else {
				sr.Val = stats
			}
		}
		if len(sr.Train) == 0 && len(sr.Val) == 0 {
			continue // the stage being proposed: no outcomes yet
		}
		exs, err := st.Examples(ctx, runID, rec.Stage, store.SplitVal, historyExamples)
		if err != nil {
			return nil, err
		}
		for _, e := range exs {
			sr.Examples = append(sr.Examples, engineer.Example{InstanceID: e.InstanceID, Size: e.Size, Category: e.Category, Detail: e.Detail, Answer: e.Answer})
		}
		h.Stages = append(h.Stages, sr)
	}
	return h, nil
}

// agentStats folds (size, agents) buckets into per-agent-count statistics,
// sorted by agent count.
func agentStats(agg map[store.Key]store.Counts) []engineer.AgentStats {
	var out []engineer.AgentStats
	for a, c := range store.SumSplit(agg).ByAgents {
		out = append(out, engineer.AgentStats{Agents: a, Episodes: c.Episodes, Valid: c.Valid, Optimal: c.Optimal})
	}
	slices.SortFunc(out, func(x, y engineer.AgentStats) int { return x.Agents - y.Agents })
	return out
}

// sizeStats folds (size, agents) buckets into per-size statistics.
func sizeStats(agg map[store.Key]store.Counts) []engineer.SizeStats {
	per := map[int]store.Counts{}
	for k, c := range agg {
		per[k.Size] = per[k.Size].Add(c)
	}
	names := map[string]env.Category{}
	for c := env.Category(0); c < env.NumCategories; c++ {
		names[c.String()] = c
	}
	var out []engineer.SizeStats
	for size, c := range per {
		s := engineer.SizeStats{Size: size, Episodes: c.Episodes, Valid: c.Valid, Optimal: c.Optimal}
		if c.Episodes > 0 {
			s.MeanReward = c.RewardSum / float64(c.Episodes)
		}
		for name, n := range c.Categories {
			if cat, ok := names[name]; ok {
				s.Categories[cat] += n
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}
