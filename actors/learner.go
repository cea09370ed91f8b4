package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Updater runs one policy update (a GRPO step) on exactly B groups and
// returns the new policy version. It is called from the learner actor only,
// one call at a time.
type Updater interface {
	Update(ctx context.Context, groups []Group) (newVersion int64, err error)
}

// LearnerStats are the learner's counters.
type LearnerStats struct {
	Groups         uint64 // groups received (first copy of each unit)
	Stale          uint64 // groups older than current-K (dropped unless KeepStale)
	DuplicateUnits uint64 // UnitGroups for a unit already received
	LateUnits      uint64 // UnitGroups of a stage too old to de-duplicate (dropped)
	Used           uint64 // groups passed to the Updater
	Updates        uint64 // successful updates
	UpdateErrors   uint64 // failed updates (their batch is dropped)
	Pending        uint64 // groups waiting for the next batch
	Version        int64  // current policy version
}

type learnerMetrics struct {
	groups, stale, dupUnits, lateUnits, used, updates, updateErrors, pending atomic.Uint64
	version                                                                  atomic.Int64
}

func (m *learnerMetrics) snapshot() LearnerStats {
	return LearnerStats{
		Groups: m.groups.Load(), Stale: m.stale.Load(), DuplicateUnits: m.dupUnits.Load(),
		LateUnits: m.lateUnits.Load(), Used: m.used.Load(), Updates: m.updates.Load(),
		UpdateErrors: m.updateErrors.Load(), Pending: m.pending.Load(), Version: m.version.Load(),
	}
}

// learner is the learner logic: de-duplication by unit, the staleness
// bound, and batching into groups of B.
type learner struct {
	batch     int   // B
	k         int64 // staleness bound
	keepStale bool
	version   int64
	stage     int
	pending   []Group        // < B groups between calls; capacity bounded by B + one message
	seen      map[string]int // unit id → stage, for the current and previous stage
	subs      map[string]*policySub
	subOrder  []string
	metrics   *learnerMetrics
}

// policySub is one PolicyVersion subscriber's window: at most one version
// in flight.
type policySub struct {
	sent        int64 // last version sent
	outstanding bool  // sent and not acked yet
}

func newLearner(batch int, k int64, keepStale bool, m *learnerMetrics) *learner {
	return &learner{batch: batch, k: k, keepStale: keepStale, seen: map[string]int{},
		subs: map[string]*policySub{}, metrics: m}
}

// subscribe adds a subscriber; it returns whether to send it the current
// version now (always, for a new subscriber; it then is outstanding).
func (l *learner) subscribe(key string) bool {
	if _, ok := l.subs[key]; ok {
		return false
	}
	l.subs[key] = &policySub{sent: l.version, outstanding: true}
	l.subOrder = append(l.subOrder, key)
	return true
}

// publish returns the subscribers to send the current version to: those
// with nothing outstanding that have not seen it.
func (l *learner) publish() []string {
	var out []string
	for _, k := range l.subOrder {
		if s := l.subs[k]; !s.outstanding && s.sent < l.version {
			s.sent, s.outstanding = l.version, true
			out = append(out, k)
		}
	}
	return out
}

// ack closes a subscriber's window; it returns whether to send the current
// version to it now (the version moved while it was outstanding).
func (l *learner) ack(key string) bool {
	s, ok := l.subs[key]
	if !ok {
		return false
	}
	s.outstanding = false
	if s.sent < l.version {
		s.sent, s.outstanding = l.version, true
		return true
	}
	return false
}

// stageStart forgets units older than the previous stage.
func (l *learner) stageStart(stage int) {
	if stage <= l.stage {
		return
	}
	l.stage = stage
	for id, s := range l.seen {
		if s < stage-1 {
			delete(l.seen, id)
		}
	}
}

// groups takes a unit's groups and returns the batches (each exactly B
// groups) ready for the Updater.
func (l *learner) groups(m *UnitGroups) [][]Group {
	if m.Stage < l.stage-1 {
		l.metrics.lateUnits.Add(1)
		return nil
	}
	if _, dup := l.seen[m.UnitID]; dup {
		l.metrics.dupUnits.Add(1)
		return nil
	}
	l.seen[m.UnitID] = m.Stage
	for _, g := range m.Groups {
		l.metrics.groups.Add(1)
		if g.PolicyVersion < l.version-l.k {
			l.metrics.stale.Add(1)
			if !l.keepStale {
				continue
			}
		}
		l.pending = append(l.pending, g)
	}
	var out [][]Group
	for len(l.pending) >= l.batch {
		b := make([]Group, l.batch)
		copy(b, l.pending)
		out = append(out, b)
		l.pending = append(l.pending[:0], l.pending[l.batch:]...)
	}
	l.metrics.pending.Store(uint64(len(l.pending)))
	return out
}

// updated records an Updater result of a batch of n groups; it returns the
// subscribers to send the new version to.
func (l *learner) updated(n int, v int64, err error) []string {
	if err != nil {
		l.metrics.updateErrors.Add(1)
		return nil
	}
	l.metrics.used.Add(uint64(n))
	l.metrics.updates.Add(1)
	if v > l.version {
		l.version = v
		l.metrics.version.Store(v)
	}
	return l.publish()
}

// learnerSync is sent by the System to the learner to learn that every
// message posted before it was handled (never crosses the wire). Answer:
// the same value.
type learnerSync struct{}

// learnerActor calls the Updater inline: while it updates, its bounded
// mailbox fills and rollouts block on it (back-pressure), which also keeps
// policy lag small. The learner itself never blocks on a send: each
// subscriber has at most one PolicyVersion in its mailbox.
type learnerActor struct {
	logic  *learner
	update Updater
	subs   map[string]*actor.PID
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
}

func (a *learnerActor) Receive(c actor.Context) {
	var send []string
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
	case *actor.Stopping:
		a.cancel()
	case *UnitGroups:
		for _, b := range a.logic.groups(m) {
			v, err := a.runUpdate(b)
			if err != nil {
				a.logger.Error("learner: update failed", "groups", len(b), "error", err)
			}
			send = append(send, a.logic.updated(len(b), v, err)...)
		}
	case *StageStart:
		a.logic.stageStart(m.Stage)
	case *SubscribePolicy:
		if s := c.Sender(); s != nil {
			k := pidKey(s)
			a.subs[k] = s
			if a.logic.subscribe(k) {
				send = append(send, k)
			}
		}
	case *PolicyAck:
		if s := c.Sender(); s != nil && a.logic.ack(pidKey(s)) {
			send = append(send, pidKey(s))
		}
	case *learnerSync:
		c.Respond(m)
	case *Shutdown:
		c.Stop(c.Self())
	}
	for _, k := range send {
		c.Request(a.subs[k], &PolicyVersion{Version: a.logic.version})
	}
}

func (a *learnerActor) runUpdate(b []Group) (v int64, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("updater panicked: %v", p)
		}
	}()
	return a.update.Update(a.ctx, b)
}
