package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Runner runs one work unit: generate its instances, sample the policy,
// verify and reward. It is called from up to MaxInFlight goroutines of a
// rollout actor at once and must return promptly once ctx is cancelled (the
// rollout waits for its runners when it stops). The UnitID and Node of the
// result are set by the rollout.
type Runner interface {
	RunUnit(ctx context.Context, u WorkUnit) (UnitDone, error)
}

// RolloutStats are one rollout actor's counters.
type RolloutStats struct {
	Node     string
	Started  uint64 // units handed to the Runner
	Done     uint64 // units the Runner finished
	Failed   uint64 // units the Runner failed (reported as UnitRejected)
	Rejected uint64 // units refused (config not acked, no free slot)
	Policy   int64  // latest PolicyVersion seen
}

type rolloutMetrics struct {
	started, done, failed, rejected atomic.Uint64
	policy                          atomic.Int64
}

// rollDest says where a rollout output goes.
type rollDest uint8

const (
	toCoordinator rollDest = iota
	toLearner
	runUnit // start the Runner on msg (*WorkUnit)
)

type rollOut struct {
	to  rollDest
	msg any
}

// rollout is the logic of a rollout actor: credit accounting, config
// gating, result routing.
type rollout struct {
	node     string
	max      int // credits granted at start: the bound on units in flight
	inFlight int
	version  string // config version acked
	stage    int
	metrics  *rolloutMetrics
}

func newRollout(node string, maxInFlight int, m *rolloutMetrics) *rollout {
	return &rollout{node: node, max: maxInFlight, stage: -1, metrics: m}
}

// started registers with the coordinator, granting every credit, and
// subscribes to policy versions.
func (r *rollout) started() []rollOut {
	return []rollOut{
		{toCoordinator, &RequestWork{Node: r.node, Credits: r.max}},
		{toLearner, &SubscribePolicy{Node: r.node}},
	}
}

// config acks a config broadcast; configs of earlier stages are ignored.
func (r *rollout) config(u ConfigUpdate) []rollOut {
	if u.Stage < r.stage {
		return nil
	}
	r.stage, r.version = u.Stage, u.Version
	return []rollOut{{toCoordinator, &ConfigAck{Node: r.node, Version: u.Version}}}
}

// unit starts a unit, or refuses it (and gives the credit back when the
// refusal is not about the credit itself).
func (r *rollout) unit(u *WorkUnit) []rollOut {
	switch {
	case u.ConfigVersion != r.version:
		r.metrics.rejected.Add(1)
		return []rollOut{
			{toCoordinator, &UnitRejected{UnitID: u.UnitID, Node: r.node, NeedConfig: true,
				Reason: fmt.Sprintf("config %q not acked (holding %q)", u.ConfigVersion, r.version)}},
			{toCoordinator, &RequestWork{Node: r.node, Credits: 1}},
		}
	case r.inFlight >= r.max:
		r.metrics.rejected.Add(1)
		return []rollOut{{toCoordinator, &UnitRejected{UnitID: u.UnitID, Node: r.node,
			Reason: fmt.Sprintf("no free slot (%d in flight)", r.inFlight)}}}
	}
	r.inFlight++
	r.metrics.started.Add(1)
	return []rollOut{{runUnit, u}}
}

// finished routes a Runner's result: groups to the learner first, then the
// result to the coordinator, then one credit back.
func (r *rollout) finished(u *WorkUnit, d UnitDone, err error) []rollOut {
	r.inFlight--
	if err != nil {
		r.metrics.failed.Add(1)
		return []rollOut{
			{toCoordinator, &UnitRejected{UnitID: u.UnitID, Node: r.node, Reason: "runner: " + err.Error()}},
			{toCoordinator, &RequestWork{Node: r.node, Credits: 1}},
		}
	}
	r.metrics.done.Add(1)
	out := make([]rollOut, 0, 3)
	if len(d.Groups) > 0 {
		out = append(out, rollOut{toLearner, &UnitGroups{UnitID: u.UnitID, Node: r.node, Stage: u.Stage, Groups: d.Groups}})
	}
	d.UnitID, d.Node, d.GroupCount, d.Groups = u.UnitID, r.node, len(d.Groups), nil
	return append(out,
		rollOut{toCoordinator, &d},
		rollOut{toCoordinator, &RequestWork{Node: r.node, Credits: 1}})
}

func (r *rollout) policy(v int64) {
	if v > r.metrics.policy.Load() {
		r.metrics.policy.Store(v)
	}
}

// unitFinished is sent by a runner goroutine to its rollout actor (never
// crosses the wire).
type unitFinished struct {
	unit *WorkUnit
	done UnitDone
	err  error
}

// rolloutActor runs units on goroutines (at most MaxInFlight, by the credit
// bound) and performs what the logic returns.
type rolloutActor struct {
	logic       *rollout
	runner      Runner
	coordinator *actor.PID
	learner     *actor.PID
	logger      *slog.Logger
	onPolicy    func(version int64)

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func (a *rolloutActor) Receive(c actor.Context) {
	var out []rollOut
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
		out = a.logic.started()
	case *actor.Stopping:
		a.cancel()
	case *actor.Stopped:
		a.wg.Wait()
	case *ConfigUpdate:
		out = a.logic.config(*m)
	case *WorkUnit:
		out = a.logic.unit(m)
	case *unitFinished:
		out = a.logic.finished(m.unit, m.done, m.err)
	case *PolicyVersion:
		a.logic.policy(m.Version)
		if a.onPolicy != nil {
			a.onPolicy(m.Version)
		}
		if s := c.Sender(); s != nil {
			// Request, not Respond: the learner needs to know who acks.
			c.Request(s, &PolicyAck{Node: a.logic.node, Version: m.Version})
		}
	case *Shutdown:
		c.Stop(c.Self())
	}
	for _, o := range out {
		switch o.to {
		case toCoordinator:
			c.Request(a.coordinator, o.msg)
		case toLearner:
			c.Request(a.learner, o.msg)
		case runUnit:
			a.run(c, o.msg.(*WorkUnit))
		}
	}
}

func (a *rolloutActor) run(c actor.Context, u *WorkUnit) {
	self, root, ctx := c.Self(), c.ActorSystem().Root, a.ctx
	a.wg.Add(1)
	go func() {
		defer a.wg.Done()
		d, err := a.safeRun(ctx, *u)
		if ctx.Err() != nil {
			return // stopping: the actor no longer takes messages
		}
		root.Send(self, &unitFinished{unit: u, done: d, err: err})
	}()
}

var errRunnerPanic = errors.New("runner panicked")

func (a *rolloutActor) safeRun(ctx context.Context, u WorkUnit) (d UnitDone, err error) {
	defer func() {
		if p := recover(); p != nil {
			a.logger.Error("rollout: runner panicked", "unit", u.UnitID, "panic", fmt.Sprint(p))
			err = fmt.Errorf("%w: %v", errRunnerPanic, p)
		}
	}()
	return a.runner.RunUnit(ctx, u)
}

// RolloutConfig configures one rollout actor.
type RolloutConfig struct {
	// Name is the actor's name, unique on its node ("rollout-0").
	Name string
	// Coordinator and Learner may live on another node.
	Coordinator, Learner *actor.PID
	// MaxInFlight is the rollout's credit: the most units it runs at once.
	MaxInFlight int
	// OnPolicy, when set, is called with every policy version the learner
	// announces to this rollout (PolicyVersion), on the actor's goroutine:
	// it must not block. A rollout node starts loading the new weights
	// there, so units start with them instead of loading them first.
	OnPolicy func(version int64)
}

// RolloutHandle is a spawned rollout actor.
type RolloutHandle struct {
	PID     *actor.PID
	node    string
	metrics *rolloutMetrics
}

// Stats returns the rollout's counters.
func (h *RolloutHandle) Stats() RolloutStats {
	m := h.metrics
	return RolloutStats{Node: h.node, Started: m.started.Load(), Done: m.done.Load(), Failed: m.failed.Load(),
		Rejected: m.rejected.Load(), Policy: m.policy.Load()}
}

// SpawnRollout spawns a rollout actor on n that pulls work from the
// coordinator in cfg and runs it with runner. It registers with the
// coordinator at once (RequestWork with MaxInFlight credits) under the
// node's name, which is what NodeLeft refers to. Stop it with
// n.System().Root.StopFuture(h.PID).
func (n *Host) SpawnRollout(cfg RolloutConfig, runner Runner) (*RolloutHandle, error) {
	switch {
	case cfg.Name == "" || cfg.Coordinator == nil || cfg.Learner == nil || runner == nil:
		return nil, fmt.Errorf("%w: rollout needs a name, a coordinator, a learner and a runner", ErrInvalidConfig)
	case cfg.MaxInFlight < 1:
		return nil, &fielderr.Error{Kind: ErrInvalidConfig, Field: "MaxInFlight", Value: cfg.MaxInFlight, Reason: "must be >= 1"}
	}
	h := &RolloutHandle{node: n.name, metrics: &rolloutMetrics{}}
	logger := n.logger.With("actor", cfg.Name)
	pid, err := n.Root().SpawnNamed(n.Props(cfg.Name, rolloutMailboxSize(cfg.MaxInFlight), func() actor.Actor {
		return &rolloutActor{logic: newRollout(n.name, cfg.MaxInFlight, h.metrics), runner: runner,
			coordinator: cfg.Coordinator, learner: cfg.Learner, logger: logger, onPolicy: cfg.OnPolicy}
	}), cfg.Name)
	if err != nil {
		return nil, fmt.Errorf("actors: spawn %s: %w", cfg.Name, err)
	}
	h.PID = pid
	return h, nil
}
