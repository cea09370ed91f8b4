package actors

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Dispatch paced by the learner (SystemConfig.MaxLag) and the learner's
// discard accounting.

func TestLearnerLogicDiscardReasons(t *testing.T) {
	m := &learnerMetrics{}
	// B=2, K=1, late groups kept up to 3 versions old.
	l := newLearner(2, 1, 3, m)
	l.updated(0, 5, nil) // version 5
	// Lags 0, 2 (kept late), 3 (kept late), 4 (dropped as stale).
	b := l.groups(lrnGroups("u1", 0, 5, 3, 2, 1))
	if len(b) != 1 || len(l.pending) != 1 {
		t.Fatalf("batches %v pending %d", b, len(l.pending))
	}
	st := m.snapshot()
	if st.Stale != 3 || st.LateKept != 2 || st.DiscardedStale != 1 || st.Retired != 1 || st.Groups != 4 {
		t.Fatalf("after u1: %+v", st)
	}
	// A duplicate copy: its groups are discarded, not retired (the
	// coordinator counted the unit once).
	l.groups(lrnGroups("u1", 0, 5, 5, 5))
	// A unit of a stage two back: discarded and retired.
	l.stageStart(1)
	l.stageStart(2)
	l.groups(lrnGroups("old", 0, 5, 5))
	l.updated(2, 6, nil)
	st = m.snapshot()
	if st.DiscardedDuplicate != 3 || st.DiscardedLateStage != 2 || st.Retired != 1+2+2 || st.DuplicateUnits != 1 || st.LateUnits != 1 {
		t.Fatalf("after duplicate and late stage: %+v", st)
	}
	if st.Discarded() != 6 || st.Arrived() != 4+3+2 {
		t.Fatalf("discarded %d arrived %d", st.Discarded(), st.Arrived())
	}
	if got, want := st.DiscardShare(), 6.0/9; got != want {
		t.Fatalf("share %v, want %v", got, want)
	}
	// keepK below k keeps nothing late.
	m2 := &learnerMetrics{}
	l2 := newLearner(2, 2, 0, m2)
	l2.updated(0, 4, nil)
	l2.groups(lrnGroups("u", 0, 1, 2))
	if st := m2.snapshot(); st.DiscardedStale != 1 || st.LateKept != 0 || len(l2.pending) != 1 {
		t.Fatalf("keepK < k: %+v", st)
	}
}

// flowCoord is a coordinator with pacing and n rollouts of many credits,
// running a one-stage plan of units of 2 groups.
func flowCoord(t *testing.T, clk *ManualClock, maxLag int64, batch, units, workers int) (*coordinator, *coordMetrics) {
	t.Helper()
	m := &coordMetrics{}
	c := newCoordinator(clk, time.Minute, maxLag, batch, m)
	for i := range workers {
		c.requestWork(fmt.Sprintf("w%d", i), RequestWork{Node: "n", Credits: 100})
	}
	plan := coordPlan(1, units)
	plan.InstancesPerUnit = 2
	if _, err := c.start(plan); err != nil {
		t.Fatal(err)
	}
	for i := range workers {
		c.ack(fmt.Sprintf("w%d", i), ConfigAck{Version: "v0"})
	}
	return c, m
}

func issued(out []coordOut) []*WorkUnit {
	var us []*WorkUnit
	for _, o := range out {
		if u, ok := o.msg.(*WorkUnit); ok {
			us = append(us, u)
		}
	}
	return us
}

func TestCoordinatorFlowWindow(t *testing.T) {
	clk := NewManualClock(coordT0)
	c := newCoordinator(clk, time.Minute, 1, 4, &coordMetrics{}) // window (1+1)·4 = 8 groups
	m := c.metrics
	for i := range 3 {
		c.requestWork(fmt.Sprintf("w%d", i), RequestWork{Node: "n", Credits: 100})
	}
	plan := coordPlan(1, 12)
	plan.InstancesPerUnit = 2
	if _, err := c.start(plan); err != nil {
		t.Fatal(err)
	}
	c.ack("w0", ConfigAck{Version: "v0"})
	c.ack("w1", ConfigAck{Version: "v0"})
	out := c.ack("w2", ConfigAck{Version: "v0"})
	us := issued(out)
	if len(us) != 4 { // 4 units × 2 groups = the window
		t.Fatalf("issued %d units at start, want 4", len(us))
	}
	if st := m.snapshot(); st.Outstanding != 8 || st.Window != 8 || st.Queued != 8 {
		t.Fatalf("stats %+v", st)
	}
	for _, u := range us {
		if u.PolicyVersion != 0 {
			t.Fatalf("unit %s policy version %d", u.UnitID, u.PolicyVersion)
		}
	}
	// Rollouts idle with credits: waiting for the learner from now.
	clk.Advance(3 * time.Second)
	// Two units finish; nothing goes out until the learner retires groups.
	if out := c.unitDone(holderOf(c, us[0].UnitID), UnitDone{UnitID: us[0].UnitID, GroupCount: 2}); len(issued(out)) != 0 {
		t.Fatal("unit issued before the learner retired anything")
	}
	c.unitDone(holderOf(c, us[1].UnitID), UnitDone{UnitID: us[1].UnitID, GroupCount: 2})
	// The learner trains one batch (4 groups): version 1, two more units.
	out = c.learnerProgress(learnerState{version: 1, retired: 4})
	us2 := issued(out)
	if len(us2) != 2 || us2[0].PolicyVersion != 1 {
		t.Fatalf("after one update: %d units %+v", len(us2), us2)
	}
	var waits []learnerWait
	for _, o := range out {
		if o.to == toWaitHook {
			waits = append(waits, o.msg.(learnerWait))
		}
	}
	if len(waits) != 1 || waits[0].to.Sub(waits[0].from) != 3*time.Second || waits[0].stage != 0 {
		t.Fatalf("waits %+v", waits)
	}
	if st := m.snapshot(); st.LearnerWait != 3*time.Second || c.cur.LearnerWaitMs != 3000 {
		t.Fatalf("learner wait %v / %d ms", st.LearnerWait, c.cur.LearnerWaitMs)
	}
	// A unit that comes back with fewer groups than its range frees the
	// difference; one put back in the queue frees all of its own.
	before := c.flow.outstanding()
	c.unitDone(holderOf(c, us[2].UnitID), UnitDone{UnitID: us[2].UnitID, GroupCount: 1})
	if got := c.flow.outstanding(); got != before-1 {
		t.Fatalf("outstanding %d after a 1-group unit, want %d", got, before-1)
	}
	out = c.unitRejected(holderOf(c, us[3].UnitID), UnitRejected{UnitID: us[3].UnitID, Reason: "x"})
	// 8-1-2 = 5 outstanding after the rejection: one unit fits again.
	if got := len(issued(out)); got != 1 || c.flow.outstanding() != 7 {
		t.Fatalf("after rejection: %d units issued, outstanding %d", got, c.flow.outstanding())
	}
}

func holderOf(c *coordinator, id string) string { return c.units[c.index[id]].holder }

// Below one batch outstanding a unit always goes out, even one bigger than
// the window: holding it would stall the learner.
func TestCoordinatorFlowNeverStalls(t *testing.T) {
	clk := NewManualClock(coordT0)
	c, _ := flowCoord(t, clk, 0, 1, 3, 2) // window 1 group, units of 2
	if n := c.flow.outstanding(); n != 2 {
		t.Fatalf("outstanding %d, want one unit of 2 groups", n)
	}
	us := c.units
	if us[0].status != unitLeased || us[1].status != unitQueued {
		t.Fatalf("statuses %v %v", us[0].status, us[1].status)
	}
	// The learner discarded one group and used the other.
	out := c.learnerProgress(learnerState{version: 1, retired: 2})
	if len(issued(out)) != 1 {
		t.Fatal("next unit held with nothing outstanding")
	}
}

// Groups lost on their way to the learner are written off once units
// have waited a whole lease and the learner has been silent as long.
func TestCoordinatorFlowResync(t *testing.T) {
	clk := NewManualClock(coordT0)
	c, m := flowCoord(t, clk, 0, 4, 6, 2) // window 4 groups: 2 units
	var first []string
	for i := range c.units {
		if c.units[i].status == unitLeased {
			first = append(first, c.units[i].unit.UnitID)
		}
	}
	if len(first) != 2 {
		t.Fatalf("%d units out, want 2", len(first))
	}
	// Both finish; their groups never reach the learner.
	for _, id := range first {
		c.unitDone(holderOf(c, id), UnitDone{UnitID: id, GroupCount: 2})
	}
	clk.Advance(30 * time.Second)
	if out := c.tick(); len(issued(out)) != 0 {
		t.Fatal("resynced before a lease passed")
	}
	clk.Advance(31 * time.Second)
	out := c.tick()
	if len(issued(out)) != 2 || m.snapshot().FlowResyncs != 1 {
		t.Fatalf("after a silent lease: %d units, %d resyncs", len(issued(out)), m.snapshot().FlowResyncs)
	}
}

// paceRunner plays units on the policy version the unit was issued at, as a
// rollout node loads it, and finishes them in the order they were issued
// (unit ids "<run>/s<stage>/u<index>", released by the test); it records
// the most units it ever ran at once.
type paceRunner struct {
	units         int // units per stage
	running, peak atomic.Int64
	mu            sync.Mutex
	waiting       map[int]chan struct{} // issue sequence → release
	poke          chan struct{}
}

func (r *paceRunner) RunUnit(ctx context.Context, u WorkUnit) (UnitDone, error) {
	n := r.running.Add(1)
	defer r.running.Add(-1)
	for {
		p := r.peak.Load()
		if n <= p || r.peak.CompareAndSwap(p, n) {
			break
		}
	}
	var stage, idx int
	if _, err := fmt.Sscanf(u.UnitID, "run/s%d/u%d", &stage, &idx); err != nil {
		return UnitDone{}, err
	}
	ch := make(chan struct{})
	r.mu.Lock()
	r.waiting[stage*r.units+idx] = ch
	r.mu.Unlock()
	select {
	case r.poke <- struct{}{}:
	default:
	}
	select {
	case <-ch:
	case <-ctx.Done():
		return UnitDone{}, ctx.Err()
	}
	d := UnitDone{UnitID: u.UnitID}
	for i := u.Lo; i < u.Hi; i++ {
		d.Groups = append(d.Groups, Group{InstanceID: fmt.Sprint(i), PolicyVersion: u.PolicyVersion})
	}
	return d, nil
}

// release lets unit seq finish if it is running.
func (r *paceRunner) release(seq int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch, ok := r.waiting[seq]
	if ok {
		close(ch)
		delete(r.waiting, seq)
	}
	return ok
}

// paceUpdater bumps the version; each update waits for the test.
type paceUpdater struct {
	mu      sync.Mutex
	version int64
	gate    chan struct{}
}

func (u *paceUpdater) Update(ctx context.Context, gs []Group) (int64, error) {
	select {
	case <-u.gate:
	case <-ctx.Done():
		return u.version, ctx.Err()
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	u.version++
	return u.version, nil
}

// With 16 rollout slots and a learner that only moves when the test lets
// it, pacing keeps at most the window's units in flight and, units
// finishing in issue order, every group within MaxLag versions: the
// learner drops nothing although its bound K equals MaxLag.
func TestSystemPacedByLearner(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.InstancesPerUnit, cfg.LearnerBatch = 4, 4, 24, 2, 4
	cfg.StalenessK, cfg.MaxLag = 1, 1
	var waits atomic.Int64
	cfg.OnLearnerWait = func(int, time.Time, time.Time) { waits.Add(1) }
	runner := &paceRunner{units: cfg.UnitsPerStage, waiting: map[int]chan struct{}{}, poke: make(chan struct{}, 1)}
	up := &paceUpdater{gate: make(chan struct{})}
	s := sysStart(t, cfg, func(int) Runner { return runner }, up, &sysProposer{})
	// One goroutine moves the runners, in issue order, and the learner:
	// whichever can go goes.
	ctx, cancel := context.WithCancel(testCtx(t))
	defer cancel()
	go func() {
		next := 0
		for {
			// Release unit next once every earlier unit's groups reached
			// the learner: groups arrive in issue order.
			if s.learnerMetrics.groups.Load() == uint64(2*next) && runner.release(next) {
				next++
				continue
			}
			// The learner's receipt of groups sends no event the test can
			// wait on: re-check every millisecond (only the test's speed
			// depends on it, not what it checks).
			t := time.NewTimer(time.Millisecond)
			select {
			case <-runner.poke:
			case up.gate <- struct{}{}:
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return
			}
			t.Stop()
		}
	}()
	rep, err := s.Run(testCtx(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	l := rep.Learner
	if l.Stale != 0 || l.Discarded() != 0 || l.Used != 96 || l.Updates != 24 {
		t.Errorf("learner %+v", l)
	}
	// Window (1+1)·4 = 8 groups: 4 units of 2.
	if p := runner.peak.Load(); p > 4 {
		t.Errorf("%d units ran at once, window allows 4", p)
	}
	if rep.Coordinator.Window != 8 {
		t.Errorf("coordinator %+v", rep.Coordinator)
	}
	t.Logf("peak units in flight %d, learner waits %d, coordinator %+v", runner.peak.Load(), waits.Load(), rep.Coordinator)
}

// A paced stage ends once the learner trained on its full batches: the
// stage's StageDone waits for the learner, and a learner that never hears
// of some groups holds it one lease at most.
func TestCoordinatorStageDrains(t *testing.T) {
	events := func(out []coordOut) (done int) {
		for _, o := range out {
			if _, ok := o.msg.(*StageDone); ok {
				done++
			}
		}
		return done
	}
	for _, lost := range []bool{false, true} {
		clk := NewManualClock(coordT0)
		c, _ := flowCoord(t, clk, 1, 2, 3, 3) // window 4 groups; 3 units of 2 groups: 1 batch + a part batch
		finish := func(id string) []coordOut {
			return c.unitDone(holderOf(c, id), UnitDone{UnitID: id, GroupCount: 2})
		}
		for _, id := range []string{"r/s0/u0", "r/s0/u1"} {
			if n := events(finish(id)); n != 0 {
				t.Fatal("stage done with units left")
			}
		}
		if out := c.learnerProgress(learnerState{version: 1, retired: 2, pending: 2}); len(issued(out)) != 1 {
			t.Fatal("last unit not issued")
		}
		if n := events(finish("r/s0/u2")); n != 0 || c.phase != phaseDraining {
			t.Fatalf("stage done before the learner trained (phase %d)", c.phase)
		}
		if !lost {
			// The learner trains the second batch; 2 groups wait for a third.
			if n := events(c.learnerProgress(learnerState{version: 2, retired: 4, pending: 2})); n != 1 {
				t.Fatal("no StageDone once the learner drained")
			}
			continue
		}
		clk.Advance(59 * time.Second)
		if n := events(c.tick()); n != 0 {
			t.Fatal("gave up on the learner before a lease")
		}
		clk.Advance(2 * time.Second)
		if n := events(c.tick()); n != 1 || c.metrics.snapshot().FlowResyncs != 1 {
			t.Fatalf("silent learner: %d StageDone, %d resyncs", n, c.metrics.snapshot().FlowResyncs)
		}
	}
}

// A paced run whose stages end on a part batch: the learner's pending
// groups are reported, so the draining stage ends.
func TestSystemPacedPartBatch(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.InstancesPerUnit, cfg.LearnerBatch = 2, 2, 3, 3, 4
	cfg.StalenessK, cfg.MaxLag = 1<<40, 1
	runner := &sysRunner{groupsPU: 3}
	s := sysStart(t, cfg, func(int) Runner { return runner }, &sysUpdater{}, &sysProposer{})
	rep, err := s.Run(testCtx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	// 3 stages × 9 groups = 27: 6 updates of 4, 3 groups left pending.
	if l := rep.Learner; l.Used != 24 || l.Pending != 3 || len(rep.Stages) != 3 {
		t.Fatalf("learner %+v, %d stages", l, len(rep.Stages))
	}
}
