package train

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// ErrOptions marks invalid run options.
var ErrOptions = errors.New("train: invalid options")

// OptionError names the option and the bound it broke.
type OptionError struct {
	Field  string
	Value  any
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("train: %s = %v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrOptions.
func (e *OptionError) Unwrap() error { return ErrOptions }

// Options configure a run. Zero values take the documented defaults.
type Options struct {
	// RunID names the run in Redis. Default "run-<seed>".
	RunID string
	// Stages is the number of training stages. Default 8.
	Stages int
	// Seed seeds instance generation and sampling. Default 1.
	Seed uint64
	// Config is the stage-0 generator config. Default env.DefaultLocalConfig().
	Config env.Config
	// InstancesPerUnit is the number of instances in one work unit. Default 16.
	InstancesPerUnit int
	// Rollouts is the number of rollout actors; MaxInFlight each one's
	// credit. Defaults 2 and 2.
	Rollouts, MaxInFlight int
	// GroupSize is the GRPO group size (episodes per instance). Default 8.
	GroupSize int
	// LearnerBatch is the number of groups per policy update. Default 32.
	LearnerBatch int
	// StalenessK drops groups more than K policy versions old. Default 4
	// (in one process rollouts lag the learner by its queue, a few updates).
	StalenessK int64
	// KeepStale keeps stale groups however old (importance weights correct
	// them).
	KeepStale bool
	// MaxLag paces dispatch by the learner (actors.SystemConfig.MaxLag):
	// the coordinator issues a unit only while its groups can reach an
	// update within MaxLag policy versions of the learner's version at
	// issue, and rollouts with free slots wait meanwhile. Default 2;
	// negative turns pacing off (every free slot gets a unit at once). It
	// must not exceed StalenessK.
	MaxLag int64
	// KeepLateK keeps groups more than StalenessK but at most KeepLateK
	// versions old (a unit overtaken by later ones), their loss corrected
	// by the truncated importance weights, instead of dropping them.
	// Default 2·StalenessK; a value below StalenessK keeps none.
	KeepLateK int64
	// OnFlow, when set, sees the run's flow record (groups used, kept late
	// and discarded, per stage and in all, and the time dispatch waited for
	// the learner) each time it changes, as it is written to Redis. It is
	// called from the run's goroutines and must not block.
	OnFlow func(FlowRecord)
	// Strategy designs each next stage. Default: learnability.
	Strategy engineer.Strategy
	// ValPerSize and EvalPerSize size the validation set (2 agents, sizes
	// 3..10) and the 3/4/5-agent benchmark suite. Defaults 20 and 10.
	ValPerSize, EvalPerSize int
	// SuiteSeed seeds the validation and benchmark suites. Default 2026.
	SuiteSeed uint64
	// CheckpointDir, when set, receives a checkpoint after every stage
	// (gridnet only), indexed in Redis.
	CheckpointDir string
	// Out receives the per-stage progress table. Default io.Discard.
	Out io.Writer
	// Logger logs the runtime. Default: discard.
	Logger *slog.Logger
	// Tracer, when set, traces the run: a span per stage, work unit,
	// sampling, learner update, evaluation and engineer proposal, with the
	// stage's context carried to every node in WorkUnit.TraceHeaders.
	Tracer trace.Tracer
	// OnUnit, when set, sees every training unit's outcome record as the
	// Runner records it (tests use it to check the aggregates).
	OnUnit func(store.UnitResult)
	// Cluster connects the run to rollouts on other nodes (t2t node); the
	// zero value keeps the run in this process. See Cluster.
	Cluster Cluster
	// OnState, when set, sees every run state the run records in Redis
	// (store.RunState: stage, phase, policy and config version; see
	// state.go). It is called from the actors' goroutines and must not block.
	OnState func(store.RunState)
	// Deterministic makes the run's weights a function of its options
	// alone: one rollout running one unit at a time (Rollouts and
	// MaxInFlight are set to 1, KeepStale to true), each unit sampling the
	// weights that every earlier unit's full learner batches make, and no
	// group left waiting for a batch at a stage's end. Config.Instances
	// must be a multiple of InstancesPerUnit and of LearnerBatch, and the
	// engineer's proposals keep Config.Instances. See determinism.go.
	Deterministic bool
	// Resume continues the run RunID after its latest checkpoint in Redis
	// (stage s): the policy (a GridPolicy) loads that checkpoint (weights,
	// optimizer state, version), the config history comes from Redis, and
	// the run goes on at stage s+1 with the same unit ids and seeds. Needs
	// CheckpointDir, a Redis that outlived the interrupted run, and the
	// options of the interrupted run. See resume.go.
	Resume bool
}

func (o *Options) defaults() {
	if o.Stages == 0 {
		o.Stages = 8
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	if o.RunID == "" {
		o.RunID = fmt.Sprintf("run-%d", o.Seed)
	}
	if o.Config.Sizes == nil {
		o.Config = env.DefaultLocalConfig()
	}
	if o.InstancesPerUnit == 0 {
		o.InstancesPerUnit = 16
	}
	if o.Rollouts == 0 {
		o.Rollouts = 2
	}
	if o.MaxInFlight == 0 {
		o.MaxInFlight = 2
	}
	if o.GroupSize == 0 {
		o.GroupSize = 8
	}
	if o.LearnerBatch == 0 {
		o.LearnerBatch = 32
	}
	if o.StalenessK == 0 {
		o.StalenessK = 4
	}
	if o.MaxLag == 0 {
		o.MaxLag = min(DefaultMaxLag, o.StalenessK)
	}
	if o.KeepLateK == 0 {
		o.KeepLateK = 2 * o.StalenessK
	}
	if o.ValPerSize == 0 {
		o.ValPerSize = 20
	}
	if o.EvalPerSize == 0 {
		o.EvalPerSize = 10
	}
	if o.SuiteSeed == 0 {
		o.SuiteSeed = 2026
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Deterministic {
		o.Rollouts, o.MaxInFlight, o.KeepStale = 1, 1, true
	}
}

// Validate checks the options (after defaults).
func (o *Options) Validate() error {
	switch {
	case o.Stages < 1 || o.Stages > 1000:
		return &OptionError{"stages", o.Stages, "must be in [1,1000]"}
	case o.InstancesPerUnit < 1 || o.InstancesPerUnit > 4096:
		return &OptionError{"instances-per-unit", o.InstancesPerUnit, "must be in [1,4096]"}
	case o.Cluster.RemoteOnly && o.Cluster.Listen == "":
		return &OptionError{"cluster.listen", o.Cluster.Listen, "a run without local rollouts must listen for other nodes"}
	case !o.Cluster.RemoteOnly && (o.Rollouts < 1 || o.Rollouts > 256):
		return &OptionError{"rollouts", o.Rollouts, "must be in [1,256]"}
	case o.MaxInFlight < 1 || o.MaxInFlight > 64:
		return &OptionError{"max-in-flight", o.MaxInFlight, "must be in [1,64]"}
	case o.GroupSize < 1 || o.GroupSize > 256:
		return &OptionError{"group", o.GroupSize, "must be in [1,256]"}
	case o.LearnerBatch < 1 || o.LearnerBatch > 4096:
		return &OptionError{"learner-batch", o.LearnerBatch, "must be in [1,4096]"}
	case o.StalenessK < 0:
		return &OptionError{"staleness", o.StalenessK, "must be >= 0"}
	case o.MaxLag > o.StalenessK:
		return &OptionError{"max-lag", o.MaxLag, fmt.Sprintf("must be <= the staleness bound %d (pacing beyond it dispatches work the learner drops), or negative (no pacing)", o.StalenessK)}
	case o.ValPerSize < 1 || o.ValPerSize > 1000 || o.EvalPerSize < 1 || o.EvalPerSize > 1000:
		return &OptionError{"val/eval per size", fmt.Sprintf("%d/%d", o.ValPerSize, o.EvalPerSize), "must be in [1,1000]"}
	case o.Config.Instances < 1:
		return &OptionError{"config.instances", o.Config.Instances, "a training stage needs at least one instance"}
	}
	if err := o.validateModes(); err != nil {
		return err
	}
	if err := o.Config.Validate(); err != nil {
		return fmt.Errorf("%w: stage-0 config: %w", ErrOptions, err)
	}
	if err := env.CheckFeasible(o.Config); err != nil {
		return fmt.Errorf("%w: stage-0 config: %w", ErrOptions, err)
	}
	return nil
}

// Rates are valid and optimal shares over a set of episodes.
type Rates struct {
	Episodes       int64
	Valid, Optimal float64
}

func ratesOf(c store.Counts) Rates {
	if c.Episodes == 0 {
		return Rates{}
	}
	return Rates{Episodes: c.Episodes, Valid: float64(c.Valid) / float64(c.Episodes), Optimal: float64(c.Optimal) / float64(c.Episodes)}
}

// StageReport is what one stage did and how the policy did after it.
type StageReport struct {
	Stage         int
	ConfigVersion string
	Config        env.Config
	// Train is over the stage's training episodes (sampled); Val over the
	// validation set and Eval per agent count over the benchmark suite,
	// both greedy, after the stage.
	Train     Rates
	Val       Rates
	Eval      map[int]Rates
	Updates   int
	MeanLoss  float64
	ZeroShare float64
	// Learn sums up the stage's learner updates (Updates, MeanLoss and
	// ZeroShare repeat three of its fields).
	Learn    LearnStats
	Policy   int64
	Duration time.Duration
	// Rationale is the engineer's reason for the next stage's config.
	Rationale string
	// Flow is what became of the groups that reached the learner during
	// the stage, and how long dispatch waited for the learner.
	Flow FlowStats
}

// Result is the whole run.
type Result struct {
	RunID string
	// FirstStage is the first stage this call ran: 0, or s+1 for a run
	// resumed after stage s (Stages then starts there, and Initial is
	// empty).
	FirstStage int
	Initial    StageReport // the untrained policy's evaluation (Stage -1)
	Stages     []StageReport
	Actors     actors.RunReport
}

// run holds a run's state shared by the runner, updater and proposer.
type run struct {
	opt   Options
	pol   Policy
	st    *store.Store
	val   []*env.Instance
	eval  []*env.Instance
	start time.Time

	// gate orders a deterministic run's sampling (nil otherwise).
	gate *detGate
	// chunk, when > 0, plays a unit this many instances at a time, calling
	// acquire (when set) before each chunk for the policy version to play
	// and a func to call after playing (RemoteRunner).
	chunk   int
	acquire func(ctx context.Context) (version int64, release func(), err error)

	// abort ends the run with a cause (a lost compute engine: every later
	// unit and update would fail the same way).
	abort context.CancelCauseFunc

	// flow tracks the groups the learner used, kept late and discarded,
	// per stage (flow.go).
	flow flowTracker

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

// stageSeed derives a stage's generator seed from the run seed.
func stageSeed(seed uint64, stage int) uint64 {
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(stage))
	s := sha256.Sum256(b[:])
	return binary.LittleEndian.Uint64(s[:8])
}

// RunUnit implements actors.Runner: generate the unit's instances, play
// them, record the outcomes in Redis and return the groups.
//
// A run with chunk > 0 (a rollout node's, see RemoteRunner) plays the
// instances chunk at a time and asks acquire for the policy before each
// chunk, so a policy version published while the unit plays is taken up
// at the next chunk; each group carries the version it was played with.
// Chunk c > 0 samples with its own seed derived from the unit's.
func (r *run) RunUnit(ctx context.Context, u actors.WorkUnit) (actors.UnitDone, error) {
	t0 := time.Now()
	ctx, span := r.traces.start(telemetry.Extract(ctx, u.TraceHeaders), telemetry.SpanWorkUnit,
		attribute.String(telemetry.AttrWorkUnit, u.UnitID), attribute.Int(telemetry.AttrStage, u.Stage),
		attribute.Int(telemetry.AttrAttempt, u.Attempt), attribute.String(telemetry.AttrConfigVersion, u.ConfigVersion))
	defer span.End()
	var cfg env.Config
	if err := json.Unmarshal(u.ConfigJSON, &cfg); err != nil {
		return actors.UnitDone{}, fmt.Errorf("unit %s: config: %w", u.UnitID, err)
	}
	lo, hi := u.Lo, min(u.Hi, cfg.Instances)
	if lo >= hi {
		return actors.UnitDone{UnitID: u.UnitID}, nil
	}
	ins, err := env.Generate(cfg, stageSeed(r.opt.Seed, u.Stage), lo, hi)
	if err != nil {
		return actors.UnitDone{}, fmt.Errorf("unit %s: %w", u.UnitID, err)
	}
	if r.gate != nil {
		if _, err := r.gate.wait(ctx, false); err != nil {
			return actors.UnitDone{}, fmt.Errorf("unit %s: %w", u.UnitID, err)
		}
	}
	chunk := len(ins)
	if r.chunk > 0 {
		chunk = r.chunk
	}
	done := actors.UnitDone{UnitID: u.UnitID}
	var res store.UnitResult
	for c, first := 0, 0; first < len(ins); c, first = c+1, first+chunk {
		part := ins[first:min(first+chunk, len(ins))]
		version, release := r.pol.Version(), func() {}
		if r.acquire != nil {
			if version, release, err = r.acquire(ctx); err != nil {
				return actors.UnitDone{}, fmt.Errorf("unit %s: policy: %w", u.UnitID, err)
			}
		}
		_, ss := r.traces.start(ctx, telemetry.SpanSample, attribute.Int64(telemetry.AttrPolicyVersion, version))
		ro, err := r.pol.Play(part, r.opt.GroupSize, 1, chunkSeed(u.Seed, c))
		release()
		ss.SetAttributes(attribute.Int(telemetry.AttrSamples, len(part)*r.opt.GroupSize))
		ss.End()
		if err != nil {
			r.lost(err)
			return actors.UnitDone{}, fmt.Errorf("unit %s: %w", u.UnitID, err)
		}
		pr := unitResult(r.opt.RunID, u.Stage, "train", u.UnitID, ro, version, u.ConfigVersion)
		if c == 0 {
			res = pr
		} else {
			mergeResult(&res, pr)
		}
		if err := appendGroups(&done, part, ro, r.opt.GroupSize, version, u.ConfigVersion); err != nil {
			return actors.UnitDone{}, err
		}
	}
	if _, err := r.st.RecordUnit(ctx, res); err != nil {
		return actors.UnitDone{}, fmt.Errorf("unit %s: record: %w", u.UnitID, err)
	}
	if r.opt.OnUnit != nil {
		r.opt.OnUnit(res)
	}
	done.Stats.Instances = len(ins)
	done.Stats.Millis = time.Since(t0).Milliseconds()
	if r.gate != nil {
		r.gate.sent(u.UnitID, len(done.Groups))
	}
	return done, nil
}

// chunkSeed is the sampling seed of chunk c of a unit: the unit's own for
// chunk 0 (a unit played whole samples as it always did).
func chunkSeed(seed uint64, c int) uint64 {
	if c == 0 {
		return seed
	}
	return unitSeedMix(seed, uint64(c))
}

// unitSeedMix mixes k into seed (splitmix64 finaliser).
func unitSeedMix(seed, k uint64) uint64 {
	z := seed ^ k*0x9e3779b97f4a7c15
	z += 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// appendGroups adds one group per instance of ins, played in ro at policy
// version, to d and counts its episodes in d.Stats.
func appendGroups(d *actors.UnitDone, ins []*env.Instance, ro *learner.Rollout, g int, version int64, configVersion string) error {
	for i, in := range ins {
		inJSON, err := json.Marshal(in)
		if err != nil {
			return err
		}
		grp := actors.Group{InstanceID: in.ID, Seed: in.Seed, PolicyVersion: version, ConfigVersion: configVersion, Instance: inJSON}
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

// Update implements actors.Updater.
func (r *run) Update(_ context.Context, groups []actors.Group) (int64, error) {
	t0, before := time.Now(), r.pol.Version()
	rgs := make([]learner.ReplayedGroup, 0, len(groups))
	for _, g := range groups {
		in := new(env.Instance)
		if err := json.Unmarshal(g.Instance, in); err != nil {
			return r.pol.Version(), fmt.Errorf("group %s: instance: %w", g.InstanceID, err)
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
	r.opt.Cluster.publish(r, r.pol)
	d, c := time.Since(t0), countBatch(groups, before)
	r.mu.Lock()
	r.learn.add(c, st, sig, d)
	r.mu.Unlock()
	if r.gate != nil {
		r.gate.updated() // after the metrics: the stage's end waits for it
	}
	r.opt.Logger.Info("train: update", updateMetrics(c, st, sig, r.pol.Version(), d).attrs()...)
	return r.pol.Version(), nil
}

// evaluate plays the policy greedily on ins and returns the counts per
// (size, agents).
func (r *run) evaluate(ins []*env.Instance, seed uint64) (*learner.Rollout, map[store.Key]store.Counts, error) {
	ro, err := r.pol.Play(ins, 1, 0, seed)
	if err != nil {
		return nil, nil, err
	}
	res := unitResult(r.opt.RunID, 0, "eval", "eval", ro, r.pol.Version(), "")
	return ro, res.Buckets, nil
}

// evalStage evaluates after stage (or before any stage for stage -1),
// records the results in Redis (stage >= 0) and fills rep.
func (r *run) evalStage(ctx context.Context, stage int, rep *StageReport) error {
	for _, split := range []struct {
		name string
		ins  []*env.Instance
	}{{"val", r.val}, {"eval:paper", r.eval}} {
		var span trace.Span
		if stage >= 0 {
			_, span = r.traces.start(r.traces.ctx(stage), telemetry.SpanEval, attribute.String("t2t.split", split.name))
		}
		ro, buckets, err := r.evaluate(split.ins, stageSeed(r.opt.Seed^0xe7a1, stage))
		if span != nil {
			span.End()
		}
		if err != nil {
			return fmt.Errorf("%s after stage %d: %w", split.name, stage, err)
		}
		if stage >= 0 {
			res := unitResult(r.opt.RunID, stage, split.name, split.name, ro, r.pol.Version(), "")
			if _, err := r.st.RecordUnit(ctx, res); err != nil {
				return fmt.Errorf("%s after stage %d: record: %w", split.name, stage, err)
			}
		}
		var all store.Counts
		per := map[int]store.Counts{}
		for k, c := range buckets {
			all = all.Add(c)
			per[k.Agents] = per[k.Agents].Add(c)
		}
		if split.name == "val" {
			rep.Val = ratesOf(all)
		} else {
			rep.Eval = map[int]Rates{}
			for k, c := range per {
				rep.Eval[k] = ratesOf(c)
			}
		}
	}
	rep.Policy = r.pol.Version()
	return nil
}

// finishStage evaluates the policy after stage, reads the stage's training
// outcome from Redis and appends the stage report.
func (r *run) finishStage(ctx context.Context, stage int) (*StageReport, error) {
	if r.gate != nil {
		// The stage's last batch may still be in the learner.
		if _, err := r.gate.wait(ctx, true); err != nil {
			return nil, fmt.Errorf("after stage %d: %w", stage, err)
		}
	}
	r.mu.Lock()
	ls := r.learn.stats()
	rep := StageReport{Stage: stage, Config: r.configs[stage], ConfigVersion: r.configs[stage].Hash(),
		Updates: ls.Updates, MeanLoss: ls.MeanLoss, ZeroShare: ls.ZeroShare, Learn: ls, Duration: time.Since(r.stageStart)}
	r.learn = learnAcc{}
	r.mu.Unlock()
	rep.Flow = r.flow.stageDone(stage)
	agg, err := r.st.Aggregates(ctx, r.opt.RunID, stage, "train")
	if err != nil {
		return nil, err
	}
	var all store.Counts
	for _, c := range agg {
		all = all.Add(c)
	}
	rep.Train = ratesOf(all)
	if err := r.evalStage(ctx, stage, &rep); err != nil {
		return nil, err
	}
	if err := r.checkpoint(ctx, stage); err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.res.Stages = append(r.res.Stages, rep)
	r.stageStart = time.Now()
	r.mu.Unlock()
	printStage(r.opt.Out, &rep)
	printLearn(r.opt.Out, &rep.Learn)
	printFlow(r.opt.Out, &rep.Flow)
	return &r.res.Stages[len(r.res.Stages)-1], nil
}

// checkpoint saves a Checkpointer policy after stage and indexes it in
// Redis (see saveCheckpoint).
func (r *run) checkpoint(ctx context.Context, stage int) error {
	cp, ok := r.pol.(Checkpointer)
	if !ok || r.opt.CheckpointDir == "" {
		return nil
	}
	if err := r.saveCheckpoint(ctx, cp, stage); err != nil {
		return fmt.Errorf("checkpoint after stage %d: %w", stage, err)
	}
	return nil
}

// history rebuilds the engineer's view of the run from Redis.
func (r *run) history(ctx context.Context) (*engineer.History, error) {
	recs, err := r.st.Configs(ctx, r.opt.RunID)
	if err != nil {
		return nil, err
	}
	h := &engineer.History{RunID: r.opt.RunID, Budget: engineer.Budget{TotalStages: r.opt.Stages, EpochsPerStage: 1}}
	for _, rec := range recs {
		var cfg env.Config
		if err := json.Unmarshal(rec.JSON, &cfg); err != nil {
			return nil, fmt.Errorf("config of stage %d: %w", rec.Stage, err)
		}
		sr := engineer.StageResult{Stage: rec.Stage, Config: cfg, ConfigVersion: rec.Version, Rationale: rec.Rationale, Epochs: 1}
		for _, split := range []string{"train", "val"} {
			agg, err := r.st.Aggregates(ctx, r.opt.RunID, rec.Stage, split)
			if err != nil {
				return nil, err
			}
			if len(agg) == 0 {
				continue
			}
			stats := sizeStats(agg)
			if split == "train" {
				sr.Train = stats
			} else {
				sr.Val = stats
			}
		}
		if len(sr.Train) == 0 && len(sr.Val) == 0 {
			continue // the stage being proposed: no outcomes yet
		}
		exs, err := r.st.Examples(ctx, r.opt.RunID, rec.Stage, "val", 4)
		if err != nil {
			return nil, err
		}
		for _, e := range exs {
			sr.Examples = append(sr.Examples, engineer.Example{InstanceID: e.InstanceID, Size: e.Size, Category: e.Category, Detail: e.Detail, Answer: e.Answer})
		}
		h.Stages = append(h.Stages, sr)
	}
	return h, nil
}

// sizeStats folds (size, agents) buckets into per-size statistics.
func sizeStats(agg map[store.Key]store.Counts) []engineer.SizeStats {
	per := map[int]store.Counts{}
	for k, c := range agg {
		per[k.Size] = per[k.Size].Add(c)
	}
	names := map[string]env.Category{}
	for c := env.Category(0); c < env.NumCategories; c++ {
		names[c.String()] = c
	}
	var out []engineer.SizeStats
	for size, c := range per {
		s := engineer.SizeStats{Size: size, Episodes: c.Episodes, Valid: c.Valid, Optimal: c.Optimal}
		if c.Episodes > 0 {
			s.MeanReward = c.RewardSum / float64(c.Episodes)
		}
		for name, n := range c.Categories {
			if cat, ok := names[name]; ok {
				s.Categories[cat] += n
			}
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}

// Propose implements actors.Proposer: close the finished stage (evaluate,
// checkpoint, report), then ask the strategy for the next config.
func (r *run) Propose(ctx context.Context, runID string, stage int) (string, []byte, error) {
	rep, err := r.finishStage(ctx, stage-1)
	if err != nil {
		return "", nil, err
	}
	defer r.traces.end(stage - 1)
	cfg, b, rationale, err := r.propose(ctx, stage, false)
	if err != nil {
		return "", nil, err
	}
	r.mu.Lock()
	rep.Rationale = rationale
	r.mu.Unlock()
	return cfg.Hash(), b, nil
}

// propose asks the strategy for stage's config (the stage before it is
// done and recorded), records the attempts and the config in Redis and
// prints the change. A resumed run re-proposes a config whose record the
// interrupted run did not write (resumed): attempts the interrupted run
// recorded differently are then kept, with a warning.
func (r *run) propose(ctx context.Context, stage int, resumed bool) (env.Config, []byte, string, error) {
	runID := r.opt.RunID
	h, err := r.history(ctx)
	if err != nil {
		return env.Config{}, nil, "", err
	}
	_, span := r.traces.start(r.traces.ctx(stage-1), telemetry.SpanEngineerPropose, attribute.Int(telemetry.AttrStage, stage))
	prop, err := r.opt.Strategy.Propose(ctx, h)
	span.End()
	if err != nil {
		return env.Config{}, nil, "", err
	}
	for i, a := range prop.Attempts {
		ar := store.AuditRecord{Stage: stage, Attempt: i, PromptHash: a.PromptHash, RawAnswer: a.Raw, Parsed: a.Parsed, Projected: a.Projected, Accepted: a.Accepted, Reason: a.Reason, Engineer: a.Engineer}
		if err := r.st.AppendAudit(ctx, runID, ar); err != nil {
			if !resumed || !errors.Is(err, store.ErrConflict) {
				return env.Config{}, nil, "", err
			}
			r.opt.Logger.Warn("train: resumed proposal differs from the recorded attempt; the record is kept", "stage", stage, "attempt", i)
		}
	}
	cfg := prop.Config
	pinned := r.opt.Deterministic && cfg.Instances >= 1 && cfg.Instances != r.opt.Config.Instances
	if cfg.Instances < 1 || pinned {
		cfg.Instances = r.opt.Config.Instances
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return env.Config{}, nil, "", err
	}
	if err := r.st.PutConfig(ctx, runID, store.ConfigRecord{Stage: stage, Version: cfg.Hash(), JSON: b, Proposer: r.opt.Strategy.Name(), Rationale: prop.Rationale}); err != nil {
		return env.Config{}, nil, "", err
	}
	r.mu.Lock()
	prev := r.configs[stage-1]
	r.configs[stage] = cfg
	r.mu.Unlock()
	if pinned {
		fmt.Fprintf(r.opt.Out, "  engineer (%s) proposed %d instances for stage %d; a deterministic run keeps %d\n", r.opt.Strategy.Name(), prop.Config.Instances, stage, cfg.Instances)
	}
	if lines := compactDiff(prev, cfg); len(lines) > 0 {
		fmt.Fprintf(r.opt.Out, "  engineer (%s) → stage %d config %s:\n", r.opt.Strategy.Name(), stage, cfg.Hash())
		for _, line := range lines {
			fmt.Fprintf(r.opt.Out, "    %s\n", line)
		}
	} else {
		fmt.Fprintf(r.opt.Out, "  engineer (%s) → stage %d keeps config %s\n", r.opt.Strategy.Name(), stage, cfg.Hash())
	}
	return cfg, b, prop.Rationale, nil
}

// compactDiff lists config changes one line per size ("size 5: data
// 0.12→0.20  hole 0.20→0.10"), plus agents and instances; Config.Diff has
// the one-change-per-line form.
func compactDiff(old, cfg env.Config) []string {
	var out []string
	prev := map[int]env.SizeConfig{}
	for _, sc := range old.Sizes {
		prev[sc.Size] = sc
	}
	for _, sc := range cfg.Sizes {
		p, ok := prev[sc.Size]
		if !ok {
			out = append(out, fmt.Sprintf("size %d added: data %.2f  hole %.2f  wait %.2f", sc.Size, sc.DataRatio, sc.HoleRatio, sc.WaitRatio))
			continue
		}
		delete(prev, sc.Size)
		var parts []string
		for _, f := range []struct {
			name string
			a, b float64
		}{{"data", p.DataRatio, sc.DataRatio}, {"hole", p.HoleRatio, sc.HoleRatio}, {"wait", p.WaitRatio, sc.WaitRatio}} {
			if math.Abs(f.a-f.b) >= 0.005 {
				parts = append(parts, fmt.Sprintf("%s %.2f→%.2f", f.name, f.a, f.b))
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("size %2d: %s", sc.Size, strings.Join(parts, "  ")))
		}
	}
	for size := range prev {
		out = append(out, fmt.Sprintf("size %d removed", size))
	}
	if old.Agents != cfg.Agents {
		out = append(out, fmt.Sprintf("agents %d→%d", old.Agents, cfg.Agents))
	}
	if old.Instances != cfg.Instances {
		out = append(out, fmt.Sprintf("instances %d→%d", old.Instances, cfg.Instances))
	}
	return out
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "  -  "
	}
	return fmt.Sprintf("%5.1f", 100*x)
}

// printHeader and printStage write the per-stage progress table.
func printHeader(w io.Writer) {
	fmt.Fprintln(w, "stage | train valid | val valid/opt % | 3 agents v/o % | 4 agents v/o % | 5 agents v/o % | updates  loss   zero% | policy | time")
}

func printStage(w io.Writer, s *StageReport) {
	name := fmt.Sprintf("%5d", s.Stage)
	train := fmt.Sprintf("%11s", pct(s.Train.Valid))
	if s.Stage < 0 {
		name, train = " init", fmt.Sprintf("%11s", "-")
	}
	ev := func(k int) string {
		r, ok := s.Eval[k]
		if !ok {
			return fmt.Sprintf("%14s", "-")
		}
		return fmt.Sprintf("  %s / %s ", pct(r.Valid), pct(r.Optimal))
	}
	fmt.Fprintf(w, "%s | %s |  %s / %s  | %s | %s | %s | %7d %6.3f %5.1f | %6d | %s\n",
		name, train, pct(s.Val.Valid), pct(s.Val.Optimal), ev(3), ev(4), ev(5), s.Updates, s.MeanLoss, 100*s.ZeroShare, s.Policy, s.Duration.Round(100*time.Millisecond))
}

// Run trains pol for opt.Stages stages, recording everything in st. With
// opt.Resume it continues the run after its latest checkpoint instead.
func Run(ctx context.Context, opt Options, pol Policy, st *store.Store) (*Result, error) {
	opt.defaults()
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
	r := &run{opt: opt, pol: pol, st: st, start: time.Now(), res: &Result{RunID: opt.RunID}, configs: map[int]env.Config{0: opt.Config},
		traces: newStageTraces(opt.Tracer, opt.RunID), abort: cancel}
	ps, closeFlow := flowStore(ctx, opt, st.URL())
	defer closeFlow()
	r.flow.ps, r.flow.on = ps, opt.OnFlow
	r.flow.rec = FlowRecord{RunID: opt.RunID, MaxLag: opt.MaxLag, StalenessK: opt.StalenessK, KeepLateK: opt.KeepLateK, KeepStale: opt.KeepStale}
	r.flow.warn = func(err error) { opt.Logger.Warn("train: flow record not written", "error", err) }
	var err error
	valSpec := env.ValidationSpec(opt.SuiteSeed, opt.ValPerSize)
	if r.val, err = env.GenerateSuite(&valSpec, 0, valSpec.Len()); err != nil {
		return nil, err
	}
	evalSpec := env.PaperEvalSpec(opt.SuiteSeed, opt.EvalPerSize)
	if r.eval, err = env.GenerateSuite(&evalSpec, 0, evalSpec.Len()); err != nil {
		return nil, err
	}
	fmt.Fprintf(opt.Out, "run %s: %s policy, %d stages × %d instances (group %d), engineer %s; validation %d, benchmark %d instances\n",
		opt.RunID, pol.Name(), opt.Stages, opt.Config.Instances, opt.GroupSize, opt.Strategy.Name(), len(r.val), len(r.eval))
	first := 0
	if opt.Resume {
		after, err := r.resume(ctx)
		if err != nil {
			return nil, err
		}
		first = after + 1
		r.res.FirstStage = first
		if first == opt.Stages {
			fmt.Fprintf(opt.Out, "run %s: all %d stages were done already\n", opt.RunID, opt.Stages)
			return r.res, nil
		}
		if _, ok := r.configs[first]; !ok {
			// Interrupted between the checkpoint and the next config.
			_, _, _, err := r.propose(ctx, first, true)
			r.traces.end(after)
			if err != nil {
				return nil, fmt.Errorf("resume: config of stage %d: %w", first, err)
			}
		}
	}
	if opt.Deterministic {
		r.gate = newDetGate(ctx, pol, opt.LearnerBatch, cancel)
	}
	printHeader(opt.Out)
	if !opt.Resume {
		r.res.Initial.Stage = -1
		if err := r.evalStage(ctx, -1, &r.res.Initial); err != nil {
			return nil, err
		}
		printStage(opt.Out, &r.res.Initial)
	}
	firstCfg := r.configs[first]
	cfgJSON, err := json.Marshal(firstCfg)
	if err != nil {
		return nil, err
	}
	if !opt.Resume {
		if err := st.PutConfig(ctx, opt.RunID, store.ConfigRecord{Stage: 0, Version: opt.Config.Hash(), JSON: cfgJSON, Proposer: "initial"}); err != nil {
			return nil, err
		}
	}
	units := (opt.Config.Instances + opt.InstancesPerUnit - 1) / opt.InstancesPerUnit
	sc := actors.DefaultSystemConfig()
	sc.RunID, sc.Rollouts, sc.MaxInFlight = opt.RunID, opt.Rollouts, opt.MaxInFlight
	sc.UnitsPerStage, sc.InstancesPerUnit, sc.Seed = units, opt.InstancesPerUnit, opt.Seed
	sc.FirstStage, sc.InitialConfigVersion, sc.InitialConfigJSON = first, firstCfg.Hash(), cfgJSON
	sc.LearnerBatch, sc.StalenessK, sc.KeepStale = opt.LearnerBatch, opt.StalenessK, opt.KeepStale
	sc.MaxLag, sc.KeepLateK = opt.MaxLag, opt.KeepLateK
	sc.StageHeaders = r.traces.headers
	sc.OnLearnerWait = r.traces.learnerWait
	if err := opt.Cluster.prepare(ctx, &sc, opt, pol); err != nil {
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
	if opt.Cluster.Started != nil {
		if err := opt.Cluster.Started(sys); err != nil {
			return nil, err
		}
	}
	r.stageStart = time.Now()
	rep, err := sys.Run(ctx, opt.Stages)
	r.res.Actors = rep
	if err != nil {
		if cause := context.Cause(ctx); errors.Is(cause, ErrDeterminism) || errors.Is(cause, learner.ErrEngineLost) {
			err = cause
		}
		return r.res, err
	}
	tr.evaluating(opt.Stages - 1)
	_, err = r.finishStage(ctx, opt.Stages-1)
	r.traces.end(opt.Stages - 1)
	if err == nil {
		printFlowTotal(opt.Out, r.res.Flow())
	}
	return r.res, err
}
