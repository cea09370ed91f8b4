package train

import (
	"context"
	"errors"
	"fmt"
	"sync"
)

// ErrDeterminism marks a deterministic run that could not keep its
// guarantee: an update failed (its batch is lost), or the policy moved past
// the version the groups so far make.
var ErrDeterminism = errors.New("train: deterministic run broken")

// detGate makes a deterministic run's sampling independent of timing. The
// run has one rollout that runs one unit at a time, so units run in order
// and the learner receives their groups in that order; it updates once per
// LearnerBatch groups. Before a unit plays, the gate waits until the policy
// version is base + floor(groups of earlier units / LearnerBatch): every
// update those groups make has been applied, and none other can be. Every
// unit then samples the same weights on every run with the same seed.
//
// The runner counts a unit's groups when it hands them to the rollout
// (once per unit id, like the learner); the updater reports each update
// (updated) or failure (failed).
type detGate struct {
	run   context.Context // the run's context: waits end with it
	pol   Policy
	batch int64
	base  int64 // policy version when this process's run started
	fail  func(error)

	mu      sync.Mutex
	counted map[string]struct{}
	groups  int64
	changed chan struct{} // closed and replaced when the version moves or the gate fails
	err     error
}

// newDetGate returns the gate of the run of ctx, whose policy is at its
// base version now. fail is called once when the gate fails (it ends the
// run).
func newDetGate(ctx context.Context, pol Policy, batch int, fail func(error)) *detGate {
	return &detGate{run: ctx, pol: pol, batch: int64(batch), base: pol.Version(), fail: fail,
		counted: map[string]struct{}{}, changed: make(chan struct{})}
}

// sent counts the groups of a unit handed to the learner.
func (g *detGate) sent(unitID string, groups int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, dup := g.counted[unitID]; dup {
		return
	}
	g.counted[unitID] = struct{}{}
	g.groups += int64(groups)
}

// updated wakes the waiters after an update.
func (g *detGate) updated() {
	g.mu.Lock()
	defer g.mu.Unlock()
	close(g.changed)
	g.changed = make(chan struct{})
}

// failed breaks the gate: waiters return err, and the run ends.
func (g *detGate) failed(err error) {
	g.mu.Lock()
	first := g.err == nil
	if first {
		g.err = fmt.Errorf("%w: %w", ErrDeterminism, err)
		close(g.changed)
		g.changed = make(chan struct{})
	}
	err = g.err
	g.mu.Unlock()
	if first && g.fail != nil {
		g.fail(err)
	}
}

// wait blocks until the policy version is the one the groups counted so
// far make, and returns it. At a stage's end (stageEnd) no group may be
// left waiting for a batch: it would be lost with the stage's checkpoint.
func (g *detGate) wait(ctx context.Context, stageEnd bool) (int64, error) {
	for {
		g.mu.Lock()
		want, groups, ch, err := g.base+g.groups/g.batch, g.groups, g.changed, g.err
		g.mu.Unlock()
		if err != nil {
			return 0, err
		}
		if g.run.Err() != nil { // no new unit once the run ends
			return 0, context.Cause(g.run)
		}
		if stageEnd && groups%g.batch != 0 {
			return 0, fmt.Errorf("%w: %d groups sent, not a multiple of the learner batch %d: some would cross the stage's checkpoint", ErrDeterminism, groups, g.batch)
		}
		v := g.pol.Version()
		switch {
		case v == want:
			return v, nil
		case v > want:
			return v, fmt.Errorf("%w: policy version %d is past %d, the version %d groups make from version %d", ErrDeterminism, v, want, groups, g.base)
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-g.run.Done():
			return v, context.Cause(g.run)
		case <-ch:
		}
	}
}
