package store

import "context"

// The splits a run records its outcomes under. Training units record
// SplitTrain, the per-stage validation set SplitVal, and a benchmark suite
// named s records EvalSplit(s); the run's benchmark suite is SplitEvalPaper.
const (
	SplitTrain      = "train"
	SplitVal        = "val"
	SplitEvalPrefix = "eval:"
	SplitEvalPaper  = SplitEvalPrefix + "paper"
)

// EvalSplit is the split a benchmark suite's outcomes are recorded under.
func EvalSplit(suite string) string { return SplitEvalPrefix + suite }

// Rates are the valid and optimal shares of some episodes: how a split
// did. The run's stage table, `t2t status`, the live page, experiment
// reports and the engineer's history all read this one view of Counts.
type Rates struct {
	Episodes int64   `json:"episodes"`
	Valid    float64 `json:"valid"`
	Optimal  float64 `json:"optimal"`
}

// Rates returns c's valid and optimal shares (zero Rates for no episodes).
func (c Counts) Rates() Rates {
	if c.Episodes == 0 {
		return Rates{}
	}
	n := float64(c.Episodes)
	return Rates{Episodes: c.Episodes, Valid: float64(c.Valid) / n, Optimal: float64(c.Optimal) / n}
}

// SplitCounts sums a split's aggregates: over every bucket (All) and per
// agent count (ByAgents; nil when the split has no outcomes).
type SplitCounts struct {
	All      Counts
	ByAgents map[int]Counts
}

// SumSplit sums agg (as Aggregates returns it) overall and per agent count.
func SumSplit(agg map[Key]Counts) SplitCounts {
	var s SplitCounts
	for k, v := range agg {
		s.All = s.All.Add(v)
		if s.ByAgents == nil {
			s.ByAgents = map[int]Counts{}
		}
		s.ByAgents[k.Agents] = s.ByAgents[k.Agents].Add(v)
	}
	return s
}

// StageView is how one stage of a run did, as the store has it: the
// training units applied and the rates of the training episodes, the
// validation set and, per agent count, the benchmark suite.
type StageView struct {
	Stage int   `json:"stage"`
	Units int64 `json:"units"` // training units applied
	Train Rates `json:"train"`
	Val   Rates `json:"val"`
	// Eval is the SplitEvalPaper suite's rates by agent count (nil when
	// the stage has no benchmark outcomes).
	Eval map[int]Rates `json:"eval_paper,omitempty"`
}

// StageView reads how stage of run runID did.
func (s *Store) StageView(ctx context.Context, runID string, stage int) (StageView, error) {
	v := StageView{Stage: stage}
	var err error
	if v.Units, err = s.UnitsApplied(ctx, runID, stage, SplitTrain); err != nil {
		return StageView{}, err
	}
	for _, split := range []string{SplitTrain, SplitVal, SplitEvalPaper} {
		agg, err := s.Aggregates(ctx, runID, stage, split)
		if err != nil {
			return StageView{}, err
		}
		sum := SumSplit(agg)
		switch split {
		case SplitTrain:
			v.Train = sum.All.Rates()
		case SplitVal:
			v.Val = sum.All.Rates()
		default:
			for a, c := range sum.ByAgents {
				if v.Eval == nil {
					v.Eval = map[int]Rates{}
				}
				v.Eval[a] = c.Rates()
			}
		}
	}
	return v, nil
}
