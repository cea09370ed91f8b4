package train

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/learner"
)

// Phases of a run, as recorded in store.RunState.Phase (t2t status shows
// them).
const (
	// PhaseStarting: the actor system is starting, no stage has begun.
	PhaseStarting = "starting"
	// PhaseTraining: the stage's work units are out; rollouts play them
	// and the learner updates the policy.
	PhaseTraining = "training"
	// PhaseEvaluating: the stage's units are done; the policy is being
	// evaluated and checkpointed and the engineer proposes the next config.
	PhaseEvaluating = "evaluating"
	// PhaseDone: every stage finished.
	PhaseDone = "done"
	// PhaseInterrupted: the run's context ended before the last stage.
	PhaseInterrupted = "interrupted"
	// PhaseFailed: the run stopped on an error.
	PhaseFailed = "failed"
)

// stateWriteTimeout bounds one RunState write (retries included).
const stateWriteTimeout = 30 * time.Second

// stateTracker records the run's state in Redis (store.RunState) at every
// phase change and policy update, and shows each state to Options.OnState.
// It wraps the run as the actor system's Runner, Updater and Proposer and
// wraps SystemConfig.StageHeaders (called when a stage's units are built).
// Writes go through one goroutine that always writes the newest state, so
// neither the coordinator nor the learner waits for Redis here, and states
// reach Redis in order.
type stateTracker struct {
	r       *run
	runCtx  context.Context // the run's context
	ctx     context.Context // the run's context without its cancellation
	headers func(runID string, stage int) map[string]string

	showMu  sync.Mutex // orders the OnState calls
	mu      sync.Mutex
	cur     store.RunState
	pending bool
	stopped bool

	kick chan struct{}
	quit chan struct{}
	done chan struct{}
}

// The tracker is what the actor system calls: it must close stages too.
var _ interface {
	actors.Runner
	actors.Updater
	actors.Proposer
	actors.StageCloser
} = (*stateTracker)(nil)

// track starts recording the run's state and wraps sc.StageHeaders; the
// returned tracker is the Runner, Updater, Proposer and StageCloser to give
// the actor system. Call stop when the run ends.
func (r *run) track(ctx context.Context, sc *actors.SystemConfig) *stateTracker {
	t := &stateTracker{r: r, runCtx: ctx, ctx: context.WithoutCancel(ctx), headers: sc.StageHeaders,
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	sc.StageHeaders, sc.EvalHeaders = t.stageHeaders, t.evalHeaders
	t.cur = store.RunState{RunID: r.opt.RunID, Stage: sc.FirstStage, Phase: PhaseStarting, PolicyVersion: max(r.pol.Version(), 0), ConfigVersion: sc.InitialConfigVersion}
	t.pending = true
	t.show(t.cur)
	go t.write()
	t.kick <- struct{}{}
	return t
}

// set applies f to the current state, schedules its write and shows it
// to Options.OnState (in the order of the set calls).
func (t *stateTracker) set(f func(*store.RunState)) {
	t.showMu.Lock()
	defer t.showMu.Unlock()
	t.mu.Lock()
	if t.stopped {
		t.mu.Unlock()
		return
	}
	f(&t.cur)
	t.cur.UpdatedUnixMs = 0
	t.pending = true
	s := t.cur
	t.mu.Unlock()
	select {
	case t.kick <- struct{}{}:
	default: // a write is already scheduled; it takes the newest state
	}
	t.show(s)
}

func (t *stateTracker) show(s store.RunState) {
	if t.r.opt.OnState != nil {
		t.r.opt.OnState(s)
	}
}

// write is the writer goroutine.
func (t *stateTracker) write() {
	defer close(t.done)
	for {
		select {
		case <-t.kick:
			t.flush()
		case <-t.quit:
			t.flush()
			return
		}
	}
}

func (t *stateTracker) flush() {
	t.mu.Lock()
	if !t.pending {
		t.mu.Unlock()
		return
	}
	s := t.cur
	t.pending = false
	t.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.ctx, stateWriteTimeout)
	defer cancel()
	if err := t.r.st.PutRunState(ctx, s); err != nil {
		t.r.opt.Logger.Warn("train: run state not recorded", "stage", s.Stage, "phase", s.Phase, "error", err)
	}
	t.r.flow.publish(ctx)
	t.r.nodes.publish(ctx)
}

// stop records the final state (done, interrupted or failed) and waits
// until it is written.
func (t *stateTracker) stop() {
	t.r.mu.Lock()
	finished := t.r.res.FirstStage + len(t.r.res.Stages) // a resumed run starts after stage FirstStage-1
	t.r.mu.Unlock()
	phase := PhaseFailed
	switch {
	case finished == t.r.opt.Stages:
		phase = PhaseDone
	case t.runCtx.Err() != nil && !errors.Is(context.Cause(t.runCtx), ErrDeterminism):
		phase = PhaseInterrupted
	}
	t.set(func(s *store.RunState) {
		s.Phase = phase
		s.PolicyVersion = max(t.r.pol.Version(), 0)
		if phase == PhaseDone {
			s.Stage = t.r.opt.Stages - 1
		}
	})
	t.mu.Lock()
	t.stopped = true
	t.mu.Unlock()
	close(t.quit)
	<-t.done
}

// stageHeaders implements actors.SystemConfig.StageHeaders: the stage's
// units are being built, so the stage is training.
func (t *stateTracker) stageHeaders(runID string, stage int) map[string]string {
	t.r.mu.Lock()
	cfg, ok := t.r.configs[stage]
	t.r.mu.Unlock()
	t.set(func(s *store.RunState) {
		s.Stage, s.Phase, s.PolicyVersion = stage, PhaseTraining, max(t.r.pol.Version(), 0)
		if ok {
			s.ConfigVersion = cfg.Hash()
		}
	})
	if t.headers == nil {
		return nil
	}
	return t.headers(runID, stage)
}

// evalHeaders implements actors.SystemConfig.EvalHeaders: the stage's
// training is done and its evaluation units are being built, so the stage
// is being evaluated. They run under the stage's trace.
func (t *stateTracker) evalHeaders(runID string, stage int) map[string]string {
	t.evaluating(stage)
	if t.headers == nil {
		return nil
	}
	return t.headers(runID, stage)
}

// RunUnit implements actors.Runner.
func (t *stateTracker) RunUnit(ctx context.Context, u actors.WorkUnit) (actors.UnitDone, error) {
	return t.r.units.RunUnit(ctx, u)
}

// Update implements actors.Updater and records the new policy version.
func (t *stateTracker) Update(ctx context.Context, groups []actors.Group) (int64, error) {
	v, err := t.r.Update(ctx, groups)
	if err == nil {
		t.set(func(s *store.RunState) { s.PolicyVersion = max(v, 0) })
	}
	return v, err
}

// CloseStage implements actors.StageCloser: stage's units are done and it
// is being evaluated.
func (t *stateTracker) CloseStage(ctx context.Context, runID string, stage int) error {
	t.evaluating(stage)
	return t.r.CloseStage(ctx, runID, stage)
}

// Propose implements actors.Proposer: the engineer designs stage.
func (t *stateTracker) Propose(ctx context.Context, runID string, stage int) (string, []byte, error) {
	return t.r.Propose(ctx, runID, stage)
}

// evaluating records that stage's units are done and it is being evaluated.
func (t *stateTracker) evaluating(stage int) {
	t.set(func(s *store.RunState) { s.Stage, s.Phase = stage, PhaseEvaluating })
}

// putCheckpoint indexes the checkpoint saved in dir, with the SHA-256 of
// its manifest (which lists the SHA-256 of every file of the checkpoint).
func (r *run) putCheckpoint(ctx context.Context, dir string, rec store.CheckpointRecord) error {
	sum, err := fsutil.FileSHA256(filepath.Join(dir, learner.CheckpointManifestFile))
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w", dir, err)
	}
	rec.SHA256 = sum
	return r.st.PutCheckpoint(ctx, r.opt.RunID, rec)
}
