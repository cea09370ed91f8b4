package actors

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Simulate runs one stage of a cluster in simulated time: the coordinator,
// learner and R rollout logic structs of this package (the same code the
// actors run), connected by instant messages, with three single servers
// whose service times are given or measured:
//
//   - the coordinator handles one message at a time, each taking the wall
//     time its logic call took here plus SimConfig.CoordMsgCost (the wire:
//     decoding the message, encoding what it sends);
//   - Redis applies one RecordUnit at a time (SimConfig.RecordCost each),
//     which a rollout does before it reports the unit;
//   - the learner takes one UnitGroups at a time (LearnerMsgCost) and runs
//     each full batch for StepTime.
//
// A rollout plays a unit for UnitLatency (± UnitJitter, uniform), sampling
// the learner's version at the unit's start (a rollout node loads it as
// the learner announces it). Rollout actors and their slots are as many as
// needed: the only limits are the ones the run has (credits, the
// coordinator's dispatch window, the servers). Nothing sleeps: a run of
// thousands of units and R = 1,000 takes well under a second, and it shows
// where a real cluster would saturate first (SimResult.Bottleneck).
type SimConfig struct {
	Rollouts, MaxInFlight   int   // R rollout actors, each with MaxInFlight credits
	Units, InstancesPerUnit int   // one stage of Units units of InstancesPerUnit groups
	GroupSize               int   // episodes per group (for episodes per second)
	LearnerBatch            int   // B groups per update
	StalenessK, KeepLateK   int64 // the learner's bounds (see SystemConfig)
	MaxLag                  int64 // dispatch pacing (see SystemConfig); < 0: none
	UnitLatency             time.Duration
	UnitJitter              float64 // in [0, 1): latency uniform in L·(1 ± jitter)
	StepTime                time.Duration
	RecordCost              time.Duration // Redis server time per RecordUnit
	CoordMsgCost            time.Duration // wire cost per coordinator message
	LearnerMsgCost          time.Duration // wire cost per UnitGroups at the learner
	Seed                    uint64        // jitter
}

// SimResult is what a simulated stage did.
type SimResult struct {
	Config SimConfig
	// Elapsed is the simulated time from the stage's start until the
	// learner trained on the last full batch.
	Elapsed time.Duration
	Learner LearnerStats
	// EpisodesPerSecond is the episodes of the groups the learner used,
	// per second of Elapsed: what the rollouts fed the learner.
	EpisodesPerSecond float64
	// Utilisation of each single server over Elapsed (1 = always busy).
	Coordinator, Redis, LearnerUtil float64
	// CoordMsgs is the number of messages the coordinator handled and
	// CoordLogic the mean wall time of its logic per message (measured).
	CoordMsgs  int
	CoordLogic time.Duration
	// MaxInFlightUnits is the most units ever running at once.
	MaxInFlightUnits int
	// LagMean is the mean policy lag of the groups the learner used.
	LagMean float64
	// Bottleneck names the busiest server: "learner", "coordinator",
	// "redis", or "rollouts" when none is busy 90% of the time (the
	// rollouts, or the dispatch window, limit the run).
	Bottleneck string
	// LearnerWait is how long units waited for the learner while
	// rollouts had free slots (simulated time).
	LearnerWait time.Duration
}

func (c SimConfig) validate() error {
	switch {
	case c.Rollouts < 1 || c.MaxInFlight < 1 || c.Units < 1 || c.InstancesPerUnit < 1 || c.GroupSize < 1 || c.LearnerBatch < 1:
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "SimConfig", Value: fmt.Sprintf("%+v", c), Reason: "counts must be >= 1"}
	case c.UnitLatency <= 0 || c.StepTime < 0 || c.RecordCost < 0 || c.CoordMsgCost < 0 || c.LearnerMsgCost < 0:
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "SimConfig", Value: fmt.Sprintf("%+v", c), Reason: "unit latency must be > 0, other times >= 0"}
	case c.UnitJitter < 0 || c.UnitJitter >= 1:
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "UnitJitter", Value: c.UnitJitter, Reason: "must be in [0, 1)"}
	}
	return nil
}

// simEvent kinds.
const (
	evCoordFree   = iota // the coordinator finished a message
	evDeliver            // a coordinator output reaches its rollout
	evUnitPlayed         // a rollout finished playing a unit
	evRedisFree          // Redis applied a RecordUnit
	evLearnerFree        // the learner finished a message or a batch
)

type simEvent struct {
	at      time.Duration
	seq     uint64
	kind    int
	out     []coordOut // evDeliver
	unit    *WorkUnit  // evUnitPlayed
	w       int        // rollout index
	version int64      // evUnitPlayed: the policy version played
}

type simHeap []*simEvent

func (h simHeap) Len() int { return len(h) }
func (h simHeap) Less(i, j int) bool {
	if h[i].at != h[j].at {
		return h[i].at < h[j].at
	}
	return h[i].seq < h[j].seq
}
func (h simHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *simHeap) Push(x any)   { *h = append(*h, x.(*simEvent)) }
func (h *simHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// simMsg is a message waiting for the coordinator (from rollout w, or the
// learner's progress when progress is set).
type simMsg struct {
	w        int
	msg      any
	progress bool
}

// simRecord is a unit waiting for Redis.
type simRecord struct {
	w       int
	unit    *WorkUnit
	version int64
}

type sim struct {
	cfg   SimConfig
	clock *ManualClock
	t0    time.Time
	now   time.Duration
	seq   uint64
	ev    simHeap
	rng   *rand.Rand

	coord    *coordinator
	cm       *coordMetrics
	cq       []simMsg
	cBusy    bool
	cBusyDur time.Duration
	cMsgs    int
	cLogic   time.Duration
	pending  bool // a learner progress message is queued

	rolls   []*rollout
	keys    []string
	running int
	maxRun  int

	rq       []simRecord
	rBusy    bool
	rBusyDur time.Duration

	learn    *learner
	lm       *learnerMetrics
	lq       []*UnitGroups
	lBusy    bool
	lStep    bool // the learner is busy with steps[0] (not a message)
	lBusyDur time.Duration
	steps    []([]Group) // batches the learner is working through
	lastStep time.Duration
	lagSum   float64
	lagN     int

	done bool
}

// Simulate runs cfg (see SimConfig).
func Simulate(cfg SimConfig) (SimResult, error) {
	if err := cfg.validate(); err != nil {
		return SimResult{}, err
	}
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	s := &sim{cfg: cfg, clock: NewManualClock(t0), t0: t0, rng: rand.New(rand.NewPCG(cfg.Seed, 0x51a1)),
		cm: &coordMetrics{}, lm: &learnerMetrics{}}
	// Leases never expire here: nothing fails.
	s.coord = newCoordinator(s.clock, 1000*time.Hour, cfg.MaxLag, cfg.LearnerBatch, s.cm)
	keepK := max(cfg.KeepLateK, cfg.StalenessK)
	s.learn = newLearner(cfg.LearnerBatch, cfg.StalenessK, keepK, s.lm)
	for i := range cfg.Rollouts {
		r := newRollout(fmt.Sprintf("n%d", i), cfg.MaxInFlight, &rolloutMetrics{})
		s.rolls = append(s.rolls, r)
		s.keys = append(s.keys, fmt.Sprintf("sim/r%d", i))
		for _, o := range r.started() {
			if o.to == toCoordinator {
				s.toCoord(simMsg{w: i, msg: o.msg})
			}
		}
	}
	out, err := s.coord.start(StartRun{RunID: "sim", Stages: 1, Units: cfg.Units, InstancesPerUnit: cfg.InstancesPerUnit,
		Split: "train", Seed: cfg.Seed, Config: ConfigUpdate{Version: "v", Stage: 0, JSON: []byte("{}")}})
	if err != nil {
		return SimResult{}, err
	}
	s.deliver(out)
	for !s.done && s.ev.Len() > 0 {
		e := heap.Pop(&s.ev).(*simEvent)
		s.now = e.at
		s.clock.Set(s.t0.Add(s.now))
		s.handle(e)
	}
	return s.result(), nil
}

func (s *sim) at(d time.Duration, e *simEvent) {
	e.at, e.seq = s.now+d, s.seq
	s.seq++
	heap.Push(&s.ev, e)
}

// toCoord queues a message for the coordinator.
func (s *sim) toCoord(m simMsg) {
	s.cq = append(s.cq, m)
	s.serveCoord()
}

func (s *sim) serveCoord() {
	if s.cBusy || len(s.cq) == 0 {
		return
	}
	m := s.cq[0]
	s.cq = s.cq[1:]
	start := time.Now()
	var out []coordOut
	switch {
	case m.progress:
		s.pending = false
		out = s.coord.learnerProgress(s.lm.state())
	default:
		switch x := m.msg.(type) {
		case *RequestWork:
			out = s.coord.requestWork(s.keys[m.w], *x)
		case *ConfigAck:
			out = s.coord.ack(s.keys[m.w], *x)
		case *UnitDone:
			out = s.coord.unitDone(s.keys[m.w], *x)
		}
	}
	logic := time.Since(start)
	s.cLogic += logic
	s.cMsgs++
	d := logic + s.cfg.CoordMsgCost
	s.cBusy = true
	s.cBusyDur += d
	s.at(d, &simEvent{kind: evCoordFree, out: out})
}

// deliver performs coordinator outputs.
func (s *sim) deliver(out []coordOut) {
	for _, o := range out {
		switch o.to {
		case toWorker:
			w := s.workerOf(o.worker)
			switch m := o.msg.(type) {
			case *ConfigUpdate:
				for _, ro := range s.rolls[w].config(*m) {
					s.toCoord(simMsg{w: w, msg: ro.msg})
				}
			case *WorkUnit:
				s.startUnit(w, m)
			}
		case toSubscribers:
			switch m := o.msg.(type) {
			case *StageStart:
				s.learn.stageStart(m.Stage)
			case *RunDone:
				// The learner may still hold groups: let it finish.
			}
		}
	}
}

func (s *sim) workerOf(key string) int {
	var i int
	fmt.Sscanf(key, "sim/r%d", &i)
	return i
}

func (s *sim) startUnit(w int, u *WorkUnit) {
	for _, o := range s.rolls[w].unit(u) {
		if o.to != runUnit {
			s.toCoord(simMsg{w: w, msg: o.msg})
			continue
		}
		s.running++
		s.maxRun = max(s.maxRun, s.running)
		l := float64(s.cfg.UnitLatency)
		if j := s.cfg.UnitJitter; j > 0 {
			l *= 1 + j*(2*s.rng.Float64()-1)
		}
		// The rollout plays the learner's newest version (at least the
		// one the unit was issued at).
		v := max(s.learn.version, u.PolicyVersion)
		s.at(time.Duration(l), &simEvent{kind: evUnitPlayed, unit: u, w: w, version: v})
	}
}

func (s *sim) handle(e *simEvent) {
	switch e.kind {
	case evCoordFree:
		s.cBusy = false
		s.deliver(e.out)
		s.serveCoord()
	case evUnitPlayed:
		s.running--
		s.rq = append(s.rq, simRecord{w: e.w, unit: e.unit, version: e.version})
		s.serveRedis()
	case evRedisFree:
		s.rBusy = false
		r := s.rq[0]
		s.rq = s.rq[1:]
		d := UnitDone{UnitID: r.unit.UnitID}
		for i := r.unit.Lo; i < r.unit.Hi; i++ {
			d.Groups = append(d.Groups, Group{PolicyVersion: r.version})
		}
		for _, o := range s.rolls[r.w].finished(r.unit, d, nil) {
			switch o.to {
			case toLearner:
				s.lq = append(s.lq, o.msg.(*UnitGroups))
				s.serveLearner()
			case toCoordinator:
				s.toCoord(simMsg{w: r.w, msg: o.msg})
			}
		}
		s.serveRedis()
	case evLearnerFree:
		s.lBusy = false
		if s.lStep { // a batch finished
			s.lStep = false
			b := s.steps[0]
			s.steps = s.steps[1:]
			s.learn.updated(len(b), s.learn.version+1, nil)
			s.lastStep = s.now
			s.progress()
		}
		s.serveLearner()
	}
	if s.cm.completed.Load() == uint64(s.cfg.Units) && !s.lBusy && len(s.lq) == 0 && len(s.steps) == 0 {
		s.done = true
	}
}

func (s *sim) serveRedis() {
	if s.rBusy || len(s.rq) == 0 {
		return
	}
	s.rBusy = true
	s.rBusyDur += s.cfg.RecordCost
	s.at(s.cfg.RecordCost, &simEvent{kind: evRedisFree})
}

func (s *sim) serveLearner() {
	if s.lBusy {
		return
	}
	if len(s.steps) > 0 {
		b := s.steps[0]
		for _, g := range b {
			s.lagSum += float64(s.learn.version - g.PolicyVersion)
			s.lagN++
		}
		s.lBusy, s.lStep = true, true
		s.lBusyDur += s.cfg.StepTime
		s.at(s.cfg.StepTime, &simEvent{kind: evLearnerFree})
		return
	}
	if len(s.lq) == 0 {
		return
	}
	m := s.lq[0]
	s.lq = s.lq[1:]
	retired := s.lm.retired.Load()
	batches := s.learn.groups(m)
	s.steps = append(s.steps, batches...)
	if len(batches) == 0 || s.lm.retired.Load() != retired {
		s.progress()
	}
	s.lBusy = true
	s.lBusyDur += s.cfg.LearnerMsgCost
	s.at(s.cfg.LearnerMsgCost, &simEvent{kind: evLearnerFree})
}

// progress tells the coordinator the learner moved (at most one message
// queued, as in the actors).
func (s *sim) progress() {
	if s.cfg.MaxLag < 0 || s.pending {
		return
	}
	s.pending = true
	s.toCoord(simMsg{progress: true})
}

func (s *sim) result() SimResult {
	el := max(s.lastStep, s.now)
	res := SimResult{Config: s.cfg, Elapsed: el, Learner: s.lm.snapshot(), CoordMsgs: s.cMsgs,
		MaxInFlightUnits: s.maxRun, LearnerWait: time.Duration(s.cm.learnerWaitNs.Load())}
	if s.cMsgs > 0 {
		res.CoordLogic = s.cLogic / time.Duration(s.cMsgs)
	}
	if el > 0 {
		sec := el.Seconds()
		res.EpisodesPerSecond = float64(res.Learner.Used) * float64(s.cfg.GroupSize) / sec
		res.Coordinator = s.cBusyDur.Seconds() / sec
		res.Redis = s.rBusyDur.Seconds() / sec
		res.LearnerUtil = s.lBusyDur.Seconds() / sec
	}
	if s.lagN > 0 {
		res.LagMean = s.lagSum / float64(s.lagN)
	}
	res.Bottleneck = "rollouts"
	top := 0.9
	for _, b := range []struct {
		name string
		u    float64
	}{{"learner", res.LearnerUtil}, {"coordinator", res.Coordinator}, {"redis", res.Redis}} {
		if b.u >= top {
			res.Bottleneck, top = b.name, b.u
		}
	}
	return res
}
