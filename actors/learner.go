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
	Groups         uint64 // groups received (first copy of each unit of a current stage)
	Stale          uint64 // groups more than K versions old (kept when within the keep bound, else dropped)
	DuplicateUnits uint64 // UnitGroups for a unit already received
	LateUnits      uint64 // UnitGroups of a stage too old to de-duplicate (dropped)
	Used           uint64 // groups passed to the Updater
	Updates        uint64 // successful updates
	UpdateErrors   uint64 // failed updates (their batch is dropped)
	Pending        uint64 // groups waiting for the next batch
	Version        int64  // current policy version

	// LateKept counts the Stale groups that were kept: more than K but at
	// most the keep bound (SystemConfig.KeepLateK) versions old. The
	// Updater's loss corrects them with its truncated importance weights.
	LateKept uint64
	// Discarded groups by reason: DiscardedStale (more than the keep bound
	// old), DiscardedLateStage (their unit's stage was over before they
	// arrived), DiscardedDuplicate (a second copy of a unit, re-issued
	// after its lease expired).
	DiscardedStale, DiscardedLateStage, DiscardedDuplicate uint64
	// Retired counts groups the learner is done with: used by an update
	// (or lost with a failed one) or discarded as stale or late-stage. The
	// coordinator paces dispatch by it (see SystemConfig.MaxLag).
	Retired uint64
}

// Discarded is the number of groups dropped for any reason.
func (s LearnerStats) Discarded() uint64 {
	return s.DiscardedStale + s.DiscardedLateStage + s.DiscardedDuplicate
}

// Arrived is the number of groups that reached the learner, every copy
// counted.
func (s LearnerStats) Arrived() uint64 {
	return s.Groups + s.DiscardedLateStage + s.DiscardedDuplicate
}

// DiscardShare is Discarded over Arrived (0 when nothing arrived): the
// share of rollout work that taught the policy nothing.
func (s LearnerStats) DiscardShare() float64 {
	if a := s.Arrived(); a > 0 {
		return float64(s.Discarded()) / float64(a)
	}
	return 0
}

type learnerMetrics struct {
	groups, stale, dupUnits, lateUnits, used, updates, updateErrors, pending atomic.Uint64
	lateKept, dropStale, dropLateStage, dropDuplicate, retired               atomic.Uint64
	version                                                                  atomic.Int64
}

func (m *learnerMetrics) snapshot() LearnerStats {
	return LearnerStats{
		Groups: m.groups.Load(), Stale: m.stale.Load(), DuplicateUnits: m.dupUnits.Load(),
		LateUnits: m.lateUnits.Load(), Used: m.used.Load(), Updates: m.updates.Load(),
		UpdateErrors: m.updateErrors.Load(), Pending: m.pending.Load(), Version: m.version.Load(),
		LateKept: m.lateKept.Load(), DiscardedStale: m.dropStale.Load(), DiscardedLateStage: m.dropLateStage.Load(),
		DiscardedDuplicate: m.dropDuplicate.Load(), Retired: m.retired.Load(),
	}
}

// learnerState is what the coordinator paces dispatch by.
type learnerState struct {
	version, retired, pending int64
}

// state reads the counters the coordinator paces by. Retired is read
// before the version, which the learner moves first (learner.updated): a
// batch seen retired comes with its version.
func (m *learnerMetrics) state() learnerState {
	retired := int64(m.retired.Load())
	return learnerState{retired: retired, version: m.version.Load(), pending: int64(m.pending.Load())}
}

// learner is the learner logic: de-duplication by unit, the staleness
// bounds, and batching into groups of B.
type learner struct {
	batch    int   // B
	k        int64 // staleness bound: groups more than k versions old are late
	keepK    int64 // late groups at most keepK versions old are kept (>= k)
	version  int64
	stage    int
	pending  []Group        // < B groups between calls; capacity bounded by B + one message
	seen     map[string]int // unit id → stage, for the current and previous stage
	subs     map[string]*policySub
	subOrder []string
	metrics  *learnerMetrics
}

// policySub is one PolicyVersion subscriber's window: at most one version
// in flight.
type policySub struct {
	sent        int64 // last version sent
	outstanding bool  // sent and not acked yet
}

// newLearner returns the learner logic for batches of batch groups: groups
// more than k versions old are late; late groups at most keepK versions old
// are kept (counted in LateKept), older ones dropped (keepK <= k keeps
// none, math.MaxInt64 keeps all).
func newLearner(batch int, k, keepK int64, m *learnerMetrics) *learner {
	return &learner{batch: batch, k: k, keepK: max(k, keepK), seen: map[string]int{},
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
	n := uint64(len(m.Groups))
	if m.Stage < l.stage-1 {
		l.metrics.lateUnits.Add(1)
		l.metrics.dropLateStage.Add(n)
		l.metrics.retired.Add(n)
		return nil
	}
	if _, dup := l.seen[m.UnitID]; dup {
		l.metrics.dupUnits.Add(1)
		l.metrics.dropDuplicate.Add(n)
		return nil
	}
	l.seen[m.UnitID] = m.Stage
	for _, g := range m.Groups {
		l.metrics.groups.Add(1)
		if lag := l.version - g.PolicyVersion; lag > l.k {
			l.metrics.stale.Add(1)
			if lag > l.keepK {
				l.metrics.dropStale.Add(1)
				l.metrics.retired.Add(1)
				continue
			}
			l.metrics.lateKept.Add(1)
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
//
// The version moves before the groups count as retired: the coordinator
// reads retired first (learnerMetrics.state), so it never sees a batch
// retired without the version that batch made.
func (l *learner) updated(n int, v int64, err error) []string {
	if err != nil {
		l.metrics.updateErrors.Add(1)
		l.metrics.retired.Add(uint64(n))
		return nil
	}
	l.metrics.used.Add(uint64(n))
	l.metrics.updates.Add(1)
	if v > l.version {
		l.version = v
		l.metrics.version.Store(v)
	}
	l.metrics.retired.Add(uint64(n))
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
//
// After each message that moved its counters it tells the coordinator
// (progressed), which paces dispatch by them.
type learnerActor struct {
	logic  *learner
	update Updater
	subs   map[string]*actor.PID
	logger *slog.Logger
	ctx    context.Context
	cancel context.CancelFunc
	// progressed, when set, is called after the learner retired groups or
	// moved its version; it must not block.
	progressed func(c actor.Context)
}

func (a *learnerActor) Receive(c actor.Context) {
	var send []string
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
	case *actor.Stopping:
		a.cancel()
	case *UnitGroups:
		retired := a.logic.metrics.retired.Load()
		batches := a.logic.groups(m)
		if len(batches) == 0 || a.logic.metrics.retired.Load() != retired {
			// Pending groups or discards: tell now, before any update
			// runs (a draining stage waits for the pending count).
			a.notify(c)
		}
		for _, b := range batches {
			v, err := a.runUpdate(b)
			if err != nil {
				a.logger.Error("learner: update failed", "groups", len(b), "error", err)
			}
			send = append(send, a.logic.updated(len(b), v, err)...)
			a.notify(c)
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

func (a *learnerActor) notify(c actor.Context) {
	if a.progressed != nil {
		a.progressed(c)
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
