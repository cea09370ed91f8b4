package train

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/learner"
)

// unitExecutor runs work units, the actors.Runner of both the in-process
// run and a rollout node (RemoteRunner): it generates a unit's instances
// from the unit's config and its stage's seed (actors.StageSeed), plays
// them, records the outcome in Redis (once per unit, store.RecordUnit) and
// returns the groups.
//
// With chunk > 0 it plays the instances chunk at a time and asks acquire
// for the policy before each chunk, so a policy version published while the
// unit plays is taken up at the next chunk; each group carries the version
// it was played with, and chunk c samples with actors.ChunkSeed(unit seed,
// c). An executor is safe for concurrent use when its policy is.
type unitExecutor struct {
	runID     string
	seed      uint64 // the run seed
	groupSize int
	pol       Policy
	st        *store.Store
	traces    *stageTraces // nil: no spans
	// chunk > 0 plays a unit chunk instances at a time; 0 plays it whole.
	chunk int
	// acquire, when set, returns the policy version to play the next chunk
	// of u with, what plays it (pol, or that version at a rollout engine)
	// and a func to call once it is played (a rollout node holds its
	// policy's weights still meanwhile, a rollout engine the version
	// loaded). Unset, a chunk plays pol as it is, at pol.Version().
	acquire func(ctx context.Context, u actors.WorkUnit) (version int64, play evaluate.Player, release func(), err error)
	// gate orders a deterministic run's sampling (nil otherwise).
	gate *detGate
	// lost, when set, sees every error of the policy's Play (a lost compute
	// engine ends the run).
	lost func(error)
	// onUnit, when set, sees every unit's outcome record once it is
	// recorded (Options.OnUnit).
	onUnit func(UnitLog)
	// metrics, when set, times every unit (Options.Metrics).
	metrics *telemetry.Metrics
	// wire makes the groups carry their instance's JSON (Group.Instance):
	// they go to a learner on another node. Groups always carry the
	// instance itself in Group.Local for a learner in this process.
	wire bool
	// lag, when set, holds the policy lag (learner version - version
	// played) of the last unit recorded (a run's own rollouts).
	lag *atomic.Int64
}

// localExecutor is the executor of an in-process run of opt (defaults
// set) over pol: whole units, the policy as it is, groups that stay in
// this process. Run adds the run's traces, gate and engine-loss handler.
func localExecutor(opt Options, pol Policy, st *store.Store) *unitExecutor {
	return &unitExecutor{runID: opt.RunID, seed: opt.Seed, groupSize: opt.GroupSize, pol: pol, st: st, onUnit: opt.OnUnit, metrics: opt.Metrics,
		lag: new(atomic.Int64)}
}

// unitRun is what running one unit gave.
type unitRun struct {
	done   actors.UnitDone
	result store.UnitResult // the outcome recorded (zero for a unit with no instance)
	// first and last are the policy versions the unit's first and last
	// chunk played (-1 when the unit had no instance to play).
	first, last int64
}

// RunUnit implements actors.Runner.
func (e *unitExecutor) RunUnit(ctx context.Context, u actors.WorkUnit) (actors.UnitDone, error) {
	r, err := e.run(ctx, u)
	return r.done, err
}

// run generates, plays and records unit u and returns its groups.
func (e *unitExecutor) run(ctx context.Context, u actors.WorkUnit) (unitRun, error) {
	if u.Eval {
		return e.runEval(ctx, u)
	}
	t0 := time.Now()
	ctx, span := e.traces.start(telemetry.Extract(ctx, u.TraceHeaders), telemetry.SpanWorkUnit,
		attribute.String(telemetry.AttrWorkUnit, u.UnitID), attribute.Int(telemetry.AttrStage, u.Stage),
		attribute.Int(telemetry.AttrAttempt, u.Attempt), attribute.String(telemetry.AttrConfigVersion, u.ConfigVersion))
	defer span.End()
	out := unitRun{done: actors.UnitDone{UnitID: u.UnitID}, first: -1, last: -1}
	var cfg env.Config
	if err := json.Unmarshal(u.ConfigJSON, &cfg); err != nil {
		return unitRun{}, fmt.Errorf("unit %s: config: %w", u.UnitID, err)
	}
	lo, hi := u.Lo, min(u.Hi, cfg.Instances)
	if lo >= hi {
		return out, nil
	}
	ins, err := env.Generate(cfg, actors.StageSeed(e.seed, u.Stage), lo, hi)
	if err != nil {
		return unitRun{}, fmt.Errorf("unit %s: %w", u.UnitID, err)
	}
	if e.gate != nil {
		if _, err := e.gate.wait(ctx, false); err != nil {
			return unitRun{}, fmt.Errorf("unit %s: %w", u.UnitID, err)
		}
	}
	chunk := len(ins)
	if e.chunk > 0 {
		chunk = e.chunk
	}
	for c, first := 0, 0; first < len(ins); c, first = c+1, first+chunk {
		part := ins[first:min(first+chunk, len(ins))]
		version, err := e.playChunk(ctx, u, c, part, &out)
		if err != nil {
			return unitRun{}, err
		}
		if c == 0 {
			out.first = version
		}
		out.last = version
	}
	if _, err := e.st.RecordUnit(ctx, out.result); err != nil {
		return unitRun{}, fmt.Errorf("unit %s: record: %w", u.UnitID, err)
	}
	d := time.Since(t0)
	e.reportUnit(out.result, d)
	e.metrics.ObserveUnit(d, span.SpanContext())
	out.done.Stats.Instances = len(ins)
	out.done.Stats.Millis = d.Milliseconds()
	if e.gate != nil {
		e.gate.sent(u.UnitID, len(out.done.Groups))
	}
	return out, nil
}

// playChunk plays chunk c of u (the instances part), adds its groups and
// outcome to out and returns the policy version it played.
func (e *unitExecutor) playChunk(ctx context.Context, u actors.WorkUnit, c int, part []*env.Instance, out *unitRun) (int64, error) {
	version, play, release, err := e.hold(ctx, u)
	if err != nil {
		return 0, fmt.Errorf("unit %s: policy: %w", u.UnitID, err)
	}
	_, ss := e.traces.start(ctx, telemetry.SpanSample, attribute.Int64(telemetry.AttrPolicyVersion, version))
	ro, err := play.Play(part, e.groupSize, 1, actors.ChunkSeed(u.Seed, c))
	release()
	ss.SetAttributes(attribute.Int(telemetry.AttrSamples, len(part)*e.groupSize))
	ss.End()
	if err != nil {
		if e.lost != nil {
			e.lost(err)
		}
		return 0, fmt.Errorf("unit %s: %w", u.UnitID, err)
	}
	pr := AggregateEpisodes(e.runID, u.Stage, store.SplitTrain, u.UnitID, ro.Episodes, version, u.ConfigVersion)
	if c == 0 {
		out.result = pr
	} else {
		mergeResult(&out.result, pr)
	}
	if err := appendGroups(&out.done, part, ro, e.groupSize, version, u.ConfigVersion, e.wire); err != nil {
		return 0, err
	}
	return version, nil
}

// hold returns the policy version to play the next part of u with, what
// plays it and the func that lets it go once played: acquire's, or the
// policy as it is.
func (e *unitExecutor) hold(ctx context.Context, u actors.WorkUnit) (int64, evaluate.Player, func(), error) {
	if e.acquire == nil {
		return e.pol.Version(), e.pol, func() {}, nil
	}
	return e.acquire(ctx, u)
}

// appendGroups adds one group per instance of ins, played in ro at policy
// version, to d and counts its episodes in d.Stats. Each group carries its
// instance in Local, and its JSON in Instance when wire is set.
func appendGroups(d *actors.UnitDone, ins []*env.Instance, ro *learner.Rollout, g int, version int64, configVersion string, wire bool) error {
	for i, in := range ins {
		grp := actors.Group{InstanceID: in.ID, Seed: in.Seed, PolicyVersion: version, ConfigVersion: configVersion, Local: in}
		if wire {
			b, err := json.Marshal(in)
			if err != nil {
				return err
			}
			grp.Instance = b
		}
		for e := i * g; e < (i+1)*g; e++ {
			ep := &ro.Episodes[e]
			grp.Samples = append(grp.Samples, actors.Sample{
				Tokens: append([]int32(nil), ro.Actions[ep.Lo:ep.Hi]...), LogProbs: append([]float32(nil), ro.LogProbs[ep.Lo:ep.Hi]...),
				Reward: float32(ep.Reward), Valid: ep.Report.Valid, Optimal: ep.Report.Optimal,
			})
			d.Stats.Samples++
			d.Stats.RewardSum += ep.Reward
			if ep.Report.Valid {
				d.Stats.Valid++
			}
			if ep.Report.Optimal {
				d.Stats.Optimal++
			}
		}
		d.Groups = append(d.Groups, grp)
	}
	return nil
}

// groupInstance returns g's instance: the one it carries in this process
// (Group.Local), else its JSON decoded (a group from another node).
func groupInstance(g *actors.Group) (*env.Instance, error) {
	if in, ok := g.Local.(*env.Instance); ok && in != nil {
		return in, nil
	}
	in := new(env.Instance)
	if err := json.Unmarshal(g.Instance, in); err != nil {
		return nil, fmt.Errorf("group %s: instance: %w", g.InstanceID, err)
	}
	return in, nil
}

// reportUnit records the policy lag of a unit this process's rollouts
// recorded (the learner's version now minus the version it played) and
// hands it to Options.OnUnit: the one place the lag of a local unit is
// computed.
func (e *unitExecutor) reportUnit(r store.UnitResult, d time.Duration) {
	learner := e.pol.Version()
	lag := max(learner-r.PolicyVersion, 0)
	if e.lag != nil {
		e.lag.Store(lag)
	}
	if e.onUnit != nil {
		e.onUnit(UnitLog{Result: r, PolicyVersion: r.PolicyVersion, LearnerVersion: learner, Lag: lag, Millis: d.Milliseconds()})
	}
}
