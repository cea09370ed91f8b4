package actors

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

var coordT0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func coordPlan(stages, units int) StartRun {
	return StartRun{RunID: "r", Stages: stages, Units: units, InstancesPerUnit: 3, Split: "train", Seed: 7,
		Config: ConfigUpdate{Version: "v0", Stage: 0, JSON: []byte(`{"s":0}`)}}
}

// coordSplit sorts outputs: units and configs per worker, subscriber events.
type coordSplit struct {
	units   map[string][]*WorkUnit
	configs map[string][]*ConfigUpdate
	events  []any
}

func coordOuts(out []coordOut) coordSplit {
	s := coordSplit{units: map[string][]*WorkUnit{}, configs: map[string][]*ConfigUpdate{}}
	for _, o := range out {
		switch m := o.msg.(type) {
		case *WorkUnit:
			s.units[o.worker] = append(s.units[o.worker], m)
		case *ConfigUpdate:
			s.configs[o.worker] = append(s.configs[o.worker], m)
		default:
			if o.to != toSubscribers {
				panic(fmt.Sprintf("unexpected %T to worker", m))
			}
			s.events = append(s.events, m)
		}
	}
	return s
}

func (s coordSplit) nUnits() int {
	n := 0
	for _, u := range s.units {
		n += len(u)
	}
	return n
}

func TestCoordinatorStageLifecycle(t *testing.T) {
	clk := NewManualClock(coordT0)
	m := &coordMetrics{}
	c := newCoordinator(clk, time.Minute, -1, 1, m)
	if out := c.requestWork("w1", RequestWork{Node: "n1", Credits: 2}); len(out) != 0 {
		t.Fatalf("idle coordinator sent %v", out)
	}
	c.requestWork("w2", RequestWork{Node: "n2", Credits: 2})

	out, err := c.start(coordPlan(2, 5))
	if err != nil {
		t.Fatal(err)
	}
	s := coordOuts(out)
	if len(s.configs["w1"]) != 1 || len(s.configs["w2"]) != 1 || s.nUnits() != 0 || len(s.events) != 0 {
		t.Fatalf("start: want one config per worker and nothing else, got %+v", s)
	}
	if _, err := c.start(coordPlan(2, 5)); !errors.Is(err, ErrBadPlan) {
		t.Fatalf("second start: %v", err)
	}
	if s := coordOuts(c.ack("w1", ConfigAck{Node: "n1", Version: "v0"})); s.nUnits() != 0 || len(s.events) != 0 {
		t.Fatalf("stage started before every rollout acked: %+v", s)
	}
	s = coordOuts(c.ack("w2", ConfigAck{Node: "n2", Version: "v0"}))
	if len(s.events) != 1 || len(s.units["w1"]) != 2 || len(s.units["w2"]) != 2 {
		t.Fatalf("after acks: want StageStart and 2+2 units, got %+v", s)
	}
	if st, ok := s.events[0].(*StageStart); !ok || st.Units != 5 || st.ConfigVersion != "v0" {
		t.Fatalf("event %#v", s.events[0])
	}
	if q := m.snapshot().Queued; q != 1 { // 5 units, 4 credits
		t.Fatalf("queue depth %d after leasing 4 of 5 units, want 1", q)
	}
	seen := map[string]bool{}
	for w, us := range s.units {
		for _, u := range us {
			if u.ConfigVersion != "v0" || string(u.ConfigJSON) != `{"s":0}` || u.Hi-u.Lo != 3 || u.Lo%3 != 0 ||
				u.LeaseDeadlineUnixMs != coordT0.Add(time.Minute).UnixMilli() || u.Attempt != 0 || u.Seed == 0 {
				t.Errorf("%s got unit %+v", w, u)
			}
			seen[u.UnitID] = true
		}
	}
	// Finish the four units; the fifth goes out once a credit comes back.
	for w, us := range s.units {
		for _, u := range us {
			if out := c.unitDone(w, UnitDone{UnitID: u.UnitID}); len(out) != 0 {
				t.Fatalf("unitDone sent %v without credit", out)
			}
		}
	}
	s = coordOuts(c.requestWork("w2", RequestWork{Node: "n2", Credits: 1}))
	if len(s.units["w2"]) != 1 || seen[s.units["w2"][0].UnitID] {
		t.Fatalf("want the fifth unit on w2, got %+v", s)
	}
	s = coordOuts(c.unitDone("w2", UnitDone{UnitID: s.units["w2"][0].UnitID}))
	if len(s.events) != 1 {
		t.Fatalf("want StageDone, got %+v", s)
	}
	done := s.events[0].(*StageDone)
	if done.Units != 5 || done.Completed != 5 || done.Issued != 5 || done.Reissued != 0 || done.Last {
		t.Fatalf("StageDone %+v", done)
	}

	// Stale and out-of-order configs are rejected and counted.
	for _, u := range []ConfigUpdate{{Version: "v0", Stage: 0}, {Version: "v2", Stage: 2}, {Version: "", Stage: 1}} {
		if _, err := c.configUpdate(u); !errors.Is(err, ErrStaleConfig) {
			t.Errorf("configUpdate(%+v) = %v, want ErrStaleConfig", u, err)
		}
	}
	if got := m.configRejected.Load(); got != 3 {
		t.Errorf("ConfigRejected = %d, want 3", got)
	}
	out, err = c.configUpdate(ConfigUpdate{Version: "v1", Stage: 1, JSON: []byte("{}")})
	if err != nil || len(coordOuts(out).configs) != 2 {
		t.Fatalf("configUpdate v1: %v %+v", err, out)
	}
	if _, err := c.configUpdate(ConfigUpdate{Version: "v1b", Stage: 1}); !errors.Is(err, ErrStaleConfig) {
		t.Errorf("second version for a stage accepted: %v", err)
	}
	// An ack for the old version does not count.
	if s := coordOuts(c.ack("w2", ConfigAck{Version: "v0"})); len(s.events) != 0 {
		t.Fatalf("stale ack started the stage")
	}
	// The rollouts give their credits back, as they do after each unit.
	c.requestWork("w1", RequestWork{Credits: 2})
	c.requestWork("w2", RequestWork{Credits: 3})
	c.ack("w1", ConfigAck{Version: "v1"})
	s = coordOuts(c.ack("w2", ConfigAck{Version: "v1"}))
	if len(s.events) != 1 || len(s.units["w1"]) != 2 || len(s.units["w2"]) != 3 {
		t.Fatalf("stage 1 start: %+v", s)
	}
	var last []coordOut
	for w, us := range s.units {
		for _, u := range us {
			if u.Stage != 1 || u.ConfigVersion != "v1" {
				t.Errorf("stage 1 unit %+v", u)
			}
			last = c.unitDone(w, UnitDone{UnitID: u.UnitID})
		}
	}
	ev := coordOuts(last).events
	if len(ev) != 2 || !ev[0].(*StageDone).Last || ev[1].(*RunDone).Stages != 2 || ev[1].(*RunDone).Error != "" {
		t.Fatalf("final events %+v", ev)
	}
	st := m.snapshot()
	if st.Completed != 10 || st.Issued != 10 || st.Duplicates != 0 || st.StaleAcks != 1 {
		t.Errorf("stats %+v", st)
	}
}

func TestCoordinatorLeaseExpiryReissuesAndDeduplicates(t *testing.T) {
	clk := NewManualClock(coordT0)
	m := &coordMetrics{}
	c := newCoordinator(clk, time.Minute, -1, 1, m)
	c.requestWork("slow", RequestWork{Node: "a", Credits: 1})
	c.requestWork("fast", RequestWork{Node: "b", Credits: 1})
	c.start(coordPlan(1, 3))
	c.ack("slow", ConfigAck{Version: "v0"})
	s := coordOuts(c.ack("fast", ConfigAck{Version: "v0"}))
	u0, u1 := s.units["slow"][0], s.units["fast"][0]
	c.unitDone("fast", UnitDone{UnitID: u1.UnitID})
	s = coordOuts(c.requestWork("fast", RequestWork{Credits: 1}))
	u2 := s.units["fast"][0]

	// Nothing expires before the deadline.
	clk.Advance(59 * time.Second)
	if out := c.tick(); len(out) != 0 || m.reissued.Load() != 0 {
		t.Fatalf("early tick re-issued: %v", out)
	}
	clk.Advance(time.Second)
	if out := c.tick(); len(out) != 0 {
		t.Fatalf("suspect holders got units: %v", out)
	}
	if m.reissued.Load() != 2 {
		t.Fatalf("reissued = %d, want 2", m.reissued.Load())
	}
	// fast finishes u2 late: accepted (it is still the first result), and
	// with its credit back it gets u0 again.
	c.unitDone("fast", UnitDone{UnitID: u2.UnitID})
	s = coordOuts(c.requestWork("fast", RequestWork{Credits: 1}))
	if len(s.units["fast"]) != 1 || s.units["fast"][0].UnitID != u0.UnitID || s.units["fast"][0].Attempt != 1 {
		t.Fatalf("want u0 re-issued to fast as attempt 1, got %+v", s)
	}
	// slow's original copy of u0 arrives first: it wins.
	s = coordOuts(c.unitDone("slow", UnitDone{UnitID: u0.UnitID}))
	if len(s.events) != 2 {
		t.Fatalf("want StageDone+RunDone, got %+v", s)
	}
	done := s.events[0].(*StageDone)
	// u2 was re-queued but fast finished it before anyone leased it again:
	// 4 leases for 3 units.
	if done.Completed != 3 || done.Issued != 4 || done.Reissued != 2 || done.Duplicates != 0 {
		t.Fatalf("StageDone %+v", done)
	}
	// fast's copy of u0 and a replay of u1 are duplicates.
	c.unitDone("fast", UnitDone{UnitID: u0.UnitID})
	c.unitDone("fast", UnitDone{UnitID: u1.UnitID})
	c.unitDone("fast", UnitDone{UnitID: "r/s9/u9"})
	st := m.snapshot()
	if st.Duplicates != 2 || st.Completed != 3 || st.UnknownUnits != 1 {
		t.Fatalf("stats %+v", st)
	}
}

func TestCoordinatorNodeLeftReissuesAtOnce(t *testing.T) {
	c := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
	c.requestWork("a1", RequestWork{Node: "a", Credits: 2})
	c.requestWork("a2", RequestWork{Node: "a", Credits: 2})
	c.requestWork("b1", RequestWork{Node: "b", Credits: 1})
	c.start(coordPlan(1, 6))
	c.ack("a1", ConfigAck{Version: "v0"})
	c.ack("a2", ConfigAck{Version: "v0"})
	s := coordOuts(c.ack("b1", ConfigAck{Version: "v0"}))
	if s.nUnits() != 5 {
		t.Fatalf("want 5 units out, got %d", s.nUnits())
	}
	c.unitDone("b1", UnitDone{UnitID: s.units["b1"][0].UnitID})
	s2 := coordOuts(c.requestWork("b1", RequestWork{Credits: 3}))
	if s2.nUnits() != 1 {
		t.Fatalf("want the sixth unit on b1, got %+v", s2)
	}
	// Node a leaves holding 4 units: they go to b1 at once (2 credits left).
	s3 := coordOuts(c.nodeLeft("a"))
	if len(s3.units["b1"]) != 2 {
		t.Fatalf("want 2 re-issued units on b1, got %+v", s3)
	}
	if c.cur.Reissued != 4 {
		t.Fatalf("reissued %d, want 4", c.cur.Reissued)
	}
	// Units from a's rollouts after they left are still accepted (first wins).
	for _, u := range s.units["a1"] {
		c.unitDone("a1", UnitDone{UnitID: u.UnitID})
	}
	if c.cur.Completed != 3 {
		t.Fatalf("completed %d, want 3", c.cur.Completed)
	}
}

func TestCoordinatorRejectedUnitNeedsConfig(t *testing.T) {
	c := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
	c.requestWork("w", RequestWork{Node: "n", Credits: 1})
	c.start(coordPlan(1, 1))
	s := coordOuts(c.ack("w", ConfigAck{Version: "v0"}))
	u := s.units["w"][0]
	s = coordOuts(c.unitRejected("w", UnitRejected{UnitID: u.UnitID, NeedConfig: true}))
	if len(s.configs["w"]) != 1 || s.nUnits() != 0 {
		t.Fatalf("want the config re-sent and no unit, got %+v", s)
	}
	if s := coordOuts(c.requestWork("w", RequestWork{Credits: 1})); s.nUnits() != 0 {
		t.Fatalf("unit sent before the re-ack: %+v", s)
	}
	s = coordOuts(c.ack("w", ConfigAck{Version: "v0"}))
	if s.nUnits() != 1 || s.units["w"][0].UnitID != u.UnitID || s.units["w"][0].Attempt != 1 {
		t.Fatalf("want the rejected unit again, got %+v", s)
	}
}

func TestCoordinatorAckGate(t *testing.T) {
	clk := NewManualClock(coordT0)
	c := newCoordinator(clk, time.Minute, -1, 1, &coordMetrics{})
	c.start(coordPlan(1, 2))
	// No rollout yet: nothing can start.
	s := coordOuts(c.requestWork("w1", RequestWork{Node: "n1", Credits: 1}))
	if len(s.configs["w1"]) != 1 {
		t.Fatalf("late joiner did not get the config: %+v", s)
	}
	c.requestWork("dead", RequestWork{Node: "n2", Credits: 1}) // joins, never acks
	if s := coordOuts(c.ack("w1", ConfigAck{Version: "v0"})); len(s.events) != 0 {
		t.Fatal("stage started with an un-acked live rollout")
	}
	clk.Advance(30 * time.Second)
	if s := coordOuts(c.tick()); len(s.events) != 0 {
		t.Fatal("stage started before the ack deadline")
	}
	clk.Advance(30 * time.Second)
	s = coordOuts(c.tick())
	if len(s.events) != 1 || len(s.units["w1"]) != 1 || len(s.units["dead"]) != 0 {
		t.Fatalf("after the ack deadline: want StageStart and one unit on w1, got %+v", s)
	}
}

func TestCoordinatorBadPlanEndsRun(t *testing.T) {
	c := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
	for _, p := range []StartRun{
		{RunID: "a", Stages: 0, Units: 1, InstancesPerUnit: 1, Config: ConfigUpdate{Version: "v"}},
		{RunID: "b", Stages: 1, Units: 1, InstancesPerUnit: 0, Config: ConfigUpdate{Version: "v"}},
		{RunID: "c", Stages: 1, Units: 1, InstancesPerUnit: 1, Config: ConfigUpdate{Version: "v", Stage: 1}},
		{RunID: "d", Stages: 1, Units: 1, InstancesPerUnit: 1},
	} {
		out, err := c.start(p)
		s := coordOuts(out)
		if !errors.Is(err, ErrBadPlan) || len(s.events) != 1 || s.events[0].(*RunDone).Error == "" || s.events[0].(*RunDone).RunID != p.RunID {
			t.Errorf("plan %+v: %v %+v", p, err, s)
		}
	}
	if c.phase != phaseIdle {
		t.Fatal("a bad plan left the coordinator busy")
	}
}

func TestCoordinatorProposalFailedEndsRun(t *testing.T) {
	c := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
	c.requestWork("w", RequestWork{Node: "n", Credits: 1})
	c.start(coordPlan(3, 1))
	s := coordOuts(c.ack("w", ConfigAck{Version: "v0"}))
	s = coordOuts(c.unitDone("w", UnitDone{UnitID: s.units["w"][0].UnitID}))
	if len(s.events) != 1 {
		t.Fatalf("%+v", s)
	}
	if out := c.proposalFailed(ProposalFailed{Stage: 5}); len(out) != 0 {
		t.Fatal("proposal failure for another stage ended the run")
	}
	s = coordOuts(c.proposalFailed(ProposalFailed{Stage: 1, Error: "x"}))
	if len(s.events) != 1 || s.events[0].(*RunDone).Error == "" || s.events[0].(*RunDone).Stages != 1 {
		t.Fatalf("%+v", s)
	}
}

// coordSimWorker is a rollout as the randomized test sees it.
type coordSimWorker struct {
	key, node string
	alive     bool
	maxFlight int
	acked     string
	pendingCf []*ConfigUpdate
	holding   []*WorkUnit
}

// TestCoordinatorRandomized drives the coordinator logic through random
// interleavings of completions, duplicates, deaths, node departures,
// rejections and clock jumps, and checks that every stage completes with
// each unit accepted exactly once, that no rollout ever holds more units
// than its credit, and that units only go to rollouts holding their config.
func TestCoordinatorRandomized(t *testing.T) {
	seed := testSeed(t)
	for trial := range 40 {
		coordRandomTrial(t, seed+uint64(trial))
	}
}

func coordRandomTrial(t *testing.T, seed uint64) {
	rng := testRand(seed)
	clk := NewManualClock(coordT0)
	m := &coordMetrics{}
	lease := time.Minute
	c := newCoordinator(clk, lease, -1, 1, m)
	stages, units := 1+rng.IntN(3), 1+rng.IntN(20)
	var workers []*coordSimWorker
	byKey := map[string]*coordSimWorker{}
	accepted := map[string]int{}
	var dupStash []string
	var events []any
	nodes := 1 + rng.IntN(3)

	var apply func(out []coordOut)
	apply = func(out []coordOut) {
		for _, o := range out {
			switch msg := o.msg.(type) {
			case *WorkUnit:
				w := byKey[o.worker]
				if !w.alive {
					continue // lost in transit to a dead rollout
				}
				if msg.ConfigVersion != w.acked {
					t.Fatalf("seed %d: unit of config %s sent to %s holding %s", seed, msg.ConfigVersion, w.key, w.acked)
				}
				w.holding = append(w.holding, msg)
				if len(w.holding) > w.maxFlight {
					t.Fatalf("seed %d: %s holds %d units, credit %d", seed, w.key, len(w.holding), w.maxFlight)
				}
			case *ConfigUpdate:
				if w := byKey[o.worker]; w.alive {
					w.pendingCf = append(w.pendingCf, msg)
				}
			default:
				events = append(events, msg)
				if d, ok := msg.(*StageDone); ok && !d.Last {
					out, err := c.configUpdate(ConfigUpdate{Version: fmt.Sprintf("v%d", d.Stage+1), Stage: d.Stage + 1})
					if err != nil {
						t.Fatalf("seed %d: %v", seed, err)
					}
					apply(out)
				}
			}
		}
	}
	addWorker := func() {
		w := &coordSimWorker{key: fmt.Sprintf("w%d", len(workers)), node: fmt.Sprintf("n%d", rng.IntN(nodes)),
			alive: true, maxFlight: 1 + rng.IntN(3)}
		workers = append(workers, w)
		byKey[w.key] = w
		apply(c.requestWork(w.key, RequestWork{Node: w.node, Credits: w.maxFlight}))
	}
	for range 1 + rng.IntN(4) {
		addWorker()
	}
	out, err := c.start(StartRun{RunID: "r", Stages: stages, Units: units, InstancesPerUnit: 1,
		Config: ConfigUpdate{Version: "v0", Stage: 0}})
	if err != nil {
		t.Fatal(err)
	}
	apply(out)
	for step := 0; ; step++ {
		if step > 100000 {
			var ws []string
			for _, w := range workers {
				cw := c.workers[w.key]
				if cw == nil {
					ws = append(ws, fmt.Sprintf("%s(gone alive=%v)", w.key, w.alive))
					continue
				}
				ws = append(ws, fmt.Sprintf("%s(alive=%v hold=%d cred=%d acked=%q simacked=%q suspect=%v leases=%d pend=%d)",
					w.key, w.alive, len(w.holding), cw.credits, cw.acked, w.acked, cw.suspect, cw.leases, len(w.pendingCf)))
			}
			t.Fatalf("seed %d: run did not finish: phase %d stage %d cfg %q cur %+v queue %v head %d workers %v",
				seed, c.phase, c.stage, c.cfg.Version, c.cur, c.queue, c.queueHead, ws)
		}
		if n := len(events); n > 0 {
			if _, ok := events[n-1].(*RunDone); ok {
				break
			}
		}
		alive := 0
		for _, w := range workers {
			if w.alive {
				alive++
			}
		}
		switch r := rng.IntN(100); {
		case r < 45: // a live rollout finishes a unit (sometimes twice)
			w := workers[rng.IntN(len(workers))]
			if !w.alive || len(w.holding) == 0 {
				continue
			}
			i := rng.IntN(len(w.holding))
			u := w.holding[i]
			w.holding = append(w.holding[:i], w.holding[i+1:]...)
			if rng.IntN(10) == 0 {
				dupStash = append(dupStash, u.UnitID)
			}
			before := m.completed.Load()
			apply(c.unitDone(w.key, UnitDone{UnitID: u.UnitID}))
			if m.completed.Load() > before {
				accepted[u.UnitID]++
			}
			apply(c.requestWork(w.key, RequestWork{Credits: 1}))
		case r < 65: // a live rollout acks its configs
			w := workers[rng.IntN(len(workers))]
			if !w.alive {
				continue
			}
			for _, cf := range w.pendingCf {
				w.acked = cf.Version
				apply(c.ack(w.key, ConfigAck{Node: w.node, Version: cf.Version}))
			}
			w.pendingCf = nil
		case r < 72: // a duplicate arrives
			if len(dupStash) == 0 {
				continue
			}
			apply(c.unitDone(workers[0].key, UnitDone{UnitID: dupStash[0]}))
			dupStash = dupStash[1:]
		case r < 75: // a rollout rejects (runner failure)
			w := workers[rng.IntN(len(workers))]
			if !w.alive || len(w.holding) == 0 {
				continue
			}
			u := w.holding[0]
			w.holding = w.holding[1:]
			apply(c.unitRejected(w.key, UnitRejected{UnitID: u.UnitID, Reason: "runner"}))
			apply(c.requestWork(w.key, RequestWork{Credits: 1}))
		case r < 77: // a rollout dies silently
			if alive <= 1 {
				continue
			}
			w := workers[rng.IntN(len(workers))]
			w.alive, w.holding, w.pendingCf = false, nil, nil
		case r < 78: // membership reports a node gone; its live rollouts die too
			node := fmt.Sprintf("n%d", rng.IntN(nodes))
			survivors := 0
			for _, w := range workers {
				if w.alive && w.node != node {
					survivors++
				}
			}
			if survivors == 0 {
				continue
			}
			for _, w := range workers {
				if w.node == node {
					w.alive, w.holding, w.pendingCf = false, nil, nil
				}
			}
			apply(c.nodeLeft(node))
		case r < 80: // a new rollout joins
			if len(workers) < 8 {
				addWorker()
			}
		default: // time passes
			clk.Advance(time.Duration(rng.IntN(int(lease/time.Second)+10)) * time.Second)
			apply(c.tick())
		}
	}
	var done []*StageDone
	for _, e := range events {
		if d, ok := e.(*StageDone); ok {
			done = append(done, d)
		}
	}
	if len(done) != stages {
		t.Fatalf("seed %d: %d StageDone, want %d", seed, len(done), stages)
	}
	for _, d := range done {
		// Issued counts every lease. A re-queued unit that its original
		// holder finished before it was leased again is never re-issued,
		// so Issued <= Units + Reissued.
		if d.Completed != units || d.Units != units || d.Issued < units || d.Issued > units+d.Reissued {
			t.Fatalf("seed %d: %+v", seed, d)
		}
	}
	if len(accepted) != stages*units {
		t.Fatalf("seed %d: %d units accepted, want %d", seed, len(accepted), stages*units)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Fatalf("seed %d: unit %s accepted %d times", seed, id, n)
		}
	}
	if got := m.completed.Load(); got != uint64(stages*units) {
		t.Fatalf("seed %d: completed %d", seed, got)
	}
}

// TestCoordinatorEpochs: a plan with Epochs 2 issues each unit's instance
// range twice per stage, the second epoch after the first, every unit with
// its own id and sampling seed; the ids and seeds of the first epoch are
// those of a one-epoch plan.
func TestCoordinatorEpochs(t *testing.T) {
	c := newCoordinator(NewManualClock(coordT0), time.Minute, -1, 1, &coordMetrics{})
	c.requestWork("w1", RequestWork{Node: "n1", Credits: 16})
	plan := coordPlan(1, 3)
	plan.Epochs = 2
	if _, err := c.start(plan); err != nil {
		t.Fatal(err)
	}
	s := coordOuts(c.ack("w1", ConfigAck{Node: "n1", Version: "v0"}))
	if st, ok := s.events[0].(*StageStart); !ok || st.Units != 6 {
		t.Fatalf("StageStart %#v, want 6 units", s.events[0])
	}
	units := s.units["w1"]
	if len(units) != 6 {
		t.Fatalf("%d units issued, want 6", len(units))
	}
	seeds := map[uint64]bool{}
	for j, u := range units {
		i := j % 3
		if u.UnitID != fmt.Sprintf("r/s0/u%d", j) || u.Lo != 3*i || u.Hi != 3*i+3 || u.Seed != UnitSeed(7, 0, j) {
			t.Errorf("unit %d: %s [%d,%d) seed %d, want r/s0/u%d [%d,%d) seed UnitSeed(7, 0, %d)", j, u.UnitID, u.Lo, u.Hi, u.Seed, j, 3*i, 3*i+3, j)
		}
		seeds[u.Seed] = true
	}
	if len(seeds) != 6 {
		t.Errorf("%d distinct unit seeds, want 6", len(seeds))
	}
	bad := coordPlan(1, 3)
	bad.Epochs = -1
	c2 := newCoordinator(NewManualClock(coordT0), time.Minute, -1, 1, &coordMetrics{})
	if _, err := c2.start(bad); !errors.Is(err, ErrBadPlan) {
		t.Fatalf("epochs -1: %v, want ErrBadPlan", err)
	}
}
