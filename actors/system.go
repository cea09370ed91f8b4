package actors

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"github.com/t2t-lab/t2t/internal/fielderr"

	"github.com/asynkron/protoactor-go/actor"
)

// SystemConfig configures a local System. Zero fields are not defaults:
// start from DefaultSystemConfig and change what you need.
type SystemConfig struct {
	// RunID names the run; unit ids are "<RunID>/s<stage>/u<index>".
	// Default "run".
	RunID string
	// Node is the node name the rollouts report. Default "local".
	Node string
	// Listen, when set ("host:port", port 0 for any), starts the remote
	// transport before the actors, so that rollouts on other nodes can
	// join: they address the coordinator and learner as
	// actor.NewPID(System.Host().Address(), CoordinatorName) and LearnerName.
	// Default "" (this process only).
	Listen string
	// Rollouts is the number of rollout actors in this process (R); 0 is
	// allowed with Listen, when every rollout runs on another node.
	// Default 2.
	Rollouts int
	// MaxInFlight is each rollout's credit: the most units it runs at
	// once. Default 4.
	MaxInFlight int
	// UnitsPerStage is the number of work units in each stage. Default 8.
	UnitsPerStage int
	// InstancesPerUnit is the instance index range of each unit. Default 16.
	InstancesPerUnit int
	// Epochs is how many times each stage plays its instances
	// (StartRun.Epochs): UnitsPerStage·Epochs units per stage. Default 1.
	Epochs int
	// Split is the data split the units draw from. Default "train".
	Split string
	// Seed derives every unit's seed. Default 1.
	Seed uint64
	// InitialConfigVersion and InitialConfigJSON are the config of stage
	// FirstStage; later stages come from the Proposer. Default "stage-0",
	// "{}".
	InitialConfigVersion string
	InitialConfigJSON    []byte
	// FirstStage is the stage Run starts at: 0 for a new run, s+1 for a
	// run resumed after stage s. Stage numbers, unit ids
	// ("<RunID>/s<stage>/u<index>") and unit seeds do not depend on it, so
	// a resumed stage's units are those of the interrupted run (and
	// idempotent sinks recognise the ones already recorded). Default 0.
	FirstStage int
	// LeaseTimeout is how long a rollout holds a unit before it is
	// re-issued, and how long the coordinator waits for config acks.
	// Default 5m.
	LeaseTimeout time.Duration
	// TickInterval is how often Run asks the coordinator to check leases;
	// 0 disables the ticker (tests drive System.Tick with a ManualClock).
	// Default 1s.
	TickInterval time.Duration
	// LearnerBatch is the number of groups per Updater call (B). Default 8.
	LearnerBatch int
	// StalenessK: groups whose PolicyVersion < current-K are stale.
	// Default 1.
	StalenessK int64
	// KeepStale keeps stale groups (counted) instead of dropping them,
	// however old. Default false.
	KeepStale bool
	// KeepLateK: stale groups at most KeepLateK versions old are kept
	// (LearnerStats.LateKept) rather than dropped; the Updater's loss
	// corrects them with its truncated importance weights. A value <=
	// StalenessK keeps none. Default 0.
	KeepLateK int64
	// MaxLag paces dispatch by the learner (AReaL's bounded staleness η):
	// the coordinator issues a unit only while the groups issued and not
	// yet retired by the learner (used, or discarded), plus the unit's,
	// fit in (MaxLag+1)·LearnerBatch. The learner takes groups in arrival
	// order, B at a time, so a unit's groups reach an update at most
	// MaxLag versions after the learner's version when it was issued,
	// which the rollout plays at least (WorkUnit.PolicyVersion); only a
	// unit overtaken by later ones can be older. Rollouts with credits
	// left wait meanwhile (CoordinatorStats.LearnerWait). Keep MaxLag <=
	// StalenessK. Negative: no pacing, every credit gets a unit at once.
	// Default -1.
	MaxLag int64
	// OnLearnerWait, when set, is called by the coordinator with each
	// interval in which queued units waited for the learner while rollouts
	// had credits (a tracer records it as a span). It runs on the
	// coordinator's goroutine and must not block.
	OnLearnerWait func(stage int, from, to time.Time)
	// MailboxSize bounds the coordinator, learner and engineer mailboxes
	// (rounded up to a power of two); it must be at least
	// 2*Rollouts*MaxInFlight + Rollouts + 16 so that the credit protocol
	// can never fill the coordinator (count rollouts on other nodes too:
	// when it fills anyway, their traffic stalls and MailboxFull counts
	// it). Rollout mailboxes hold
	// 3*MaxInFlight + 16 (units, runner results, config updates, one
	// policy version), which the protocol never fills. Default 1024.
	MailboxSize int
	// Clock is the coordinator's clock for lease deadlines. Default
	// WallClock.
	Clock Clock
	// RemoteOptions are extra protoactor remote options for Listen, e.g.
	// cluster.RemoteTLSOptions for mutual TLS between nodes. Default none.
	RemoteOptions []remote.ConfigOption
	// StageHeaders, when set, is called by the coordinator when a stage's
	// units are built; its result (trace context, e.g. W3C traceparent) is
	// copied into every WorkUnit.TraceHeaders of that stage, so the spans
	// of rollouts on any node join the stage's trace. It runs on the
	// coordinator's goroutine and must be safe for concurrent use.
	StageHeaders func(runID string, stage int) map[string]string
	// Eval lists the evaluation splits played after every stage as
	// evaluation units (StartRun.Eval). Default none.
	Eval []EvalSplit
	// EvalHeaders, when set, is called when a stage's evaluation units are
	// built, as StageHeaders is for its training units (their spans join
	// the stage's evaluation trace).
	EvalHeaders func(runID string, stage int) map[string]string
	// SyncTimeout bounds Run's wait for the learner's final counters.
	// (Close waits up to protoactor's fixed 10s per actor.) Default 10s.
	SyncTimeout time.Duration
}

// rolloutMailboxSize bounds what a rollout can be sent: at most MaxInFlight
// units (its credit), MaxInFlight runner results, one ConfigUpdate per
// stage and per config rejection (at most MaxInFlight), one PolicyVersion
// (the learner's ack window), and a few control messages.
func rolloutMailboxSize(maxInFlight int) int { return 3*maxInFlight + 16 }

// DefaultSystemConfig returns the documented defaults.
func DefaultSystemConfig() SystemConfig {
	return SystemConfig{
		RunID: "run", Node: "local", Rollouts: 2, MaxInFlight: 4,
		UnitsPerStage: 8, InstancesPerUnit: 16, Epochs: 1, Split: "train", Seed: 1,
		InitialConfigVersion: "stage-0", InitialConfigJSON: []byte("{}"),
		LeaseTimeout: 5 * time.Minute, TickInterval: time.Second,
		LearnerBatch: 8, StalenessK: 1, MaxLag: -1, MailboxSize: 1024,
		Clock: WallClock{}, SyncTimeout: 10 * time.Second,
	}
}

// Validate checks every field; the error names the field and the bound.
func (c SystemConfig) Validate() error {
	minMailbox := 2*c.Rollouts*c.MaxInFlight + c.Rollouts + 16
	var errs []error
	check := func(ok bool, field string, v any, reason string) {
		if !ok {
			errs = append(errs, &fielderr.Error{Kind: ErrInvalidConfig, Field: field, Value: v, Reason: reason})
		}
	}
	check(c.RunID != "", "RunID", c.RunID, "must not be empty")
	check(c.Node != "", "Node", c.Node, "must not be empty")
	check(c.Rollouts >= 1 || c.Rollouts == 0 && c.Listen != "", "Rollouts", c.Rollouts, "must be >= 1 (or 0 with Listen set)")
	check(c.MaxInFlight >= 1, "MaxInFlight", c.MaxInFlight, "must be >= 1")
	check(c.UnitsPerStage >= 1, "UnitsPerStage", c.UnitsPerStage, "must be >= 1")
	check(c.InstancesPerUnit >= 1, "InstancesPerUnit", c.InstancesPerUnit, "must be >= 1")
	check(c.Epochs >= 1, "Epochs", c.Epochs, "must be >= 1")
	check(c.InitialConfigVersion != "", "InitialConfigVersion", c.InitialConfigVersion, "must not be empty")
	check(c.FirstStage >= 0, "FirstStage", c.FirstStage, "must be >= 0")
	check(c.LeaseTimeout > 0, "LeaseTimeout", c.LeaseTimeout, "must be > 0")
	check(c.TickInterval >= 0, "TickInterval", c.TickInterval, "must be >= 0 (0 disables the ticker)")
	check(c.LearnerBatch >= 1, "LearnerBatch", c.LearnerBatch, "must be >= 1")
	check(c.StalenessK >= 0, "StalenessK", c.StalenessK, "must be >= 0")
	check(c.KeepLateK >= 0, "KeepLateK", c.KeepLateK, "must be >= 0")
	check(c.MailboxSize >= minMailbox, "MailboxSize", c.MailboxSize,
		fmt.Sprintf("must be >= 2*Rollouts*MaxInFlight+Rollouts+16 = %d", minMailbox))
	check(c.Clock != nil, "Clock", c.Clock, "must not be nil")
	check(c.SyncTimeout > 0, "SyncTimeout", c.SyncTimeout, "must be > 0")
	return errors.Join(errs...)
}

// RunReport is what a run did: the per-stage counts (from each StageDone)
// and every actor's counters at the end.
type RunReport struct {
	RunID       string
	Stages      []StageDone
	Coordinator CoordinatorStats
	Learner     LearnerStats
	Engineer    EngineerStats
	Rollouts    []RolloutStats
	Node        HostStats
}

// System is the whole t2t actor pipeline in one process: a coordinator, R
// rollout actors, a learner and an engineer on one Host. Build it with
// NewLocal, Run it once, Close it.
type System struct {
	cfg    SystemConfig
	node   *Host
	logger *slog.Logger

	coordinator, learner, engineer, observer *actor.PID
	rollouts                                 []*RolloutHandle

	events chan any // StageDone, RunDone from the observer

	progressPending atomic.Bool // a learnerProgressed is on its way to the coordinator
	coordMetrics    *coordMetrics
	learnerMetrics  *learnerMetrics
	engineerMetrics *engineerMetrics

	mu     sync.Mutex
	ran    bool
	closed bool
}

// Names of the actors a System spawns; other nodes address them as
// actor.NewPID(address, name).
const (
	CoordinatorName = "coordinator"
	LearnerName     = "learner"
	EngineerName    = "engineer"
)

// NewLocal builds and spawns the pipeline in one process. The actors start
// at once (rollouts register with the coordinator); nothing runs until Run.
func NewLocal(cfg SystemConfig, runner Runner, updater Updater, proposer Proposer, logger *slog.Logger) (*System, error) {
	if runner == nil {
		return nil, fmt.Errorf("%w: runner, updater and proposer are required", ErrInvalidConfig)
	}
	return newLocal(cfg, func(int) Runner { return runner }, updater, proposer, logger)
}

// newLocal is NewLocal with one Runner per rollout (tests give rollouts
// different behaviours).
func newLocal(cfg SystemConfig, runnerFor func(i int) Runner, updater Updater, proposer Proposer, logger *slog.Logger) (*System, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if updater == nil || proposer == nil {
		return nil, fmt.Errorf("%w: runner, updater and proposer are required", ErrInvalidConfig)
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	reg := NewRegistry()
	if err := RegisterMessages(reg); err != nil {
		return nil, err
	}
	s := &System{
		cfg: cfg, node: NewHost(cfg.Node, reg, logger), logger: logger,
		events:          make(chan any, 64),
		coordMetrics:    &coordMetrics{},
		learnerMetrics:  &learnerMetrics{},
		engineerMetrics: &engineerMetrics{},
	}
	if cfg.Listen != "" {
		host, port, err := splitHostPort(cfg.Listen)
		if err == nil {
			err = s.node.StartRemote(host, port, cfg.RemoteOptions...)
		}
		if err != nil {
			s.Close()
			return nil, err
		}
	}
	if err := s.spawn(runnerFor, updater, proposer); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *System) spawn(runnerFor func(int) Runner, updater Updater, proposer Proposer) error {
	n, cfg, root := s.node, s.cfg, s.node.Root()
	var err error
	spawn := func(name string, mailbox int, p actor.Producer) *actor.PID {
		if err != nil {
			return nil
		}
		var pid *actor.PID
		pid, err = root.SpawnNamed(n.Props(name, mailbox, p), name)
		if err != nil {
			err = fmt.Errorf("actors: spawn %s: %w", name, err)
		}
		return pid
	}
	// Actors address each other by name: the engineer is spawned before the
	// coordinator it sends to.
	coordPID := actor.NewPID(n.Address(), CoordinatorName)
	s.observer = spawn("observer", cfg.MailboxSize, func() actor.Actor { return &observerActor{events: s.events, logger: s.logger} })
	s.engineer = spawn(EngineerName, cfg.MailboxSize, func() actor.Actor {
		return &engineerActor{logic: newEngineer(s.engineerMetrics), proposer: proposer, coordinator: coordPID,
			logger: s.logger.With("actor", EngineerName)}
	})
	keepK := cfg.KeepLateK
	if cfg.KeepStale {
		keepK = math.MaxInt64
	}
	s.learner = spawn(LearnerName, cfg.MailboxSize, func() actor.Actor {
		return &learnerActor{logic: newLearner(cfg.LearnerBatch, cfg.StalenessK, keepK, s.learnerMetrics),
			update: updater, subs: map[string]*actor.PID{}, logger: s.logger.With("actor", LearnerName),
			progressed: s.progressed(coordPID)}
	})
	s.coordinator = spawn(CoordinatorName, cfg.MailboxSize, func() actor.Actor {
		logic := newCoordinator(cfg.Clock, cfg.LeaseTimeout, cfg.MaxLag, cfg.LearnerBatch, s.coordMetrics)
		logic.headers, logic.evalHeaders = cfg.StageHeaders, cfg.EvalHeaders
		return &coordinatorActor{logic: logic,
			subscribers: []*actor.PID{s.learner, s.engineer, s.observer},
			workers:     map[string]*actor.PID{}, logger: s.logger.With("actor", CoordinatorName),
			learner: s.learnerMetrics, progressPending: &s.progressPending, onWait: cfg.OnLearnerWait}
	})
	for i := range cfg.Rollouts {
		if err != nil {
			break
		}
		var h *RolloutHandle
		h, err = n.SpawnRollout(RolloutConfig{Name: fmt.Sprintf("rollout-%d", i), Coordinator: s.coordinator,
			Learner: s.learner, MaxInFlight: cfg.MaxInFlight}, runnerFor(i))
		if err == nil {
			s.rollouts = append(s.rollouts, h)
		}
	}
	return err
}

// progressed is the learner's notification of the coordinator when
// dispatch is paced (nil otherwise: the coordinator does not need it). At
// most one learnerProgressed is on its way at a time, so the learner never
// fills the coordinator's mailbox; with pacing on, the learner's own
// mailbox holds at most the window's units, so the two cannot block each
// other.
func (s *System) progressed(coord *actor.PID) func(actor.Context) {
	if s.cfg.MaxLag < 0 {
		return nil
	}
	return func(c actor.Context) {
		if s.progressPending.CompareAndSwap(false, true) {
			c.Send(coord, &learnerProgressed{})
		}
	}
}

// Host returns the actor host the system runs on.
func (s *System) Host() *Host { return s.node }

// Tick asks the coordinator to check lease and ack deadlines now.
func (s *System) Tick() { s.node.Root().Send(s.coordinator, &Tick{}) }

// NodeLeft tells the coordinator that node left (as membership would).
func (s *System) NodeLeft(node string) { s.node.Root().Send(s.coordinator, &NodeLeft{Node: node}) }

// Run runs stages FirstStage..stages-1 (stages counts from stage 0) and
// returns the report. It returns when the last stage is done, the run fails
// (ErrRunFailed) or ctx ends (ctx.Err(), with the stages done so far). A
// System runs once.
func (s *System) Run(ctx context.Context, stages int) (RunReport, error) {
	rep := RunReport{RunID: s.cfg.RunID}
	s.mu.Lock()
	if s.closed || s.ran {
		s.mu.Unlock()
		return rep, ErrClosed
	}
	s.ran = true
	s.mu.Unlock()
	if stages < 1 || stages <= s.cfg.FirstStage {
		return rep, &fielderr.Error{Kind: ErrInvalidConfig, Field: "stages", Value: stages, Reason: fmt.Sprintf("must be >= 1 and > FirstStage (%d)", s.cfg.FirstStage)}
	}
	if s.cfg.TickInterval > 0 {
		tctx, stop := context.WithCancel(ctx)
		defer stop()
		go s.ticker(tctx)
	}
	s.node.Root().Send(s.coordinator, &StartRun{
		RunID: s.cfg.RunID, Stages: stages, Units: s.cfg.UnitsPerStage,
		InstancesPerUnit: s.cfg.InstancesPerUnit, Split: s.cfg.Split, Seed: s.cfg.Seed,
		Config:     ConfigUpdate{Version: s.cfg.InitialConfigVersion, Stage: s.cfg.FirstStage, JSON: s.cfg.InitialConfigJSON},
		FirstStage: s.cfg.FirstStage, Eval: s.cfg.Eval, Epochs: s.cfg.Epochs,
	})
	for {
		select {
		case <-ctx.Done():
			s.fill(&rep)
			return rep, ctx.Err()
		case ev := <-s.events:
			switch m := ev.(type) {
			case *StageDone:
				rep.Stages = append(rep.Stages, *m)
			case *RunDone:
				// Everything a rollout sent to the learner before its
				// last UnitDone is in the learner's mailbox before this
				// request: the learner's counters are final for the run.
				_, err := s.node.Root().RequestFuture(s.learner, &learnerSync{}, s.cfg.SyncTimeout).Result()
				s.fill(&rep)
				if err != nil {
					return rep, fmt.Errorf("actors: learner sync: %w", err)
				}
				if m.Error != "" {
					return rep, fmt.Errorf("%w: %s", ErrRunFailed, m.Error)
				}
				return rep, nil
			}
		}
	}
}

func (s *System) ticker(ctx context.Context) {
	t := time.NewTicker(s.cfg.TickInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.Tick()
		}
	}
}

func (s *System) fill(rep *RunReport) {
	rep.Coordinator = s.coordMetrics.snapshot()
	rep.Learner = s.learnerMetrics.snapshot()
	rep.Engineer = EngineerStats{Proposed: s.engineerMetrics.proposed.Load(), Failed: s.engineerMetrics.failed.Load()}
	rep.Rollouts = rep.Rollouts[:0]
	for _, h := range s.rollouts {
		rep.Rollouts = append(rep.Rollouts, h.Stats())
	}
	rep.Node = s.node.Stats()
}

// Close stops every actor (rollouts first, waiting for their runners) and
// the node. It is safe to call more than once.
func (s *System) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	s.mu.Unlock()
	var errs []error
	stop := func(pid *actor.PID) {
		if pid == nil {
			return
		}
		if err := s.node.System().Root.StopFuture(pid).Wait(); err != nil {
			errs = append(errs, fmt.Errorf("actors: stop %s: %w", pid.Id, err))
		}
	}
	for _, h := range s.rollouts {
		stop(h.PID)
	}
	for _, p := range []*actor.PID{s.coordinator, s.learner, s.engineer, s.observer} {
		stop(p)
	}
	s.node.Close()
	return errors.Join(errs...)
}

// observerActor hands the coordinator's stage events to Run.
type observerActor struct {
	events chan<- any
	logger *slog.Logger
}

func (a *observerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *StageDone, *RunDone:
		select {
		case a.events <- m:
		default:
			a.logger.Error("observer: event queue full, event dropped", "type", fmt.Sprintf("%T", m))
		}
	}
}

func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, fmt.Errorf("%w: listen address %q: %v", ErrRemote, addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, fmt.Errorf("%w: listen address %q: bad port", ErrRemote, addr)
	}
	return host, port, nil
}
