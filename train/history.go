package train

import (
	"context"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
)

// History rebuilds the engineer's view of run runID from the store, exactly
// as a run does before each proposal: one StageResult per recorded config
// that has training or validation outcomes, with per-size statistics, a few
// validation failure examples and the rationale that produced the config.
// stages is the run's planned stage count (Budget.TotalStages; 0: unknown).
func History(ctx context.Context, st *store.Store, runID string, stages int) (*engineer.History, error) {
	r := &run{opt: Options{RunID: runID, Stages: stages}, st: st}
	return r.history(ctx)
}
