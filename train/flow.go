package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
)

// The flow of a run: what became of the groups the rollouts sent the
// learner (used, kept although late, discarded and why) and how long
// dispatch waited for the learner (Options.MaxLag). It is shown per stage
// under the progress table, written to Redis for t2t status and the live
// page (P:run:{R}:flow, below), and summed up when the run ends.

// DefaultMaxLag is Options.MaxLag's default: a unit's groups reach an
// update at most 2 policy versions after the version it was issued at.
// Rollouts then run up to 3 learner batches ahead, enough to keep a
// learner busy whose batches take as long as a unit (measured on 2 cores:
// docs/DESIGN-NOTES.md), and half the learner's default bound K = 4 is
// left for units that finish late.
const DefaultMaxLag = 2

// DiscardWarnShare is the share of discarded groups above which a run
// warns, in its flow summary and its last line.
const DiscardWarnShare = 0.05

// FlowStats count what became of the groups that reached the learner, every
// copy counted, and how long queued units waited for the learner while
// rollouts had free slots.
type FlowStats struct {
	Arrived  uint64 `json:"arrived"`
	Used     uint64 `json:"used"`      // passed to an update
	LateKept uint64 `json:"late_kept"` // older than K, kept (within KeepLateK)
	// Discarded by reason: stale (older than KeepLateK), late stage (their
	// unit's stage was over), duplicate (a re-issued unit's second copy).
	DiscardedStale     uint64        `json:"discarded_stale"`
	DiscardedLateStage uint64        `json:"discarded_late_stage"`
	DiscardedDuplicate uint64        `json:"discarded_duplicate"`
	Updates            uint64        `json:"updates"`
	LearnerWait        time.Duration `json:"learner_wait_ns"`
}

// Discarded is the number of groups discarded for any reason.
func (f FlowStats) Discarded() uint64 {
	return f.DiscardedStale + f.DiscardedLateStage + f.DiscardedDuplicate
}

// DiscardShare is Discarded over Arrived (0 when nothing arrived).
func (f FlowStats) DiscardShare() float64 {
	if f.Arrived == 0 {
		return 0
	}
	return float64(f.Discarded()) / float64(f.Arrived)
}

// Warn reports whether the share of discarded groups is over
// DiscardWarnShare.
func (f FlowStats) Warn() bool { return f.DiscardShare() > DiscardWarnShare }

// String is the one-line account: "1536 groups: 1530 used (12 kept late);
// 6 discarded (0.4%: stale 6, late stage 0, duplicate 0); 48 updates;
// dispatch waited 12.3s for the learner".
func (f FlowStats) String() string {
	return fmt.Sprintf("%d groups: %d used (%d kept late); %d discarded (%.1f%%: stale %d, late stage %d, duplicate %d); %d updates; dispatch waited %s for the learner",
		f.Arrived, f.Used, f.LateKept, f.Discarded(), 100*f.DiscardShare(), f.DiscardedStale, f.DiscardedLateStage,
		f.DiscardedDuplicate, f.Updates, f.LearnerWait.Round(100*time.Millisecond))
}

func (f FlowStats) sub(g FlowStats) FlowStats {
	return FlowStats{Arrived: f.Arrived - g.Arrived, Used: f.Used - g.Used, LateKept: f.LateKept - g.LateKept,
		DiscardedStale: f.DiscardedStale - g.DiscardedStale, DiscardedLateStage: f.DiscardedLateStage - g.DiscardedLateStage,
		DiscardedDuplicate: f.DiscardedDuplicate - g.DiscardedDuplicate, Updates: f.Updates - g.Updates,
		LearnerWait: f.LearnerWait - g.LearnerWait}
}

// FlowOf reads the flow counters of an actor system's report (cumulative
// over the run).
func FlowOf(rep actors.RunReport) FlowStats {
	l := rep.Learner
	return FlowStats{Arrived: l.Arrived(), Used: l.Used, LateKept: l.LateKept, DiscardedStale: l.DiscardedStale,
		DiscardedLateStage: l.DiscardedLateStage, DiscardedDuplicate: l.DiscardedDuplicate, Updates: l.Updates,
		LearnerWait: rep.Coordinator.LearnerWait}
}

// Flow is the run's flow over all its stages.
func (r *Result) Flow() FlowStats { return FlowOf(r.Actors) }

// StageFlow is one stage's flow: the groups that reached the learner
// between the end of the stage before and the end of this one.
type StageFlow struct {
	Stage int `json:"stage"`
	FlowStats
}

// FlowRecord is a run's flow as t2t status and the live page show it
// (Redis key P:run:{R}:flow, JSON; field names are part of the format:
// only append).
type FlowRecord struct {
	RunID  string      `json:"run_id"`
	Stages []StageFlow `json:"stages"`
	// Total is over the whole run so far, the running stage included.
	Total FlowStats `json:"total"`
	// The bounds the run was started with (Options).
	MaxLag        int64 `json:"max_lag"`
	StalenessK    int64 `json:"staleness_k"`
	KeepLateK     int64 `json:"keep_late_k"`
	KeepStale     bool  `json:"keep_stale,omitempty"`
	UpdatedUnixMs int64 `json:"updated_unix_ms"`
}

// flowTracker turns the actor system's cumulative counters into per-stage
// flows and publishes the record (Options.OnFlow, Redis).
type flowTracker struct {
	mu   sync.Mutex
	sys  *actors.System
	mark FlowStats // cumulative at the end of the last finished stage
	rec  FlowRecord
	ps   *PolicyStore // nil: the record is not written to Redis
	warn func(err error)
	on   func(FlowRecord)
}

func (f *flowTracker) attach(sys *actors.System) {
	f.mu.Lock()
	f.sys = sys
	f.mu.Unlock()
}

func (f *flowTracker) current() FlowStats {
	if f.sys == nil {
		return f.mark
	}
	return FlowOf(f.sys.Stats())
}

// stageDone closes stage's flow and returns it.
func (f *flowTracker) stageDone(stage int) FlowStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur := f.current()
	d := cur.sub(f.mark)
	f.mark = cur
	f.rec.Stages = append(f.rec.Stages, StageFlow{Stage: stage, FlowStats: d})
	return d
}

// record returns the flow record as of now.
func (f *flowTracker) record() FlowRecord {
	f.mu.Lock()
	defer f.mu.Unlock()
	rec := f.rec
	rec.Stages = append([]StageFlow(nil), f.rec.Stages...)
	rec.Total = f.current()
	rec.UpdatedUnixMs = time.Now().UnixMilli()
	return rec
}

// publish shows the record to Options.OnFlow and writes it to Redis. The
// run's state writer calls it (state.go), so it never holds up an actor.
func (f *flowTracker) publish(ctx context.Context) {
	rec := f.record()
	if f.on != nil {
		f.on(rec)
	}
	if f.ps != nil {
		if err := f.ps.PutFlow(ctx, rec); err != nil && f.warn != nil {
			f.warn(err)
		}
	}
}

// flowStore returns where the run writes its flow record: the cluster's
// policy store, else a connection of its own to the store's Redis when
// its URL carries no password (the embedded Redis, a local one); nil
// otherwise. The returned func closes what was opened here.
func flowStore(ctx context.Context, opt Options, storeURL string) (*PolicyStore, func()) {
	if opt.Cluster.Policies != nil {
		return opt.Cluster.Policies, func() {}
	}
	u, err := url.Parse(storeURL)
	if err != nil || u.User != nil {
		return nil, func() {} // a redacted password: the URL does not connect
	}
	ps, err := OpenPolicyStore(ctx, storeURL, "")
	if err != nil {
		opt.Logger.Warn("train: flow record not written to Redis", "error", err)
		return nil, func() {}
	}
	return ps, func() { ps.Close() }
}

// PutFlow writes the run's flow record (last writer wins).
func (p *PolicyStore) PutFlow(ctx context.Context, rec FlowRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := p.st.PutFlow(ctx, rec.RunID, b); err != nil {
		return fmt.Errorf("train: put flow of run %s: %w", rec.RunID, err)
	}
	return nil
}

// Flow reads the run's flow record; ok is false when the run wrote none.
func (p *PolicyStore) Flow(ctx context.Context, runID string) (rec FlowRecord, ok bool, err error) {
	b, err := p.st.Flow(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return FlowRecord{}, false, nil
	}
	if err != nil {
		return FlowRecord{}, false, fmt.Errorf("train: flow of run %s: %w", runID, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return FlowRecord{}, false, fmt.Errorf("train: flow of run %s: %w", runID, err)
	}
	return rec, true, nil
}

// printFlow writes a stage's flow line under its learner line.
func printFlow(w io.Writer, f *FlowStats) {
	if f.Arrived == 0 && f.LearnerWait == 0 {
		return
	}
	fmt.Fprintf(w, "      flow: %s\n", f)
}

// printFlowTotal writes the run's flow, with a warning when it discarded
// more than DiscardWarnShare of the groups.
func printFlowTotal(w io.Writer, f FlowStats) {
	fmt.Fprintf(w, "flow: %s\n", f)
	if f.Warn() {
		fmt.Fprintf(w, "WARNING: %s\n", DiscardWarning(f))
	}
}

// DoneLine is the last line of `t2t train`'s output: run runID done in
// elapsed (rounded to the second), its Redis and its flow f, and
// DiscardWarning when f warns.
func DoneLine(runID string, elapsed time.Duration, redisURL string, f FlowStats) string {
	line := fmt.Sprintf("run %s done in %s; Redis %s; %s", runID, elapsed.Round(time.Second), redisURL, f)
	if f.Warn() {
		line += "; WARNING: " + DiscardWarning(f)
	}
	return line
}

// DiscardWarning says that a run discarded more than DiscardWarnShare of
// its groups (for the last line of a run's output).
func DiscardWarning(f FlowStats) string {
	return fmt.Sprintf("%.1f%% of the groups were discarded (more than %.0f%%: stale %d, late stage %d, duplicate %d): rollout work was wasted; see t2t status and docs/CLUSTER.md",
		100*f.DiscardShare(), 100*DiscardWarnShare, f.DiscardedStale, f.DiscardedLateStage, f.DiscardedDuplicate)
}
