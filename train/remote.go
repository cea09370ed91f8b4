package train

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/remote"
	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/evaluate"
)

// Cluster connects a run to rollouts on other nodes (t2t node). The zero
// value keeps the whole run in one process.
type Cluster struct {
	// Node names this process's actor node (its membership ID); it is what
	// its local rollouts report and what NodeLeft refers to. Default "local".
	Node string
	// Listen is the actor system's remote address (actors.SystemConfig.Listen):
	// rollouts on other nodes reach the coordinator and the learner there.
	Listen string
	// RemoteOnly runs no rollout in this process (Options.Rollouts is
	// ignored): every unit runs on another node. Requires Listen.
	RemoteOnly bool
	// LeaseTimeout is how long a unit stays leased to a rollout that does
	// not answer (actors.SystemConfig.LeaseTimeout). Membership reports a
	// dead node sooner (System.NodeLeft); the lease covers the rest.
	// Default: the actors default (5m).
	LeaseTimeout time.Duration
	// Policies, when set, receives the run's RunSpec before the first stage
	// and every policy version after each update, for rollout nodes to pull.
	Policies *PolicyStore
	// Started is called with the actor system once it is built and
	// listening, before the first stage: t2t node publishes the system's
	// address in its membership metadata there and feeds departed nodes
	// to System.NodeLeft. An error ends the run.
	Started func(*actors.System) error
	// RemoteOptions are extra options of the actor transport (mutual TLS:
	// cluster.RemoteTLSOptions).
	RemoteOptions []remote.ConfigOption
	// Members lists the cluster's members without their load (t2t node:
	// its membership, MemberNode); the run records them with their load
	// in Redis (NodesRecord). Nil: a one-process run, whose one node is
	// this process (LocalNode).
	Members func() []StatusNode
	// Endpoint and EndpointModel name the OpenAI-compatible endpoint that
	// serves an LLM policy's current weights on this node (t2t serve over
	// the trained model), for rollout nodes.
	Endpoint, EndpointModel string
}

// prepare applies the cluster settings to the actor system config and
// publishes the run's spec and initial policy.
func (c *Cluster) prepare(ctx context.Context, sc *actors.SystemConfig, opt Options, pol Policy) error {
	if c.Node != "" {
		sc.Node = c.Node
	}
	sc.Listen = c.Listen
	sc.RemoteOptions = c.RemoteOptions
	if c.RemoteOnly {
		sc.Rollouts = 0
	}
	if c.LeaseTimeout > 0 {
		sc.LeaseTimeout = c.LeaseTimeout
	}
	if c.Policies == nil {
		return nil
	}
	spec, err := SpecOf(opt, pol)
	if err != nil {
		return err
	}
	if err := c.Policies.PutSpec(ctx, spec); err != nil {
		return err
	}
	return c.Policies.PublishPolicy(ctx, opt.RunID, pol)
}

// publishTimeout bounds one policy publication.
const publishTimeout = 30 * time.Second

// publish publishes pol's new version of run runID after an update. A
// failure is logged, not returned: the update happened, and rollout nodes
// keep the older weights (their policy lag shows it) until a later
// publication.
func (c *Cluster) publish(runID string, pol Policy, logger *slog.Logger) {
	if c.Policies == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := c.Policies.PublishPolicy(ctx, runID, pol); err != nil {
		logger.Error("train: policy not published", "version", pol.Version(), "error", err)
	}
}

// publishVersion publishes version v of run runID, a version without
// weights in Redis (an LLM's weights are at its endpoint or rollout engine),
// logging a failure as publish does.
func (c *Cluster) publishVersion(runID string, v int64, logger *slog.Logger) {
	if c.Policies == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
	defer cancel()
	if err := c.Policies.Publish(ctx, runID, v, nil); err != nil {
		logger.Error("train: policy not published", "version", v, "error", err)
	}
}

// RemoteStats are a rollout node's counters.
type RemoteStats struct {
	Units        int64 // units run
	Failed       int64 // units whose run failed
	PolicyLoads  int64 // policy versions loaded from the store
	PolicyLagSum int64 // sum over units of learner version - version used
	PolicyLagMax int64
	// Refreshes counts units that played a newer version in a later chunk
	// than in their first (the policy moved while they played).
	Refreshes int64 `json:",omitempty"`
}

// UnitLog is what a process's rollouts report about one unit they ran
// (RemoteRunner on a rollout node, Options.OnUnit in the run's process).
type UnitLog struct {
	Result store.UnitResult
	// PolicyVersion is the version the unit was played with; LearnerVersion
	// the learner's newest version this node knew when the unit finished;
	// Lag their difference (policy lag).
	PolicyVersion, LearnerVersion, Lag int64
	Millis                             int64
}

// RemoteRunner is the actors.Runner of a rollout node. On the first unit
// of a run it reads the run's RunSpec from the PolicyStore and builds the
// policy. It keeps the policy at the learner's newest version: it loads a
// version in the background as soon as the learner announces it (Prefetch,
// between units), makes sure a unit plays at least the version the
// coordinator issued it at (WorkUnit.PolicyVersion), and plays a unit
// Chunk instances at a time, taking up a version published meanwhile at
// the next chunk. Otherwise it runs the unit with the executor of an
// in-process run (unit.go: generate the instances from the unit's config
// and the stage seed, play, record the outcome in Redis, return the
// groups), its groups carrying their instances' JSON for the learner's
// node. It is safe for concurrent use.
type RemoteRunner struct {
	st     *store.Store
	ps     *PolicyStore
	device string
	logger *slog.Logger
	onUnit func(UnitLog)
	chunk  atomic.Int64

	learnerVersion atomic.Pointer[func() int64]

	mu  sync.Mutex // guards cur
	cur *remoteRun

	prefetching                          atomic.Bool
	units, failed, loads, lagSum, lagMax atomic.Int64
	refreshes                            atomic.Int64

	tracer      trace.Tracer       // nil: no spans
	metrics     *telemetry.Metrics // nil: units not timed
	endpointKey string             // sent to an LLM run's endpoint
}

// DefaultChunk is the number of instances a rollout node plays between two
// looks for a newer policy version. Splitting a 16-instance gridnet unit in
// two cost 11% more sampling time than playing it whole (12 vs 16 episode
// batches per step; 4 chunks cost 17%).
const DefaultChunk = 8

// SetTracer makes the runner trace its work units (children of the stage
// span whose context the unit carries); call it before the first unit.
func (rr *RemoteRunner) SetTracer(t trace.Tracer) { rr.tracer = t }

// SetMetrics makes the runner time every unit in m's histogram (the
// node's /metrics). Call it before the first unit.
func (rr *RemoteRunner) SetMetrics(m *telemetry.Metrics) { rr.metrics = m }

// remoteRun is the policy of one run on a rollout node, and the executor
// that runs the run's units with it.
type remoteRun struct {
	spec RunSpec
	pol  Policy
	exec unitExecutor // chunk set per unit (SetChunk)
	// use is held for reading while a chunk plays and for writing while
	// new weights load, so a chunk plays one version from start to end.
	use    sync.RWMutex
	loadMu sync.Mutex // one loader at a time
	have   atomic.Int64
}

// NewRemoteRunner returns the runner of a rollout node: outcomes go to st,
// specs and policies come from ps, gridnet runs on device ("cpu" or
// "xla:/path"). onUnit, when set, sees every unit the node ran.
func NewRemoteRunner(st *store.Store, ps *PolicyStore, device string, logger *slog.Logger, onUnit func(UnitLog)) *RemoteRunner {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	rr := &RemoteRunner{st: st, ps: ps, device: device, logger: logger, onUnit: onUnit}
	rr.chunk.Store(DefaultChunk)
	return rr
}

// SetEndpointKey sets the API key sent to an LLM run's endpoint (the
// coordinator's --serve-addr); call it before the first unit.
func (rr *RemoteRunner) SetEndpointKey(key string) { rr.endpointKey = key }

// SetChunk sets the instances played between two looks for a newer policy
// version (DefaultChunk; 0 plays every unit whole).
func (rr *RemoteRunner) SetChunk(n int) { rr.chunk.Store(int64(max(n, 0))) }

// SetLearnerVersion tells the runner how to read the learner's newest
// version as this node heard it (the rollout actors' PolicyVersion, see
// actors.RolloutHandle.Stats). Without it the runner asks the store before
// every unit.
func (rr *RemoteRunner) SetLearnerVersion(f func() int64) { rr.learnerVersion.Store(&f) }

// Stats returns the runner's counters.
func (rr *RemoteRunner) Stats() RemoteStats {
	return RemoteStats{Units: rr.units.Load(), Failed: rr.failed.Load(), PolicyLoads: rr.loads.Load(),
		PolicyLagSum: rr.lagSum.Load(), PolicyLagMax: rr.lagMax.Load(), Refreshes: rr.refreshes.Load()}
}

// Forget drops the cached run, so the next unit reads its run's spec and
// policy afresh (a rollout node calls it when it moves to another
// coordinator: a restarted run may reuse its id).
func (rr *RemoteRunner) Forget() {
	rr.mu.Lock()
	rr.cur = nil
	rr.mu.Unlock()
}

// RunID is the run whose units this runner played last ("" before the
// first unit, and after Forget).
func (rr *RemoteRunner) RunID() string {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.cur == nil {
		return ""
	}
	return rr.cur.spec.RunID
}

// learner returns the learner's version as heard by this node, or -1.
func (rr *RemoteRunner) learner() int64 {
	if f := rr.learnerVersion.Load(); f != nil {
		return (*f)()
	}
	return -1
}

// runFor returns the run's policy, building it on the run's first unit.
// Only the newest run is kept.
func (rr *RemoteRunner) runFor(ctx context.Context, runID string) (*remoteRun, error) {
	rr.mu.Lock()
	defer rr.mu.Unlock()
	if rr.cur != nil && rr.cur.spec.RunID == runID {
		return rr.cur, nil
	}
	spec, err := rr.ps.Spec(ctx, runID)
	if err != nil {
		return nil, err
	}
	pol, err := spec.NewPolicy(rr.device, rr.endpointKey)
	if err != nil {
		return nil, err
	}
	r := &remoteRun{spec: spec, pol: pol}
	r.exec = unitExecutor{runID: spec.RunID, seed: spec.Seed, groupSize: spec.GroupSize, pol: pol, st: rr.st, metrics: rr.metrics,
		traces: newStageTraces(rr.tracer, spec.RunID), acquire: func(ctx context.Context, u actors.WorkUnit) (int64, evaluate.Player, func(), error) {
			return rr.acquire(ctx, r, u)
		}, wire: true}
	r.have.Store(-1)
	rr.cur = r
	rr.logger.Info("rollout: serving run", "run", runID, "policy", spec.Policy)
	return r, nil
}

// sync loads the newest policy when r holds less than want, the version
// the learner is known to have reached (or always when want < 0: the
// learner's version is not known here).
func (rr *RemoteRunner) sync(ctx context.Context, r *remoteRun, want int64) error {
	if want >= 0 && want <= r.have.Load() {
		return nil
	}
	r.loadMu.Lock()
	defer r.loadMu.Unlock()
	have := r.have.Load()
	if want >= 0 && want <= have {
		return nil // loaded by another unit meanwhile
	}
	// Checking latest first keeps units playing while nothing changed.
	if v, err := rr.ps.Latest(ctx, r.spec.RunID); err != nil || v <= have {
		return err
	}
	r.use.Lock()
	defer r.use.Unlock()
	v, err := rr.ps.LoadLatest(ctx, r.spec.RunID, r.pol, have)
	if err != nil {
		return err
	}
	if v > have {
		r.have.Store(v)
		rr.loads.Add(1)
		rr.logger.Debug("rollout: policy loaded", "run", r.spec.RunID, "version", v)
	}
	return nil
}

// Prefetch starts loading version v in the background when the runner
// serves a run and holds an older one (at most one load at a time; a
// version announced meanwhile is taken by the next unit or chunk). It
// does not block: the rollout actors call it when the learner announces
// a version (actors.RolloutConfig.OnPolicy).
func (rr *RemoteRunner) Prefetch(v int64) {
	rr.mu.Lock()
	r := rr.cur
	rr.mu.Unlock()
	if r == nil || v <= r.have.Load() || !rr.prefetching.CompareAndSwap(false, true) {
		return
	}
	go func() {
		defer rr.prefetching.Store(false)
		ctx, cancel := context.WithTimeout(context.Background(), publishTimeout)
		defer cancel()
		if err := rr.sync(ctx, r, v); err != nil {
			rr.logger.Warn("rollout: policy prefetch failed", "run", r.spec.RunID, "version", v, "error", err)
		}
	}()
}

// RunUnit implements actors.Runner.
func (rr *RemoteRunner) RunUnit(ctx context.Context, u actors.WorkUnit) (actors.UnitDone, error) {
	d, err := rr.runUnit(ctx, u)
	if err != nil {
		rr.failed.Add(1)
		rr.logger.Warn("rollout: unit failed", "unit", u.UnitID, "error", err)
	}
	return d, err
}

// acquire brings r's policy to at least the learner's version as this
// node heard it and the version u was issued at (the store's newest when
// the learner's is not known here), and holds it for a chunk of u: the
// returned func releases it.
func (rr *RemoteRunner) acquire(ctx context.Context, r *remoteRun, u actors.WorkUnit) (int64, evaluate.Player, func(), error) {
	want := rr.learner() // < 0: not known here, ask the store
	if want >= 0 {
		want = max(want, u.PolicyVersion)
	}
	if err := rr.sync(ctx, r, want); err != nil {
		return 0, nil, nil, err
	}
	r.use.RLock()
	return r.pol.Version(), r.pol, r.use.RUnlock, nil
}

func (rr *RemoteRunner) runUnit(ctx context.Context, u actors.WorkUnit) (actors.UnitDone, error) {
	t0 := time.Now()
	r, err := rr.runFor(ctx, u.RunID)
	if err != nil {
		return actors.UnitDone{}, fmt.Errorf("unit %s: %w", u.UnitID, err)
	}
	e := r.exec
	e.chunk = int(rr.chunk.Load())
	out, err := e.run(ctx, u)
	if err != nil {
		return out.done, err
	}
	used := out.first
	if used < 0 { // no instance to play
		used = r.have.Load()
	}
	if out.last > used {
		rr.refreshes.Add(1)
	}
	lv := rr.learner()
	if lv < 0 {
		if lv, err = rr.ps.Latest(ctx, r.spec.RunID); err != nil {
			lv = used
		}
	}
	lv = max(lv, used) // the push may trail the store
	lag := lv - used
	rr.units.Add(1)
	rr.lagSum.Add(lag)
	for {
		m := rr.lagMax.Load()
		if lag <= m || rr.lagMax.CompareAndSwap(m, lag) {
			break
		}
	}
	if rr.onUnit != nil {
		rr.onUnit(UnitLog{Result: out.result, PolicyVersion: used, LearnerVersion: lv, Lag: lag, Millis: time.Since(t0).Milliseconds()})
	}
	return out.done, nil
}
