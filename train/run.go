package train

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/genmetrics"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
)

// run holds a run's state shared by the runner, updater and proposer: its
// units run through units (unit.go), it learns in Update, and it closes
// each stage and proposes the next in Propose (evalstage.go, propose.go).
type run struct {
	opt  Options
	pol  Policy
	st   *store.Store
	val  []*env.Instance
	eval []*env.Instance
	// evalPlan is the evaluation the coordinator leases after each stage:
	// the specs of val and eval.
	evalPlan []actors.EvalSplit
	units    *unitExecutor

	// gate orders a deterministic run's sampling (nil otherwise).
	gate *detGate

	// abort ends the run with a cause (a lost compute engine: every later
	// unit and update would fail the same way).
	abort context.CancelCauseFunc

	// flow tracks the groups the learner used, kept late and discarded,
	// per stage (flow.go).
	flow flowTracker
	// nodes records the run's nodes with their load in Redis.
	nodes nodesRecorder

	// push is the rollout engine every rollout samples at (nil: none;
	// push.go).
	push *pushRun

	// sampler is the policy's generation scheduler (nil: it has none); samp0 its counters
	// when the current stage started.
	sampler SamplingReporter
	samp0   engine.SchedulerStats

	mu         sync.Mutex
	stageStart time.Time
	learn      learnAcc
	res        *Result
	configs    map[int]env.Config
	traces     *stageTraces
}

// lost ends the run when err says the policy's compute engine is gone
// (learner.ErrEngineLost): no later unit or update could succeed.
func (r *run) lost(err error) {
	if errors.Is(err, learner.ErrEngineLost) && r.abort != nil {
		r.abort(err)
	}
}

// Update implements actors.Updater.
func (r *run) Update(ctx context.Context, groups []actors.Group) (int64, error) {
	t0, before := time.Now(), r.pol.Version()
	rgs := make([]learner.ReplayedGroup, 0, len(groups))
	for i := range groups {
		g := &groups[i]
		in, err := groupInstance(g)
		if err != nil {
			return r.pol.Version(), err
		}
		rg := learner.ReplayedGroup{Instance: in}
		for _, s := range g.Samples {
			rg.Actions = append(rg.Actions, s.Tokens)
			rg.LogProbs = append(rg.LogProbs, s.LogProbs)
			rg.Rewards = append(rg.Rewards, s.Reward)
		}
		rgs = append(rgs, rg)
	}
	_, span := r.traces.start(r.traces.current(), telemetry.SpanLearnerUpdate, attribute.Int(telemetry.AttrSamples, len(groups)))
	st, sig, err := r.pol.Update(rgs)
	span.End()
	if err != nil {
		r.lost(err)
		if r.gate != nil {
			r.gate.failed(fmt.Errorf("update at policy version %d: %w", before, err))
		}
		return r.pol.Version(), err
	}
	r.published(ctx, before)
	d, c := time.Since(t0), countBatch(groups, before)
	r.opt.Metrics.ObserveLearnerStep(d, span.SpanContext())
	r.mu.Lock()
	r.learn.add(c, st, sig, d)
	r.mu.Unlock()
	if r.gate != nil {
		r.gate.updated() // after the metrics: the stage's end waits for it
	}
	r.opt.Logger.Info("train: update", updateMetrics(c, st, sig, r.pol.Version(), d).attrs()...)
	return r.pol.Version(), nil
}

// published publishes the policy after an update from version before: to
// the rollout engine when the update made a version (Redis learns of it
// once the engine loaded it), else straight to Redis.
func (r *run) published(ctx context.Context, before int64) {
	if r.push == nil {
		r.opt.Cluster.publish(r.opt.RunID, r.pol, r.opt.Logger)
		return
	}
	if v := r.pol.Version(); v > before {
		r.push.written(ctx, v, r.gate != nil)
	}
}

// hold returns the policy version the run's own evaluation plays, what
// plays it (the policy, or that version at the rollout engine) and the
// func that lets it go.
func (r *run) hold(ctx context.Context) (int64, evaluate.Player, func(), error) {
	if r.push == nil {
		return r.pol.Version(), r.pol, func() {}, nil
	}
	return r.push.acquire(ctx, actors.WorkUnit{})
}

// Run trains pol for opt.Stages stages, recording everything in st. With
// opt.Resume it continues the run after its latest checkpoint instead.
func Run(ctx context.Context, opt Options, pol Policy, st *store.Store) (*Result, error) {
	opt.SetDefaults()
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	if opt.Strategy == nil {
		s, err := engineer.ParseStrategy(engineer.NameLearnability, engineer.Options{Seed: opt.Seed, Base: &opt.Config, Feasible: env.CheckFeasible})
		if err != nil {
			return nil, err
		}
		opt.Strategy = s
	}
	// A broken deterministic run cancels ctx with the reason.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	r := &run{opt: opt, pol: pol, st: st, res: &Result{RunID: opt.RunID}, configs: map[int]env.Config{0: opt.Config},
		traces: newStageTraces(opt.Tracer, opt.RunID), abort: cancel}
	ps, closeFlow := flowStore(ctx, opt, st.URL())
	defer closeFlow()
	r.flow.ps, r.flow.on = ps, opt.OnFlow
	r.flow.rec = FlowRecord{RunID: opt.RunID, MaxLag: opt.MaxLag, StalenessK: opt.StalenessK, KeepLateK: opt.KeepLateK, KeepStale: opt.KeepStale}
	r.flow.warn = func(err error) { opt.Logger.Warn("train: flow record not written", "error", err) }
	r.nodes = nodesRecorder{st: st, run: opt.RunID, members: opt.Cluster.Members,
		warn: func(err error) { opt.Logger.Warn("train: nodes record not written", "error", err) }}
	if err := r.suites(); err != nil {
		return nil, err
	}
	if err := r.watchSampling(); err != nil {
		return nil, err
	}
	fmt.Fprintf(opt.Out, "run %s: %s policy, %d stages × %d instances (group %d), engineer %s; validation %d, benchmark %d instances\n",
		opt.RunID, pol.Name(), opt.Stages, opt.Config.Instances, opt.GroupSize, opt.Strategy.Name(), len(r.val), len(r.eval))
	first := 0
	if opt.Resume {
		var err error
		if first, err = r.resumeStages(ctx); err != nil {
			return nil, err
		}
		if first == opt.Stages {
			return r.res, nil
		}
	}
	if opt.RolloutEngine != nil {
		var err error
		if r.push, err = startPush(ctx, opt, pol); err != nil {
			return nil, err
		}
		defer r.push.stop()
	}
	return r.stages(ctx, first)
}

// watchSampling follows the policy's generation scheduler, if it has one: the stages'
// sampling lines, and its counters on the run's /metrics.
func (r *run) watchSampling() error {
	sr, ok := r.pol.(SamplingReporter)
	if !ok {
		return nil
	}
	if r.samp0, ok = sr.SamplingStats(); !ok {
		return nil
	}
	r.sampler = sr
	if r.opt.Metrics != nil {
		return r.opt.Metrics.Register(genmetrics.New(sr.SamplingStats))
	}
	return nil
}

// suites generates the validation and benchmark suites and plans their evaluation units.
func (r *run) suites() (err error) {
	valSpec := env.ValidationSpec(r.opt.SuiteSeed, r.opt.ValPerSize)
	if r.val, err = env.GenerateSuite(&valSpec, 0, valSpec.Len()); err != nil {
		return err
	}
	evalSpec := env.PaperEvalSpec(r.opt.SuiteSeed, r.opt.EvalPerSize)
	if r.eval, err = env.GenerateSuite(&evalSpec, 0, evalSpec.Len()); err != nil {
		return err
	}
	r.evalPlan, err = evalSplits(&valSpec, &evalSpec)
	return err
}

// stages runs stages first… of the run on the in-process actor system (the initial
// evaluation first, unless resumed) and closes the last one.
func (r *run) stages(ctx context.Context, first int) (*Result, error) {
	opt, pol, st := r.opt, r.pol, r.st
	if opt.Deterministic {
		r.gate = newDetGate(ctx, pol, opt.LearnerBatch, r.abort)
	}
	r.units = localExecutor(opt, pol, st)
	r.units.traces, r.units.gate, r.units.lost = r.traces, r.gate, r.lost
	if r.push != nil {
		r.units.acquire = r.push.acquire
	}
	printHeader(opt.Out)
	if !opt.Resume {
		r.res.Initial.Stage = -1
		if err := r.evalStage(ctx, -1, &r.res.Initial); err != nil {
			return nil, err
		}
		printStage(opt.Out, &r.res.Initial)
	}
	sc, err := r.systemConfig(ctx, first)
	if err != nil {
		return nil, err
	}
	tr := r.track(ctx, &sc) // state.go: the run's state in Redis at every phase
	defer tr.stop()
	sys, err := actors.NewLocal(sc, tr, tr, tr, opt.Logger)
	if err != nil {
		return nil, err
	}
	defer sys.Close()
	r.flow.attach(sys)
	r.nodes.attach(sys, cmp.Or(r.opt.NodeName, sc.Node), r.units.lag.Load)
	if opt.Cluster.Started != nil {
		if err := opt.Cluster.Started(sys); err != nil {
			return nil, err
		}
	}
	r.stageStart = time.Now()
	if r.sampler != nil { // the first stage's counters start after the initial evaluation
		r.samp0, _ = r.sampler.SamplingStats()
	}
	rep, err := sys.Run(ctx, opt.Stages)
	r.res.Actors = rep
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrDeterminism) || errors.Is(cause, learner.ErrEngineLost) {
			err = cause
		}
		return r.res, err
	}
	tr.evaluating(opt.Stages - 1)
	_, err = r.closeStage(ctx, opt.Stages-1)
	r.traces.end(opt.Stages - 1)
	if err == nil {
		printFlowTotal(opt.Out, r.res.Flow())
	}
	return r.res, err
}

// resumeStages resumes the run (resume.go) and returns the first stage to
// run: opt.Stages when every stage was done already. It proposes that
// stage's config again when the interrupted run died before recording it.
func (r *run) resumeStages(ctx context.Context) (int, error) {
	after, err := r.resume(ctx)
	if err != nil {
		return 0, err
	}
	first := after + 1
	r.res.FirstStage = first
	if first == r.opt.Stages {
		fmt.Fprintf(r.opt.Out, "run %s: all %d stages were done already\n", r.opt.RunID, r.opt.Stages)
		return first, nil
	}
	if _, ok := r.configs[first]; !ok {
		// Interrupted between the checkpoint and the next config.
		_, _, _, err := r.propose(ctx, first, true)
		r.traces.end(after)
		if err != nil {
			return 0, fmt.Errorf("resume: config of stage %d: %w", first, err)
		}
	}
	return first, nil
}

// systemConfig records the config of stage 0 (a new run) and returns the
// actor system's config for a run from stage first, the cluster settings
// applied (and the run's spec and policy published for rollout nodes).
func (r *run) systemConfig(ctx context.Context, first int) (actors.SystemConfig, error) {
	opt := r.opt
	firstCfg := r.configs[first]
	cfgJSON, err := json.Marshal(firstCfg)
	if err != nil {
		return actors.SystemConfig{}, err
	}
	if !opt.Resume {
		if err := r.st.PutConfig(ctx, opt.RunID, store.ConfigRecord{Stage: 0, Version: opt.Config.Hash(), JSON: cfgJSON, Proposer: "initial"}); err != nil {
			return actors.SystemConfig{}, err
		}
	}
	units := (opt.Config.Instances + opt.InstancesPerUnit - 1) / opt.InstancesPerUnit
	sc := actors.DefaultSystemConfig()
	sc.RunID, sc.Rollouts, sc.MaxInFlight = opt.RunID, opt.Rollouts, opt.MaxInFlight
	sc.UnitsPerStage, sc.InstancesPerUnit, sc.Epochs, sc.Seed = units, opt.InstancesPerUnit, opt.Epochs, opt.Seed
	sc.Split = store.SplitTrain
	sc.FirstStage, sc.InitialConfigVersion, sc.InitialConfigJSON = first, firstCfg.Hash(), cfgJSON
	sc.LearnerBatch, sc.StalenessK, sc.KeepStale = opt.LearnerBatch, opt.StalenessK, opt.KeepStale
	sc.MaxLag, sc.KeepLateK = opt.MaxLag, opt.KeepLateK
	sc.StageHeaders = r.traces.headers
	sc.Eval = r.evalPlan
	sc.OnLearnerWait = r.traces.learnerWait
	if err := opt.Cluster.prepare(ctx, &sc, opt, r.pol); err != nil {
		return actors.SystemConfig{}, err
	}
	return sc, nil
}
