package actors

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// The coordinator owns a run. It leases work units to rollout actors that
// pull with credits, re-queues units whose lease expired, whose rollout
// rejected them or whose node left, keeps the first UnitDone per unit, and
// moves from stage to stage: a stage starts only when every live rollout
// acked the stage's config, and ends when every unit is done exactly once.
//
// coordinator is the logic (no actors, no goroutines, time from a Clock);
// coordinatorActor is the thin protoactor wrapper that performs what the
// logic returns.

// CoordinatorStats are the coordinator's counters over the whole run.
type CoordinatorStats struct {
	Issued         uint64 // leases handed out (re-issues included)
	Reissued       uint64 // units put back in the queue (lease expired, rejected, node left)
	Duplicates     uint64 // UnitDone for a unit already done (first wins)
	Completed      uint64 // units accepted
	UnitRejected   uint64 // UnitRejected received
	ConfigRejected uint64 // ConfigUpdate dropped as stale or out of order
	StaleAcks      uint64 // ConfigAck for a version other than the current one
	UnknownUnits   uint64 // UnitDone for a unit id this run never issued
	Queued         uint64 // units waiting for a rollout now (a gauge)

	// Dispatch paced by the learner (SystemConfig.MaxLag):
	// LearnerWait is how long queued units waited for the learner while
	// rollouts had credits (rollout capacity idle on purpose);
	// Outstanding the groups issued and not yet retired by the learner,
	// Window the most it may hold (gauges; Window 0 when pacing is off);
	// FlowResyncs the times the coordinator wrote off groups the learner
	// never received (see coordinator.tick).
	LearnerWait         time.Duration
	Outstanding, Window uint64
	FlowResyncs         uint64
}

type coordMetrics struct {
	issued, reissued, duplicates, completed, unitRejected, configRejected, staleAcks, unknownUnits atomic.Uint64
	queued, outstanding, window, resyncs                                                           atomic.Uint64
	learnerWaitNs                                                                                  atomic.Int64
	loads                                                                                          nodeLoads // per node (System.NodeLoads)
}

func (m *coordMetrics) snapshot() CoordinatorStats {
	return CoordinatorStats{
		Issued: m.issued.Load(), Reissued: m.reissued.Load(), Duplicates: m.duplicates.Load(),
		Completed: m.completed.Load(), UnitRejected: m.unitRejected.Load(),
		ConfigRejected: m.configRejected.Load(), StaleAcks: m.staleAcks.Load(),
		UnknownUnits: m.unknownUnits.Load(), Queued: m.queued.Load(),
		LearnerWait: time.Duration(m.learnerWaitNs.Load()), Outstanding: m.outstanding.Load(),
		Window: m.window.Load(), FlowResyncs: m.resyncs.Load(),
	}
}

// coordDest says where a coordinator output goes.
type coordDest uint8

const (
	toWorker      coordDest = iota // the rollout named by coordOut.worker
	toSubscribers                  // every stage subscriber
	toWaitHook                     // SystemConfig.OnLearnerWait (msg is a learnerWait)
)

// learnerWait is one interval in which queued units waited for the learner
// while rollouts had credits.
type learnerWait struct {
	stage    int
	from, to time.Time
}

// coordOut is one message the coordinator logic wants sent.
type coordOut struct {
	to     coordDest
	worker string
	msg    any
}

type coordPhase uint8

const (
	phaseIdle        coordPhase = iota // no run yet
	phaseAwaitConfig                   // waiting for the ConfigUpdate of stage c.stage
	phaseAwaitAcks                     // config broadcast; waiting for every live rollout's ack
	phaseRunning                       // units out
	phaseDraining                      // every unit done; waiting for the learner to train on their groups (paced runs)
	phaseEvaluating                    // training done; evaluation units out (StartRun.Eval)
	phaseFinished                      // run over (done or failed)
)

type unitStatus uint8

const (
	unitQueued unitStatus = iota
	unitLeased
	unitDone
)

type workerState struct {
	key     string // "address/id" of the rollout actor
	node    string // membership node name
	credits int    // units it can still take
	acked   string // config version it acked
	suspect bool   // one of its leases expired and it has not been heard from since
	leases  int    // units it holds now
}

type unitState struct {
	unit     WorkUnit
	status   unitStatus
	holder   string
	deadline time.Time
	issues   int
	groups   int64 // groups counted in flow.issued for this unit (0 while queued)
}

type coordinator struct {
	clock   Clock
	lease   time.Duration
	metrics *coordMetrics

	plan  StartRun
	phase coordPhase
	stage int          // running stage, or the stage whose config is awaited
	cfg   ConfigUpdate // config of c.stage (once accepted)
	// ackDeadline: rollouts that have not acked by then are suspect and
	// no longer hold the stage back.
	ackDeadline time.Time

	workers map[string]*workerState
	order   []string // registration order: deterministic dispatch
	rr      int

	units     []unitState
	index     map[string]int
	queue     []int // unit indices; entries whose unit is no longer queued are skipped
	queueHead int
	doneIDs   map[string]int // every unit done in this run → its stage
	cur       StageDone      // counters of the running stage
	evalLeft  int            // evaluation units of the stage not done yet

	flow flowControl

	out []coordOut
	// headers gives each stage's trace headers (SystemConfig.StageHeaders);
	// evalHeaders those of its evaluation (SystemConfig.EvalHeaders).
	headers, evalHeaders func(runID string, stage int) map[string]string
}

// newCoordinator returns the coordinator logic. maxLag < 0 turns pacing by
// the learner off; otherwise batch is the learner's batch B (see
// flowControl).
func newCoordinator(clock Clock, lease time.Duration, maxLag int64, batch int, m *coordMetrics) *coordinator {
	c := &coordinator{
		clock: clock, lease: lease, metrics: m,
		workers: map[string]*workerState{}, index: map[string]int{}, doneIDs: map[string]int{},
		flow: flowControl{maxLag: maxLag, batch: int64(max(batch, 1))},
	}
	if c.flow.on() {
		m.window.Store(uint64(c.flow.window()))
	}
	return c
}

func (c *coordinator) emit(to coordDest, worker string, msg any) {
	c.out = append(c.out, coordOut{to: to, worker: worker, msg: msg})
}

func (c *coordinator) flush() []coordOut {
	if c.metrics != nil {
		c.metrics.queued.Store(uint64(len(c.queue) - c.queueHead))
		c.metrics.outstanding.Store(uint64(max(c.flow.outstanding(), 0)))
	}
	out := c.out
	c.out = nil
	return out
}

// start begins a run with the stage plan r. A bad plan ends that run at
// once (RunDone with the error) unless another run is going on.
func (c *coordinator) start(r StartRun) ([]coordOut, error) {
	var err error
	switch {
	case c.phase != phaseIdle:
		return nil, fmt.Errorf("%w: run %q already started", ErrBadPlan, c.plan.RunID)
	case r.Stages < 1 || r.Units < 1 || r.InstancesPerUnit < 1 || r.Epochs < 0:
		err = fmt.Errorf("%w: stages=%d units=%d instances_per_unit=%d epochs=%d, all must be >= 1 (epochs 0: 1)",
			ErrBadPlan, r.Stages, r.Units, r.InstancesPerUnit, r.Epochs)
	case r.FirstStage < 0 || r.FirstStage >= r.Stages:
		err = fmt.Errorf("%w: first stage %d outside [0,%d)", ErrBadPlan, r.FirstStage, r.Stages)
	case r.Config.Stage != r.FirstStage || r.Config.Version == "":
		err = fmt.Errorf("%w: the config of first stage %d has stage %d, version %q", ErrBadPlan, r.FirstStage, r.Config.Stage, r.Config.Version)
	default:
		err = checkEval(r.Eval, r.Split)
	}
	if err != nil {
		c.emit(toSubscribers, "", &RunDone{RunID: r.RunID, Error: err.Error()})
		return c.flush(), err
	}
	c.plan = r
	c.phase = phaseAwaitConfig
	c.stage = r.FirstStage
	c.flow.heardAt = c.clock.Now()
	return c.configUpdate(r.Config)
}

// configUpdate takes the config of the next stage and broadcasts it.
func (c *coordinator) configUpdate(u ConfigUpdate) ([]coordOut, error) {
	if c.phase != phaseAwaitConfig || u.Stage != c.stage || u.Version == "" {
		c.metrics.configRejected.Add(1)
		return nil, fmt.Errorf("%w: version %q for stage %d (coordinator phase %d, stage %d, version %q)",
			ErrStaleConfig, u.Version, u.Stage, c.phase, c.stage, c.cfg.Version)
	}
	c.cfg = u
	c.phase = phaseAwaitAcks
	c.ackDeadline = c.clock.Now().Add(c.lease)
	for _, k := range c.order {
		c.emit(toWorker, k, &ConfigUpdate{Version: u.Version, Stage: u.Stage, JSON: u.JSON})
	}
	c.maybeStartStage()
	return c.flush(), nil
}

// requestWork registers the rollout on first contact and adds its credits.
func (c *coordinator) requestWork(key string, r RequestWork) []coordOut {
	w, ok := c.workers[key]
	if !ok {
		w = &workerState{key: key, node: r.Node}
		c.workers[key] = w
		c.order = append(c.order, key)
		if c.configured() {
			c.emit(toWorker, key, &ConfigUpdate{Version: c.cfg.Version, Stage: c.cfg.Stage, JSON: c.cfg.JSON})
		}
	}
	if r.Credits > 0 {
		w.credits += r.Credits
	}
	c.heard(w)
	c.dispatch()
	return c.flush()
}

// ack records that a rollout holds a config version.
func (c *coordinator) ack(key string, a ConfigAck) []coordOut {
	w, ok := c.workers[key]
	if !ok {
		c.metrics.staleAcks.Add(1)
		return nil
	}
	c.heard(w)
	if a.Version != c.cfg.Version || c.phase == phaseIdle {
		c.metrics.staleAcks.Add(1)
		return nil
	}
	w.acked = a.Version
	c.maybeStartStage()
	c.dispatch()
	return c.flush()
}

// maybeStartStage starts the awaited stage once every live rollout (known,
// not suspect) acked its config; at least one must have.
func (c *coordinator) maybeStartStage() {
	if c.phase != phaseAwaitAcks {
		return
	}
	live := 0
	for _, k := range c.order {
		w := c.workers[k]
		if w.suspect {
			continue
		}
		if w.acked != c.cfg.Version {
			return
		}
		live++
	}
	if live == 0 {
		return
	}
	c.buildUnits()
	c.phase = phaseRunning
	c.emit(toSubscribers, "", &StageStart{RunID: c.plan.RunID, Stage: c.stage, ConfigVersion: c.cfg.Version, Units: len(c.units)})
	c.dispatch()
}

// buildUnits lays out the stage's units: Units per epoch, the instance
// range of unit i repeating every Units units (StartRun.Epochs).
func (c *coordinator) buildUnits() {
	n, per := c.plan.Units*max(c.plan.Epochs, 1), c.plan.InstancesPerUnit
	c.units = make([]unitState, n)
	c.index = make(map[string]int, n)
	c.queue = make([]int, 0, n)
	c.queueHead = 0
	var hdr map[string]string
	if c.headers != nil {
		hdr = c.headers(c.plan.RunID, c.stage)
	}
	for i := range n {
		id := fmt.Sprintf("%s/s%d/u%d", c.plan.RunID, c.stage, i)
		c.units[i] = unitState{unit: WorkUnit{
			UnitID: id, RunID: c.plan.RunID, Stage: c.stage, Split: c.plan.Split,
			ConfigVersion: c.cfg.Version, ConfigJSON: c.cfg.JSON,
			Seed: UnitSeed(c.plan.Seed, c.stage, i), Lo: i % c.plan.Units * per, Hi: (i%c.plan.Units + 1) * per,
			TraceHeaders: hdr,
		}}
		c.index[id] = i
		c.queue = append(c.queue, i)
	}
	c.cur = StageDone{RunID: c.plan.RunID, Stage: c.stage, ConfigVersion: c.cfg.Version, Units: n}
}

// leasing reports whether units are being leased: the stage's training units
// or its evaluation units.
func (c *coordinator) leasing() bool { return c.phase == phaseRunning || c.phase == phaseEvaluating }

// configured reports whether the stage's config is current (from its acks until the stage is
// done): a rollout that registers or asks for it then gets it, while draining or evaluating too.
func (c *coordinator) configured() bool {
	return c.phase == phaseAwaitAcks || c.phase == phaseDraining || c.leasing()
}

// dispatch leases queued units to eligible rollouts, round robin, while
// the learner's window admits them.
func (c *coordinator) dispatch() {
	if !c.leasing() {
		c.endWait()
		return
	}
	now := c.clock.Now()
	for {
		i, ok := c.peekQueued()
		if !ok {
			c.endWait()
			return
		}
		g := unitGroups(&c.units[i].unit)
		if !c.flow.admits(g) {
			if c.flow.heldSince.IsZero() && c.anyEligible() {
				c.flow.heldSince = now
			}
			return
		}
		w := c.nextEligible()
		if w == nil {
			c.endWait()
			return
		}
		c.endWait()
		c.queueHead++
		u := &c.units[i]
		u.status, u.holder, u.deadline = unitLeased, w.key, now.Add(c.lease)
		u.issues++
		u.groups = g
		c.flow.issued += g
		c.flow.inflight += g
		w.credits--
		w.leases++
		c.metrics.loads.issued(w.node)
		c.cur.Issued++
		c.metrics.issued.Add(1)
		wu := u.unit
		wu.Attempt = u.issues - 1
		wu.LeaseDeadlineUnixMs = u.deadline.UnixMilli()
		wu.PolicyVersion = c.flow.version
		c.emit(toWorker, w.key, &wu)
	}
}

// unitGroups is the most groups a unit can produce: one per instance of a
// training unit, none for an evaluation unit.
func unitGroups(u *WorkUnit) int64 {
	if u.Eval {
		return 0
	}
	return int64(max(u.Hi-u.Lo, 0))
}

// endWait closes an interval of waiting for the learner.
func (c *coordinator) endWait() {
	f := &c.flow
	if f.heldSince.IsZero() {
		return
	}
	now := c.clock.Now()
	d := now.Sub(f.heldSince)
	c.metrics.learnerWaitNs.Add(int64(d))
	c.cur.LearnerWaitMs += d.Milliseconds()
	c.emit(toWaitHook, "", learnerWait{stage: c.stage, from: f.heldSince, to: now})
	f.heldSince = time.Time{}
}

// anyEligible reports whether some rollout could take a unit now.
func (c *coordinator) anyEligible() bool {
	for _, k := range c.order {
		if w := c.workers[k]; w.credits > 0 && !w.suspect && w.acked == c.cfg.Version {
			return true
		}
	}
	return false
}

// learnerProgress takes the learner's counters (version, groups retired,
// groups waiting for a batch) and dispatches what the window now admits.
func (c *coordinator) learnerProgress(s learnerState) []coordOut {
	f := &c.flow
	if s.retired != f.retired || s.version != f.version || s.pending != f.pending {
		f.heardAt = c.clock.Now()
	}
	f.retired, f.pending = s.retired, s.pending
	f.version = max(f.version, s.version)
	if c.phase == phaseDraining && f.drained() {
		c.trained()
	}
	c.dispatch()
	return c.flush()
}

func (c *coordinator) peekQueued() (int, bool) {
	for c.queueHead < len(c.queue) {
		i := c.queue[c.queueHead]
		if c.units[i].status == unitQueued {
			return i, true
		}
		c.queueHead++ // done meanwhile (an earlier lease finished first)
	}
	return 0, false
}

func (c *coordinator) nextEligible() *workerState {
	for range len(c.order) {
		k := c.order[c.rr%len(c.order)]
		c.rr++
		w := c.workers[k]
		if w.credits > 0 && !w.suspect && w.acked == c.cfg.Version {
			return w
		}
	}
	return nil
}

func (c *coordinator) requeue(i int) {
	u := &c.units[i]
	if u.status == unitLeased {
		if h, ok := c.workers[u.holder]; ok {
			h.leases--
			c.metrics.loads.ended(h.node, true)
		}
		c.flow.issued -= u.groups
		c.flow.inflight -= u.groups
		u.groups = 0
	}
	u.status, u.holder = unitQueued, ""
	c.queue = append(c.queue, i)
	c.cur.Reissued++
	c.metrics.reissued.Add(1)
}

// unitDone accepts the first result of a unit and counts the rest.
func (c *coordinator) unitDone(key string, d UnitDone) []coordOut {
	if w, ok := c.workers[key]; ok {
		c.heard(w)
	}
	i, ok := c.index[d.UnitID]
	if !ok {
		if _, seen := c.doneIDs[d.UnitID]; seen {
			c.metrics.duplicates.Add(1) // late copy of an earlier stage's unit
		} else {
			c.metrics.unknownUnits.Add(1)
		}
		return nil
	}
	u := &c.units[i]
	if u.status == unitDone {
		c.metrics.duplicates.Add(1)
		c.cur.Duplicates++
		return nil
	}
	c.unitLoad(key, u)
	if u.status == unitLeased {
		if h, ok := c.workers[u.holder]; ok {
			h.leases--
		}
		c.flow.inflight -= u.groups
	}
	// The unit's groups count until the learner retires them: as many as
	// the rollout sent (a unit put back in the queue counted none).
	c.flow.issued += int64(d.GroupCount) - u.groups
	u.groups = int64(d.GroupCount)
	u.status, u.holder = unitDone, ""
	c.doneIDs[d.UnitID] = c.stage
	c.metrics.completed.Add(1)
	switch {
	case u.unit.Eval:
		c.evalLeft--
		if c.evalLeft == 0 {
			c.finishStage()
		} else {
			c.dispatch()
		}
	case c.cur.Completed+1 == c.cur.Units:
		c.cur.Completed++
		c.endStage()
	default:
		c.cur.Completed++
		c.dispatch()
	}
	return c.flush()
}

// endStage finishes the stage whose units are all done. With pacing, the
// stage first drains: it ends once the learner has trained on every full
// batch of the groups sent so far (what is outstanding is only the
// learner's pending part batch), so the stage's evaluation and the
// engineer see the policy the stage's data made, and every stage counts
// the same updates however many rollouts ran it.
func (c *coordinator) endStage() {
	c.endWait()
	if c.flow.on() && !c.flow.drained() {
		c.phase = phaseDraining
		c.flow.drainSince = c.clock.Now()
		return
	}
	c.trained()
}

// finishStage ends the stage: StageDone, then the next stage's config is
// awaited (or the run is over).
func (c *coordinator) finishStage() {
	c.cur.Last = c.stage == c.plan.Stages-1
	done := c.cur
	c.emit(toSubscribers, "", &done)
	if done.Last {
		c.phase = phaseFinished
		c.emit(toSubscribers, "", &RunDone{RunID: c.plan.RunID, Stages: c.stage + 1})
		return
	}
	c.phase = phaseAwaitConfig
	c.stage++
}

// unitRejected puts a rejected unit back in the queue. A rollout that lacks
// the config gets it again and no units until it acks.
func (c *coordinator) unitRejected(key string, r UnitRejected) []coordOut {
	c.metrics.unitRejected.Add(1)
	w, known := c.workers[key]
	if known {
		c.heard(w)
	}
	if i, ok := c.index[r.UnitID]; ok && c.units[i].status == unitLeased && c.units[i].holder == key {
		c.cur.Rejected++
		c.requeue(i)
	}
	if known && r.NeedConfig && c.configured() {
		w.acked = ""
		c.emit(toWorker, key, &ConfigUpdate{Version: c.cfg.Version, Stage: c.cfg.Stage, JSON: c.cfg.JSON})
	}
	c.dispatch()
	return c.flush()
}

// nodeLeft forgets every rollout of node and re-queues their units at once.
func (c *coordinator) nodeLeft(node string) []coordOut {
	kept := c.order[:0]
	for _, k := range c.order {
		if c.workers[k].node != node {
			kept = append(kept, k)
			continue
		}
		for i := range c.units {
			if c.units[i].status == unitLeased && c.units[i].holder == k {
				c.requeue(i)
			}
		}
		delete(c.workers, k)
	}
	c.metrics.loads.left(node)
	c.order = kept
	c.maybeStartStage()
	c.dispatch()
	return c.flush()
}

// tick re-queues every unit whose lease deadline passed and marks its holder
// suspect: no new units go to it until it is heard from again. While acks
// are awaited, rollouts that missed the ack deadline become suspect.
func (c *coordinator) tick() []coordOut {
	now := c.clock.Now()
	if c.phase == phaseAwaitAcks && !c.ackDeadline.After(now) {
		for _, k := range c.order {
			if w := c.workers[k]; w.acked != c.cfg.Version {
				w.suspect = true
			}
		}
		c.maybeStartStage()
		return c.flush()
	}
	if c.phase == phaseDraining {
		if c.resync(now, c.flow.drainSince) && c.flow.drained() {
			c.trained()
		}
		return c.flush()
	}
	if !c.leasing() {
		return nil
	}
	for i := range c.units {
		u := &c.units[i]
		if u.status != unitLeased || u.deadline.After(now) {
			continue
		}
		if h, ok := c.workers[u.holder]; ok {
			h.suspect = true
		}
		c.requeue(i)
	}
	c.resync(now, c.flow.heldSince)
	c.dispatch()
	return c.flush()
}

// resync writes off groups the learner never received. Groups of done
// units can be lost on the way to the learner (a message that did not
// decode, a node that died between its UnitGroups and its UnitDone); they
// would hold the window, or a draining stage, forever. When the
// coordinator has waited for the learner since since for a whole lease and
// the learner's counters have not moved meanwhile, everything outstanding
// beyond the leased units and the learner's pending groups is taken as
// lost. It reports whether it wrote anything off.
func (c *coordinator) resync(now, since time.Time) bool {
	f := &c.flow
	if !f.on() || since.IsZero() || now.Sub(since) < c.lease || now.Sub(f.heardAt) < c.lease {
		return false
	}
	want := f.retired + f.pending + f.inflight
	if f.issued <= want {
		return false
	}
	f.issued = want
	f.heardAt = now
	c.metrics.resyncs.Add(1)
	return true
}

// proposalFailed ends the run when the engineer could not propose the
// awaited stage's config.
func (c *coordinator) proposalFailed(p ProposalFailed) []coordOut {
	if c.phase != phaseAwaitConfig || p.Stage != c.stage {
		return nil
	}
	c.phase = phaseFinished
	c.emit(toSubscribers, "", &RunDone{RunID: c.plan.RunID, Stages: c.stage,
		Error: fmt.Sprintf("engineer failed to propose stage %d: %s", p.Stage, p.Error)})
	return c.flush()
}

// coordSync asks the coordinator for its counters once every message posted
// before it was handled (in-process only). Answer: CoordinatorStats.
type coordSync struct{}

// learnerProgressed is sent by the learner to the coordinator of its own
// System when its counters moved (never crosses the wire); at most one is
// in the coordinator's mailbox at a time. The coordinator reads the
// counters themselves. Answer: none.
type learnerProgressed struct{}

// coordinatorActor performs what the coordinator logic returns.
type coordinatorActor struct {
	logic       *coordinator
	subscribers []*actor.PID
	workers     map[string]*actor.PID
	logger      *slog.Logger
	// learner holds the learner's counters; progressPending is set while a
	// learnerProgressed is on its way.
	learner         *learnerMetrics
	progressPending *atomic.Bool
	// onWait, when set, sees each interval units waited for the learner.
	onWait func(stage int, from, to time.Time)
}

func pidKey(p *actor.PID) string { return p.Address + "/" + p.Id }

// worker identifies the rollout that sent the current message (sent with
// Request, so the sender is set).
func (a *coordinatorActor) worker(c actor.Context) (string, bool) {
	s := c.Sender()
	if s == nil {
		a.logger.Warn("coordinator: rollout message without sender dropped", "type", fmt.Sprintf("%T", c.Message()))
		return "", false
	}
	k := pidKey(s)
	a.workers[k] = s
	return k, true
}

func (a *coordinatorActor) Receive(c actor.Context) {
	var (
		out []coordOut
		err error
	)
	switch m := c.Message().(type) {
	case *StartRun:
		out, err = a.logic.start(*m)
	case *ConfigUpdate:
		out, err = a.logic.configUpdate(*m)
	case *RequestWork:
		if k, ok := a.worker(c); ok {
			out = a.logic.requestWork(k, *m)
		}
	case *ConfigAck:
		if k, ok := a.worker(c); ok {
			out = a.logic.ack(k, *m)
		}
	case *UnitDone:
		if k, ok := a.worker(c); ok {
			out = a.logic.unitDone(k, *m)
		}
	case *UnitRejected:
		if k, ok := a.worker(c); ok {
			out = a.logic.unitRejected(k, *m)
		}
	case *NodeLeft:
		out = a.logic.nodeLeft(m.Node)
	case *Tick:
		out = a.logic.tick()
	case *ProposalFailed:
		out = a.logic.proposalFailed(*m)
	case *learnerProgressed:
		a.progressPending.Store(false) // before reading: a later move sends again
		out = a.logic.learnerProgress(a.learner.state())
	case *coordSync:
		c.Respond(a.logic.metrics.snapshot())
	case *Shutdown:
		c.Stop(c.Self())
	}
	if err != nil {
		a.logger.Warn("coordinator: message rejected", "error", err)
	}
	for _, o := range out {
		switch o.to {
		case toWorker:
			if pid, ok := a.workers[o.worker]; ok {
				c.Send(pid, o.msg)
			}
		case toSubscribers:
			for _, s := range a.subscribers {
				c.Send(s, o.msg)
			}
		case toWaitHook:
			if w := o.msg.(learnerWait); a.onWait != nil {
				a.onWait(w.stage, w.from, w.to)
			}
		}
	}
}
