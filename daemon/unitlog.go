package daemon

import (
	"encoding/json"
	"log/slog"
	"os"
	"slices"
	"sync"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/internal/outfile"
	"github.com/t2t-lab/t2t/train"
)

// Summary is the JSON a process writes to Config.SummaryPath when it
// stops.
type Summary struct {
	ID    string `json:"id"`
	Roles string `json:"roles"`
	Error string `json:"error,omitempty"`
	// Run (coordinator): the run's result, with the actor runtime's report
	// (per-stage units, issues, re-issues, duplicates).
	Run           *train.Result `json:"run,omitempty"`
	UnitsPerStage int           `json:"units_per_stage,omitempty"`
	// Rollout (rollout-only process): the runner's and rollout actors'
	// counters.
	Rollout  *train.RemoteStats    `json:"rollout,omitempty"`
	Rollouts []actors.RolloutStats `json:"rollouts,omitempty"`
	// Flow (coordinator): what became of the groups that reached the
	// learner over the run (per stage: Run.Stages[i].Flow).
	Flow *train.FlowStats `json:"flow,omitempty"`
}

// writeSummary writes s to path (a no-op for "") with the process's id
// and roles.
func writeSummary(path, id string, roles Roles, s Summary) error {
	if path == "" {
		return nil
	}
	s.ID, s.Roles = id, roles.String()
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return outfile.Write(path, nil, append(b, '\n'))
}

// UnitLine is one line of Config.UnitLogPath: a unit this process's
// rollouts ran.
type UnitLine struct {
	Node           string       `json:"node"` // the process's member ID
	Run            string       `json:"run"`
	Unit           string       `json:"unit"`
	Stage          int          `json:"stage"`
	Split          string       `json:"split"`
	PolicyVersion  int64        `json:"policy_version"`
	LearnerVersion int64        `json:"learner_version"`
	Lag            int64        `json:"lag"`
	Millis         int64        `json:"millis"`
	Buckets        []UnitBucket `json:"buckets"`
}

// UnitBucket is a unit's outcome counts for one (size, agents) bucket.
type UnitBucket struct {
	Size       int              `json:"size"`
	Agents     int              `json:"agents"`
	Episodes   int64            `json:"episodes"`
	Valid      int64            `json:"valid"`
	Optimal    int64            `json:"optimal"`
	RewardSum  float64          `json:"reward_sum"`
	Categories map[string]int64 `json:"categories,omitempty"`
}

// unitLineOf is u as the process with member ID id logs it, its buckets
// sorted by size and agents.
func unitLineOf(id string, u train.UnitLog) UnitLine {
	r := u.Result
	l := UnitLine{Node: id, Run: r.RunID, Unit: r.UnitID, Stage: r.Stage, Split: r.Split,
		PolicyVersion: u.PolicyVersion, LearnerVersion: u.LearnerVersion, Lag: u.Lag, Millis: u.Millis}
	for k, c := range r.Buckets {
		l.Buckets = append(l.Buckets, UnitBucket{Size: k.Size, Agents: k.Agents, Episodes: c.Episodes, Valid: c.Valid,
			Optimal: c.Optimal, RewardSum: c.RewardSum, Categories: c.Categories})
	}
	slices.SortFunc(l.Buckets, func(a, b UnitBucket) int {
		if a.Size != b.Size {
			return a.Size - b.Size
		}
		return a.Agents - b.Agents
	})
	return l
}

// openUnitLog opens the unit log at path for appending; the returned func
// appends one line per unit (a no-op for path "") and is safe for
// concurrent use. Errors are *fielderr.Error.
func openUnitLog(path, id string, logger *slog.Logger) (func(train.UnitLog), func(), error) {
	if path == "" {
		return func(train.UnitLog) {}, func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, settingError("UnitLogPath", path, err)
	}
	var mu sync.Mutex
	return func(u train.UnitLog) {
		b, err := json.Marshal(unitLineOf(id, u))
		if err != nil {
			logger.Error("unit log", "error", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.Write(append(b, '\n')); err != nil {
			logger.Error("unit log", "error", err)
		}
	}, func() { f.Close() }, nil
}

// meanLag is the mean policy lag of the units s counts.
func meanLag(s train.RemoteStats) float64 {
	if s.Units == 0 {
		return 0
	}
	return float64(s.PolicyLagSum) / float64(s.Units)
}
