package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// sysRunner does trivial work: one group per instance, two samples each.
// It records every call.
type sysRunner struct {
	mu       sync.Mutex
	calls    []WorkUnit
	done     chan string // unit ids of finished calls (nil: not reported)
	groupsPU int         // groups per unit (0: Hi-Lo)
	// gate, when set, holds every unit until it is closed (a test that needs
	// another rollout to take a unit first: this one would take them all).
	gate chan struct{}
}

func (r *sysRunner) RunUnit(ctx context.Context, u WorkUnit) (UnitDone, error) {
	if r.gate != nil {
		select {
		case <-ctx.Done():
			return UnitDone{}, ctx.Err()
		case <-r.gate:
		}
	}
	r.mu.Lock()
	r.calls = append(r.calls, u)
	r.mu.Unlock()
	n := r.groupsPU
	if n == 0 {
		n = u.Hi - u.Lo
	}
	d := sysTrivialUnit(u, n)
	if r.done != nil {
		r.done <- u.UnitID
	}
	return d, nil
}

func (r *sysRunner) snapshot() []WorkUnit {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// sysTrivialUnit is the "trivial work" of a unit: n groups whose rewards are
// a hash of the seed.
func sysTrivialUnit(u WorkUnit, n int) UnitDone {
	d := UnitDone{Groups: make([]Group, n)}
	for i := range d.Groups {
		h := UnitSeed(u.Seed, 0, i)
		d.Groups[i] = Group{InstanceID: fmt.Sprintf("%d", u.Lo+i), Seed: h, ConfigVersion: u.ConfigVersion,
			Samples: []Sample{
				{Tokens: []int32{int32(h & 7)}, LogProbs: []float32{-1}, Reward: float32(h&1) - 0.5, Valid: h&2 != 0},
				{Tokens: []int32{int32(h >> 8 & 7)}, LogProbs: []float32{-2}, Reward: float32(h >> 8 & 1)},
			}}
		d.Stats.Samples += 2
	}
	d.Stats.Instances = n
	return d
}

// sysBlockingRunner blocks every call until ctx ends or release is closed,
// reporting each start.
type sysBlockingRunner struct {
	started chan WorkUnit
	release chan struct{}
}

func (r *sysBlockingRunner) RunUnit(ctx context.Context, u WorkUnit) (UnitDone, error) {
	r.started <- u
	select {
	case <-ctx.Done():
		return UnitDone{}, ctx.Err()
	case <-r.release:
		return sysTrivialUnit(u, 1), nil
	}
}

type sysUpdater struct {
	mu      sync.Mutex
	version int64
	sizes   []int
}

func (u *sysUpdater) Update(ctx context.Context, groups []Group) (int64, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.sizes = append(u.sizes, len(groups))
	u.version++
	return u.version, nil
}

type sysProposer struct {
	failAt int // stage whose proposal fails (0: never)
}

func (p *sysProposer) Propose(ctx context.Context, runID string, stage int) (string, []byte, error) {
	if stage == p.failAt {
		return "", nil, errors.New("no idea")
	}
	return fmt.Sprintf("stage-%d", stage), fmt.Appendf(nil, `{"stage":%d}`, stage), nil
}

func sysConfig(clk Clock) SystemConfig {
	cfg := DefaultSystemConfig()
	cfg.Clock = clk
	cfg.TickInterval = 0
	cfg.LeaseTimeout = time.Minute
	return cfg
}

func sysStart(t *testing.T, cfg SystemConfig, runnerFor func(int) Runner, up Updater, pr Proposer) *System {
	t.Helper()
	s, err := newLocal(cfg, runnerFor, up, pr, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s
}

func TestSystemRunsEveryUnitExactlyOnce(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.InstancesPerUnit, cfg.LearnerBatch = 3, 2, 10, 4, 4
	// The runner tags every group with policy version 0; with the default
	// K=1 most would be stale (the logic tests cover that). Here every
	// group must reach the Updater.
	cfg.StalenessK = 1 << 40
	runner := &sysRunner{groupsPU: 2}
	up := &sysUpdater{}
	s := sysStart(t, cfg, func(int) Runner { return runner }, up, &sysProposer{})
	rep, err := s.Run(testCtx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stages) != 3 {
		t.Fatalf("stages %+v", rep.Stages)
	}
	for i, st := range rep.Stages {
		want := StageDone{RunID: "run", Stage: i, ConfigVersion: fmt.Sprintf("stage-%d", i), Units: 10, Completed: 10,
			Issued: 10, Last: i == 2}
		if st != want {
			t.Errorf("stage %d: %+v, want %+v", i, st, want)
		}
	}
	calls := runner.snapshot()
	seen := map[string]bool{}
	lastStage := 0
	for _, u := range calls {
		if seen[u.UnitID] {
			t.Errorf("unit %s ran twice", u.UnitID)
		}
		seen[u.UnitID] = true
		if u.Stage < lastStage {
			t.Errorf("unit of stage %d ran after stage %d started", u.Stage, lastStage)
		}
		lastStage = u.Stage
		if want := fmt.Sprintf(`{"stage":%d}`, u.Stage); u.Stage > 0 && string(u.ConfigJSON) != want {
			t.Errorf("unit %s config %s, want %s", u.UnitID, u.ConfigJSON, want)
		}
	}
	if len(seen) != 30 {
		t.Errorf("%d distinct units ran, want 30", len(seen))
	}
	l := rep.Learner
	if l.Groups != 60 || l.Used != 60 || l.Updates != 15 || l.Pending != 0 || l.Version != 15 || l.DuplicateUnits != 0 {
		t.Errorf("learner %+v", l)
	}
	for _, n := range up.sizes {
		if n != 4 {
			t.Errorf("update batch of %d groups, want 4", n)
		}
	}
	if rep.Engineer.Proposed != 2 || rep.Coordinator.Completed != 30 || rep.Coordinator.Duplicates != 0 {
		t.Errorf("engineer %+v coordinator %+v", rep.Engineer, rep.Coordinator)
	}
	var done uint64
	for _, r := range rep.Rollouts {
		done += r.Done
	}
	if done != 30 || rep.Node.MailboxFull != 0 || rep.Node.Wire.Encoded != 0 {
		t.Errorf("rollouts %+v node %+v", rep.Rollouts, rep.Node)
	}
	if _, err := s.Run(testCtx(t), 1); !errors.Is(err, ErrClosed) {
		t.Errorf("second Run: %v", err)
	}
}

// A rollout dies holding a unit; the unit is re-issued once the lease
// deadline passes (by the manual clock) and the stage completes.
func TestSystemRolloutDiesMidStage(t *testing.T) {
	clk := NewManualClock(coordT0)
	cfg := sysConfig(clk)
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage = 2, 1, 6
	doomed := &sysBlockingRunner{started: make(chan WorkUnit, 8), release: make(chan struct{})}
	// The healthy rollout waits until the doomed one holds a unit: on a
	// loaded machine it could otherwise finish all six first.
	healthy := &sysRunner{groupsPU: 1, done: make(chan string, 16), gate: make(chan struct{})}
	s := sysStart(t, cfg, func(i int) Runner {
		if i == 0 {
			return doomed
		}
		return healthy
	}, &sysUpdater{}, &sysProposer{})

	type result struct {
		rep RunReport
		err error
	}
	res := make(chan result, 1)
	go func() {
		rep, err := s.Run(testCtx(t), 1)
		res <- result{rep, err}
	}()
	lost := testWait(t, doomed.started, "doomed rollout to start a unit")
	close(healthy.gate)
	if err := s.node.System().Root.StopFuture(s.rollouts[0].PID).Wait(); err != nil {
		t.Fatal(err)
	}
	// The healthy rollout finishes the other five units; the stage cannot
	// end without the lost one.
	for range 5 {
		if id := testWait(t, healthy.done, "healthy units"); id == lost.UnitID {
			t.Fatalf("lost unit %s ran before its lease expired", id)
		}
	}
	clk.Advance(time.Minute)
	s.Tick()
	r := testWait(t, res, "run to finish after the lease expired")
	if r.err != nil {
		t.Fatal(r.err)
	}
	st := r.rep.Stages[0]
	if st.Completed != 6 || st.Reissued < 1 || st.Issued < 7 {
		t.Fatalf("stage %+v", st)
	}
	var redo *WorkUnit
	for _, u := range healthy.snapshot() {
		if u.UnitID == lost.UnitID {
			redo = &u
		}
	}
	if redo == nil || redo.Attempt < 1 || redo.LeaseDeadlineUnixMs != coordT0.Add(2*time.Minute).UnixMilli() {
		t.Fatalf("lost unit %s re-run as %+v, want attempt >= 1 leased after the clock moved", lost.UnitID, redo)
	}
	if r.rep.Coordinator.Completed != 6 {
		t.Fatalf("coordinator %+v", r.rep.Coordinator)
	}
}

// Late results of units already done, and second copies of a unit's groups,
// are counted and ignored by the actors.
func TestSystemDuplicatesIgnored(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.UnitsPerStage, cfg.LearnerBatch, cfg.StalenessK = 4, 1, 1<<40
	runner := &sysRunner{groupsPU: 1}
	up := &sysUpdater{}
	s := sysStart(t, cfg, func(int) Runner { return runner }, up, &sysProposer{})
	rep, err := s.Run(testCtx(t), 1)
	if err != nil {
		t.Fatal(err)
	}
	root := s.node.Root()
	unit := "run/s0/u2"
	for range 3 {
		root.RequestWithCustomSender(s.coordinator, &UnitDone{UnitID: unit, Node: "late"}, s.rollouts[1].PID)
	}
	root.Send(s.learner, &UnitGroups{UnitID: unit, Node: "late", Groups: []Group{{InstanceID: "x"}}})
	got, err := root.RequestFuture(s.coordinator, &coordSync{}, 10*time.Second).Result()
	if err != nil {
		t.Fatal(err)
	}
	if st := got.(CoordinatorStats); st.Duplicates != 3 || st.Completed != 4 {
		t.Fatalf("coordinator after duplicates %+v", st)
	}
	if _, err := root.RequestFuture(s.learner, &learnerSync{}, 10*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	l := s.learnerMetrics.snapshot()
	if l.DuplicateUnits != 1 || l.Groups != rep.Learner.Groups || l.Updates != 4 {
		t.Fatalf("learner after duplicate %+v (before %+v)", l, rep.Learner)
	}
}

// gateUpdater blocks its first call until release is closed.
type gateUpdater struct {
	release chan struct{}
	v       int64
}

func (u *gateUpdater) Update(ctx context.Context, groups []Group) (int64, error) {
	select {
	case <-u.release:
	case <-ctx.Done():
		return 0, ctx.Err()
	}
	u.v++
	return u.v, nil
}

// A learner stuck in an update fills its mailbox; rollouts block on it and
// their own mailboxes fill while the learner then publishes a version per
// group. The ack window keeps the learner from blocking on them, so the run
// finishes.
func TestSystemNoDeadlockUnderBackpressure(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.LearnerBatch, cfg.MailboxSize = 8, 2, 2000, 1, 64
	cfg.StalenessK = 1 << 40
	logger, full := testLoggerHook(t, "mailbox full")
	up := &gateUpdater{release: make(chan struct{})}
	s, err := newLocal(cfg, func(int) Runner { return &sysRunner{groupsPU: 2} }, up, &sysProposer{}, logger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	res := make(chan error, 1)
	var rep RunReport
	go func() {
		var err error
		rep, err = s.Run(testCtx(t), 2)
		res <- err
	}()
	testWait(t, full, "a mailbox to fill")
	close(up.release)
	if err := testWait(t, res, "the run to finish"); err != nil {
		t.Fatal(err)
	}
	if rep.Coordinator.Completed != 4000 || rep.Learner.Updates != 8000 || rep.Node.MailboxFull == 0 {
		t.Fatalf("coordinator %+v learner %+v node %+v", rep.Coordinator, rep.Learner, rep.Node)
	}
}

func TestSystemProposalFailureEndsRun(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.UnitsPerStage = 2
	s := sysStart(t, cfg, func(int) Runner { return &sysRunner{groupsPU: 1} }, &sysUpdater{}, &sysProposer{failAt: 2})
	rep, err := s.Run(testCtx(t), 4)
	if !errors.Is(err, ErrRunFailed) || !strings.Contains(err.Error(), "no idea") {
		t.Fatalf("err %v", err)
	}
	if len(rep.Stages) != 2 || rep.Engineer.Failed != 1 || rep.Engineer.Proposed != 1 {
		t.Fatalf("report %+v", rep)
	}
}

func TestSystemRunStopsWithContext(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	block := &sysBlockingRunner{started: make(chan WorkUnit, 64), release: make(chan struct{})}
	s := sysStart(t, cfg, func(int) Runner { return block }, &sysUpdater{}, &sysProposer{})
	ctx, cancel := context.WithCancel(testCtx(t))
	res := make(chan error, 1)
	go func() {
		_, err := s.Run(ctx, 2)
		res <- err
	}()
	testWait(t, block.started, "a unit to start")
	cancel()
	if err := testWait(t, res, "Run to return"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v", err)
	}
	// Close cancels the blocked runners and returns.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// With the wall clock and a real ticker the pipeline runs unattended.
func TestSystemWallClockTicker(t *testing.T) {
	cfg := DefaultSystemConfig()
	cfg.TickInterval = 5 * time.Millisecond
	cfg.UnitsPerStage = 5
	s := sysStart(t, cfg, func(int) Runner { return &sysRunner{groupsPU: 1} }, &sysUpdater{}, &sysProposer{})
	rep, err := s.Run(testCtx(t), 2)
	if err != nil || len(rep.Stages) != 2 || rep.Coordinator.Completed != 10 {
		t.Fatalf("%v %+v", err, rep)
	}
}

func TestSystemConfigValidate(t *testing.T) {
	if err := DefaultSystemConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		field string
		edit  func(*SystemConfig)
	}{
		{"RunID", func(c *SystemConfig) { c.RunID = "" }},
		{"Rollouts", func(c *SystemConfig) { c.Rollouts = 0 }},
		{"MaxInFlight", func(c *SystemConfig) { c.MaxInFlight = 0 }},
		{"UnitsPerStage", func(c *SystemConfig) { c.UnitsPerStage = -1 }},
		{"InstancesPerUnit", func(c *SystemConfig) { c.InstancesPerUnit = 0 }},
		{"LeaseTimeout", func(c *SystemConfig) { c.LeaseTimeout = 0 }},
		{"TickInterval", func(c *SystemConfig) { c.TickInterval = -1 }},
		{"LearnerBatch", func(c *SystemConfig) { c.LearnerBatch = 0 }},
		{"MailboxSize", func(c *SystemConfig) { c.Rollouts, c.MaxInFlight = 64, 8 }},
		{"Clock", func(c *SystemConfig) { c.Clock = nil }},
	} {
		cfg := DefaultSystemConfig()
		c.edit(&cfg)
		err := cfg.Validate()
		var fe *fielderr.Error
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
	if _, err := NewLocal(DefaultSystemConfig(), nil, &sysUpdater{}, &sysProposer{}, nil); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("nil runner: %v", err)
	}
}

// A post to a full mailbox is counted and logged.
func TestMailboxFullIsCounted(t *testing.T) {
	n := NewHost("n", NewRegistry(), testLogger(t))
	t.Cleanup(n.Close)
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	pid, err := n.Root().SpawnNamed(n.Props("slow", 2, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			if _, ok := c.Message().(int); ok {
				entered <- struct{}{}
				<-gate
			}
		})
	}), "slow")
	if err != nil {
		t.Fatal(err)
	}
	n.Root().Send(pid, 1)
	testWait(t, entered, "the actor to take message 1")
	n.Root().Send(pid, 2)
	if got := n.Stats().MailboxFull; got != 0 {
		t.Fatalf("MailboxFull = %d with room left", got)
	}
	n.Root().Send(pid, 3) // fills the ring (capacity 2)
	if got := n.Stats().MailboxFull; got != 1 {
		t.Fatalf("MailboxFull = %d, want 1", got)
	}
	close(gate)
	for range 2 {
		testWait(t, entered, "the backlog to drain")
	}
	if err := n.System().Root.StopFuture(pid).Wait(); err != nil {
		t.Fatal(err)
	}
}

type actorFunc func(c actor.Context)

func (f actorFunc) Receive(c actor.Context) { f(c) }

// The learner actor keeps one PolicyVersion in flight per subscriber and
// sends the latest when the subscriber acks.
func TestLearnerActorPolicyWindow(t *testing.T) {
	n := NewHost("n", wireRegistry(t), testLogger(t))
	t.Cleanup(n.Close)
	up := &sysUpdater{}
	m := &learnerMetrics{}
	learner, err := n.Root().SpawnNamed(n.Props(LearnerName, 64, func() actor.Actor {
		return &learnerActor{logic: newLearner(1, 1<<40, 0, m), update: up, subs: map[string]*actor.PID{},
			logger: testLogger(t)}
	}), LearnerName)
	if err != nil {
		t.Fatal(err)
	}
	versions := make(chan int64, 16)
	type ackNow struct{}
	var last *actor.PID
	sub, err := n.Root().SpawnNamed(n.Props("sub", 64, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			switch m := c.Message().(type) {
			case *actor.Started:
				c.Request(learner, &SubscribePolicy{Node: "n"})
			case *PolicyVersion:
				last = c.Sender()
				versions <- m.Version
			case *ackNow:
				c.Request(last, &PolicyAck{Node: "n"})
			}
		})
	}), "sub")
	if err != nil {
		t.Fatal(err)
	}
	if v := testWait(t, versions, "the version on subscribe"); v != 0 {
		t.Fatalf("first version %d", v)
	}
	for i := range 3 {
		n.Root().Send(learner, lrnGroups(fmt.Sprint("u", i), 0, 0))
	}
	if _, err := n.Root().RequestFuture(learner, &learnerSync{}, 10*time.Second).Result(); err != nil {
		t.Fatal(err)
	}
	if m.updates.Load() != 3 || len(versions) != 0 {
		t.Fatalf("updates %d, versions sent while one was outstanding: %d", m.updates.Load(), len(versions))
	}
	n.Root().Send(sub, &ackNow{})
	if v := testWait(t, versions, "the latest version after the ack"); v != 3 {
		t.Fatalf("after ack got version %d, want 3", v)
	}
}

// A rollout actor subscribes to policy versions when it starts and acks each
// one to its sender (with itself as the ack's sender).
func TestRolloutActorAcksPolicy(t *testing.T) {
	n := NewHost("n", wireRegistry(t), testLogger(t))
	t.Cleanup(n.Close)
	sink, err := n.Root().SpawnNamed(n.Props("coord", 64, func() actor.Actor { return actorFunc(func(actor.Context) {}) }), "coord")
	if err != nil {
		t.Fatal(err)
	}
	type ack struct {
		from    *actor.PID
		version int64
	}
	acks := make(chan ack, 4)
	learner, err := n.Root().SpawnNamed(n.Props("learner", 64, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			switch m := c.Message().(type) {
			case *SubscribePolicy:
				c.Request(c.Sender(), &PolicyVersion{Version: 5})
			case *PolicyAck:
				acks <- ack{c.Sender(), m.Version}
			}
		})
	}), "learner")
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.SpawnRollout(RolloutConfig{Name: "r", Coordinator: sink, Learner: learner, MaxInFlight: 1}, &sysRunner{})
	if err != nil {
		t.Fatal(err)
	}
	a := testWait(t, acks, "the rollout's ack")
	if a.from == nil || !a.from.Equal(h.PID) || a.version != 5 {
		t.Fatalf("ack %+v, want version 5 from %v", a, h.PID)
	}
	if err := n.System().Root.StopFuture(h.PID).Wait(); err != nil {
		t.Fatal(err)
	}
	if st := h.Stats(); st.Policy != 5 || st.Node != "n" {
		t.Fatalf("stats %+v", st)
	}
}

// Shutdown stops an actor from a message (as a remote driver would).
func TestShutdownStopsActor(t *testing.T) {
	n := NewHost("n", wireRegistry(t), testLogger(t))
	t.Cleanup(n.Close)
	sink, err := n.Root().SpawnNamed(n.Props("sink", 64, func() actor.Actor { return actorFunc(func(actor.Context) {}) }), "sink")
	if err != nil {
		t.Fatal(err)
	}
	h, err := n.SpawnRollout(RolloutConfig{Name: "r", Coordinator: sink, Learner: sink, MaxInFlight: 1}, &sysRunner{})
	if err != nil {
		t.Fatal(err)
	}
	gone := make(chan struct{})
	if _, err := n.Root().SpawnNamed(n.Props("watcher", 64, func() actor.Actor {
		return actorFunc(func(c actor.Context) {
			switch c.Message().(type) {
			case *actor.Started:
				c.Watch(h.PID)
				c.Send(h.PID, &Shutdown{Reason: "test"})
			case *actor.Terminated:
				close(gone)
			}
		})
	}), "watcher"); err != nil {
		t.Fatal(err)
	}
	testWait(t, gone, "the rollout to stop")
}
