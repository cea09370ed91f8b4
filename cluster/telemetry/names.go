package telemetry

// Span names: the one place where t2t's span vocabulary is defined. Every
// actor starts its spans with these names, and `t2t traces` (package traces)
// classifies spans by them. The expected nesting, across nodes when the
// parent travels in WorkUnit.TraceHeaders:
//
//	stage                       coordinator, one per training stage
//	├── work_unit (producer)    coordinator, dispatch → result of one lease (optional)
//	│   └── work_unit           rollout node, the execution of one unit
//	│       └── instance        one generated instance
//	│           ├── sample      policy sampling (inference) for the instance
//	│           └── verify      the 8-check verifier and reward
//	├── learner.update          learner node, one GRPO update
//	├── learner.wait            coordinator: queued units waited for the learner
//	│                           while rollouts had free slots (dispatch paced by
//	│                           the learner's staleness window)
//	├── engineer.propose        engineer node, proposing the next stage's config
//	└── eval                    evaluation on a benchmark suite
//
// The coordinator's own per-unit span, if it records one, must use
// trace.SpanKindProducer (or Client): analysis counts only the executing
// side's work_unit spans as node work.
const (
	SpanStage           = "stage"
	SpanWorkUnit        = "work_unit"
	SpanInstance        = "instance"
	SpanSample          = "sample"
	SpanVerify          = "verify"
	SpanLearnerUpdate   = "learner.update"
	SpanLearnerWait     = "learner.wait"
	SpanEngineerPropose = "engineer.propose"
	SpanEval            = "eval"
)

// SpanNames lists the span names above, in the order of the nesting diagram.
func SpanNames() []string {
	return []string{SpanStage, SpanWorkUnit, SpanInstance, SpanSample, SpanVerify,
		SpanLearnerUpdate, SpanLearnerWait, SpanEngineerPropose, SpanEval}
}

// Attribute keys set on spans (and, for AttrNode, on the resource of every
// span a node records). Values are noted after each key.
const (
	// AttrNode is the resource attribute naming the node (Options.NodeID).
	AttrNode = "t2t.node"
	// AttrServiceName is the resource attribute naming the service
	// (Options.ServiceName); the OpenTelemetry semantic-convention key.
	AttrServiceName = "service.name"
	// AttrRun: the run ID (string), on stage spans.
	AttrRun = "t2t.run"
	// AttrStage: the stage index (int). Required on "stage" spans; set it on
	// work_unit spans too, so a unit whose parent span is missing from the
	// analysed files can still be attributed to its stage.
	AttrStage = "t2t.stage"
	// AttrWorkUnit: the work-unit ID (string), on work_unit spans.
	AttrWorkUnit = "t2t.work_unit"
	// AttrAttempt: the lease attempt (int, 0 on first issue), on work_unit spans.
	AttrAttempt = "t2t.attempt"
	// AttrSplit: the data split (string) of an evaluation unit's work_unit
	// and eval spans: "val" or "eval:paper" (cluster/store SplitVal, SplitEvalPaper).
	AttrSplit = "t2t.split"
	// AttrInstance: the instance ID (string), on instance/sample/verify spans.
	AttrInstance = "t2t.instance"
	// AttrPolicyVersion: the policy version (int) used by a sample or
	// produced by a learner update.
	AttrPolicyVersion = "t2t.policy_version"
	// AttrConfigVersion: the environment config version (string).
	AttrConfigVersion = "t2t.config_version"
	// AttrSamples: how many samples a span produced (int).
	AttrSamples = "t2t.samples"
	// AttrReward: mean reward of the samples of a span (float).
	AttrReward = "t2t.reward"
)

// Metric names exposed by Metrics.Handler (MetricsHandler), in the
// Prometheus text or OpenMetrics format. Counters end in _total; rates
// (such as episodes per second) are best computed by the scraper, e.g.
// rate(t2t_episodes_total[1m]); the MetricEpisodesPerSecond gauge is for
// viewers without one. Histograms end in _seconds and show as _bucket,
// _sum and _count series.
const (
	// MetricEpisodes counts finished episodes (one sampled plan verified).
	MetricEpisodes = "t2t_episodes_total"
	// MetricEpisodesPerSecond is the episode rate over the last window the
	// coordinator measured (gauge, episodes/s).
	MetricEpisodesPerSecond = "t2t_episodes_per_second"
	// MetricWorkUnits counts work units completed (first result per unit).
	MetricWorkUnits = "t2t_work_units_total"
	// MetricQueueDepth is the number of work units waiting for a rollout (gauge).
	MetricQueueDepth = "t2t_work_queue_depth"
	// MetricPolicyLag is the policy lag of the latest samples, in versions (gauge).
	MetricPolicyLag = "t2t_policy_lag_versions"
	// MetricLeaseReissues counts work units re-issued after their lease expired.
	MetricLeaseReissues = "t2t_lease_reissues_total"
	// MetricLearnerUpdates counts learner updates applied.
	MetricLearnerUpdates = "t2t_learner_updates_total"
	// MetricStage is the current stage index (gauge).
	MetricStage = "t2t_stage"
	// MetricUnitSeconds is the histogram of work-unit durations on a
	// rollout (span work_unit).
	MetricUnitSeconds = "t2t_work_unit_duration_seconds"
	// MetricLearnerStepSeconds is the histogram of learner update
	// durations (span learner.update).
	MetricLearnerStepSeconds = "t2t_learner_step_duration_seconds"
	// MetricEngineerProposeSeconds is the histogram of the engineer's
	// proposal durations (span engineer.propose).
	MetricEngineerProposeSeconds = "t2t_engineer_propose_duration_seconds"
	// MetricRedisSeconds is the histogram of Redis command durations of
	// the run's store (cluster/store), by LabelCommand.
	MetricRedisSeconds = "t2t_redis_command_duration_seconds"
)
