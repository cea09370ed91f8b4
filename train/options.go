package train

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"log/slog"

	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/rolloutengine"
)

// ErrOptions marks invalid run options. Bad options are a *fielderr.Error
// that wraps it, with Flag the option's command-line name
// ("instances-per-unit", "device"), or no Flag when the error is another
// package's check with no single option to name (Reason then says it all).
var ErrOptions = errors.New("train: invalid options")

// causeError is the *fielderr.Error about flag for err, another package's
// check (flag "": no single option; Usage is then err's message).
func causeError(flag string, err error) *fielderr.Error {
	return &fielderr.Error{Kind: ErrOptions, Flag: flag, Reason: err.Error(), Err: err}
}

// Options configure a run. Zero values take the documented defaults
// (DefaultOptions, SetDefaults).
type Options struct {
	// RunID names the run in Redis. Default DefaultRunID(Seed).
	RunID string
	// Stages is the number of training stages. Default 8.
	Stages int
	// Seed seeds instance generation and sampling (actors.StageSeed,
	// actors.UnitSeed). Default 1.
	Seed uint64
	// Config is the stage-0 generator config. Default env.DefaultLocalConfig().
	Config env.Config
	// InstancesPerUnit is the number of instances in one work unit. Default 16.
	InstancesPerUnit int
	// Epochs is how many times each stage trains on its instances (the
	// paper: 2), every pass with its own sampling seeds
	// (actors.StartRun.Epochs). Default 1.
	Epochs int
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
	// issue, and rollouts with free slots wait meanwhile. Default
	// min(DefaultMaxLag, StalenessK); negative turns pacing off (every free
	// slot gets a unit at once). It must not exceed StalenessK.
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
	// Metrics, when set, receives the latency histograms of the run's
	// work units, learner updates and engineer proposals, each with its
	// span's trace id as exemplar (a daemon's /metrics). Default: none.
	Metrics *telemetry.Metrics
	// OnUnit, when set, sees every unit this process's rollouts record —
	// training units (Result.Split store.SplitTrain) and evaluation units
	// (store.SplitVal, store.SplitEvalPaper) — with its policy lag and
	// time, as a rollout node's RemoteRunner reports its units. t2t train's
	// progress bar (Progress) and a daemon's metrics and live page use it;
	// tests check the aggregates with it. It is called from the rollouts'
	// goroutines.
	OnUnit func(UnitLog)
	// Cluster connects the run to rollouts on other nodes (t2t node); the
	// zero value keeps the run in this process. See Cluster.
	Cluster Cluster
	// RolloutEngine, when set, is the inference engine every rollout of an
	// LLM policy samples at (vLLM, SGLang or a t2t serve), here and on other
	// nodes: the learner writes each version it makes for the engine, which
	// loads it, and only a version the engine serves is published (push.go).
	// Default: none, rollouts sample the policy in this process (or through
	// Cluster.Endpoint on other nodes).
	RolloutEngine *rolloutengine.Pusher
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
	// NodeName is the id this process goes by in the run's nodes record
	// (t2t status) when the run is in one process: the name its live page
	// and metrics use (daemon.RunHandler sets it). Default: the actor
	// node's name.
	NodeName string
	// Resume continues the run RunID after its latest checkpoint in Redis
	// (stage s): the policy (a GridPolicy or a text policy) loads that
	// checkpoint (weights, optimizer state, version; a text-policy
	// checkpoint written before t2t saved optimizer state restarts AdamW's
	// moments, and the run says so), the config history comes from Redis, and
	// the run goes on at stage s+1 with the same unit ids and seeds. Needs
	// CheckpointDir, a Redis that outlived the interrupted run, and the
	// options of the interrupted run. See resume.go.
	Resume bool
}

// DefaultOptions returns the defaults Run takes for zero fields, for a
// command's flags to show. RunID, MaxLag and KeepLateK are left zero: they
// follow other fields (DefaultRunID(Seed), min(DefaultMaxLag, StalenessK),
// 2·StalenessK), and SetDefaults derives them.
func DefaultOptions() Options {
	return Options{
		Stages: 8, Seed: 1, Config: env.DefaultLocalConfig(), InstancesPerUnit: 16, Epochs: 1,
		Rollouts: 2, MaxInFlight: 2, GroupSize: 8, LearnerBatch: 32, StalenessK: 4,
		ValPerSize: 20, EvalPerSize: 10, SuiteSeed: 2026,
		Out: io.Discard, Logger: slog.New(slog.DiscardHandler),
	}
}

// DefaultRunID is the run id of a run with seed and no RunID: "run-<seed>".
func DefaultRunID(seed uint64) string { return fmt.Sprintf("run-%d", seed) }

// SetDefaults fills o's zero fields with DefaultOptions' values and the
// derived defaults, and applies Deterministic (one rollout, one unit in
// flight, stale groups kept). Run calls it.
func (o *Options) SetDefaults() {
	d := DefaultOptions()
	o.Stages = cmp.Or(o.Stages, d.Stages)
	o.Seed = cmp.Or(o.Seed, d.Seed)
	o.RunID = cmp.Or(o.RunID, DefaultRunID(o.Seed))
	if o.Config.Sizes == nil {
		o.Config = d.Config
	}
	o.InstancesPerUnit = cmp.Or(o.InstancesPerUnit, d.InstancesPerUnit)
	o.Epochs = cmp.Or(o.Epochs, d.Epochs)
	o.Rollouts = cmp.Or(o.Rollouts, d.Rollouts)
	o.MaxInFlight = cmp.Or(o.MaxInFlight, d.MaxInFlight)
	o.GroupSize = cmp.Or(o.GroupSize, d.GroupSize)
	o.LearnerBatch = cmp.Or(o.LearnerBatch, d.LearnerBatch)
	o.StalenessK = cmp.Or(o.StalenessK, d.StalenessK)
	o.MaxLag = cmp.Or(o.MaxLag, min(DefaultMaxLag, o.StalenessK))
	o.KeepLateK = cmp.Or(o.KeepLateK, 2*o.StalenessK)
	o.ValPerSize = cmp.Or(o.ValPerSize, d.ValPerSize)
	o.EvalPerSize = cmp.Or(o.EvalPerSize, d.EvalPerSize)
	o.SuiteSeed = cmp.Or(o.SuiteSeed, d.SuiteSeed)
	o.Out = cmp.Or(o.Out, d.Out)
	o.Logger = cmp.Or(o.Logger, d.Logger)
	if o.Deterministic {
		o.Rollouts, o.MaxInFlight, o.KeepStale = 1, 1, true
	}
}

// Validate checks the options (after SetDefaults). Errors are *fielderr.Error,
// or wrap ErrOptions for the stage-0 config.
func (o *Options) Validate() error {
	switch {
	case o.Stages < 1 || o.Stages > 1000:
		return &fielderr.Error{Kind: ErrOptions, Flag: "stages", Value: o.Stages, Reason: "must be in [1,1000]"}
	case o.InstancesPerUnit < 1 || o.InstancesPerUnit > 4096:
		return &fielderr.Error{Kind: ErrOptions, Flag: "instances-per-unit", Value: o.InstancesPerUnit, Reason: "must be in [1,4096]"}
	case o.Epochs < 1 || o.Epochs > 100:
		return &fielderr.Error{Kind: ErrOptions, Flag: "epochs", Value: o.Epochs, Reason: "must be in [1,100]"}
	case o.Cluster.RemoteOnly && o.Cluster.Listen == "":
		return &fielderr.Error{Kind: ErrOptions, Flag: "cluster.listen", Value: o.Cluster.Listen, Reason: "a run without local rollouts must listen for other nodes"}
	case !o.Cluster.RemoteOnly && (o.Rollouts < 1 || o.Rollouts > 256):
		return &fielderr.Error{Kind: ErrOptions, Flag: "rollouts", Value: o.Rollouts, Reason: "must be in [1,256]"}
	case o.MaxInFlight < 1 || o.MaxInFlight > 64:
		return &fielderr.Error{Kind: ErrOptions, Flag: "max-in-flight", Value: o.MaxInFlight, Reason: "must be in [1,64]"}
	case o.GroupSize < 1 || o.GroupSize > 256:
		return &fielderr.Error{Kind: ErrOptions, Flag: "group", Value: o.GroupSize, Reason: "must be in [1,256]"}
	case o.LearnerBatch < 1 || o.LearnerBatch > 4096:
		return &fielderr.Error{Kind: ErrOptions, Flag: "learner-batch", Value: o.LearnerBatch, Reason: "must be in [1,4096]"}
	case o.StalenessK < 0:
		return &fielderr.Error{Kind: ErrOptions, Flag: "staleness", Value: o.StalenessK, Reason: "must be >= 0"}
	case o.MaxLag > o.StalenessK:
		return &fielderr.Error{Kind: ErrOptions, Flag: "max-lag", Value: o.MaxLag, Reason: fmt.Sprintf("must be <= the staleness bound %d (pacing beyond it dispatches work the learner drops), or negative (no pacing)", o.StalenessK)}
	case o.ValPerSize < 1 || o.ValPerSize > 1000:
		return &fielderr.Error{Kind: ErrOptions, Flag: "val-per-size", Value: o.ValPerSize, Reason: "must be in [1,1000]"}
	case o.EvalPerSize < 1 || o.EvalPerSize > 1000:
		return &fielderr.Error{Kind: ErrOptions, Flag: "eval-per-size", Value: o.EvalPerSize, Reason: "must be in [1,1000]"}
	case o.Config.Instances < 1:
		return &fielderr.Error{Kind: ErrOptions, Flag: "config.instances", Value: o.Config.Instances, Reason: "a training stage needs at least one instance"}
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
