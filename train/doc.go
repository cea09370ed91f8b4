// Package train runs a staged training run: it plugs the testbed (env),
// a policy (the step-wise gridnet, an LLM, or a scripted policy that
// replays optimal plans with injected mistakes), the environment engineer
// (engineer) and the Redis store (cluster/store) into the actor runtime
// (actors) as its Runner, Updater and Proposer.
//
// A run is: evaluate the initial policy on the validation set and the
// 3/4/5-agent benchmark suite; then for each stage, the coordinator leases
// the stage's work units to rollout actors, each unit generates its
// instances from the stage config and seed, plays GroupSize episodes per
// instance, verifies them, records the outcomes in Redis (idempotently, per
// unit) and sends the groups to the learner, which runs a GRPO update every
// LearnerBatch groups. At the end of a stage the proposer evaluates the
// policy (validation and benchmark suites, recorded as splits
// store.SplitVal and store.SplitEvalPaper; training units record
// store.SplitTrain), builds the engineer's history from Redis (History)
// and asks the strategy for the next config, which the coordinator
// broadcasts before the next stage starts.
//
// train imports no tensor library: it builds models through engine.Open
// (LLM policies) and gridnet.New (gridnet), which use the engines the
// program links. A program that runs train imports learner/engines for its
// side effect (cmd/t2t does); without it, building a model is a typed error
// (engine.ErrEngineNotLinked, gridnet.ErrNoBackend).
//
// Files: options.go (Options, DefaultOptions, ErrOptions), run.go (Run
// and the run it drives: the Updater), unit.go (the unit executor, the
// Runner), evalstage.go (a stage's evaluation, report and checkpoint),
// propose.go (the Proposer), history.go (the engineer's history), stage.go
// (StageReport, Result, the progress table), remote.go (Cluster and the
// rollout node's RemoteRunner), policy.go and newpolicy.go (the policies
// and NewPolicy), policystore.go (RunSpec, PolicyStore), push.go (a rollout
// engine: Options.RolloutEngine).
//
// One unit executor runs every work unit, in a run's own rollouts and on a
// rollout node (RemoteRunner) alike; every seed it uses comes from the run
// seed through actors.StageSeed (instances), actors.UnitSeed and
// actors.ChunkSeed (sampling), and actors.EvalSeed samples the
// evaluations. Groups that stay in the process carry their instances as
// they are (actors.Group.Local); a rollout node's groups carry the
// instances' JSON to the learner's node.
//
// Policies: NewPolicy builds one from a PolicySpec (scripted, gridnet with
// an optional behaviour-cloning warm start, qwen3 over a checkpoint on a
// compute engine, or an endpoint client); a rollout node builds its run's
// policy from the RunSpec the same way.
//
// Nodes: with Options.Cluster set (t2t node), the actor system listens for
// rollout nodes (Cluster.Listen), may run no rollout itself
// (Cluster.RemoteOnly), and publishes the run's RunSpec and every policy
// version to a PolicyStore in Redis (see policystore.go for the keys). A
// rollout node runs a RemoteRunner: on a run's first unit it reads the
// spec and builds the policy; it loads each version the learner announces
// in the background, plays at least the version a unit was issued at, and
// plays a unit DefaultChunk instances at a time, taking up a newer version
// at the next chunk (each group carries the version it was played with);
// it measures the policy lag (learner version - version used) per unit.
//
// Rollout engine (push.go): with Options.RolloutEngine an LLM policy's
// rollouts, here and on rollout nodes, sample at an inference engine (vLLM,
// SGLang, a t2t serve). The learner writes each version it makes for the
// engine (rolloutengine.Pusher), the engine loads the newest in the
// background, and only a loaded version is published; rollouts sample the
// newest loaded version by its own model name (an adapter, "t2t-vN"), so a
// group's version is the one it came from. A failed load is logged and
// leaves the learner alone; the engine failing to load the first version
// ends the run (a *rolloutengine.EngineError).
//
// Flow (flow.go): dispatch is paced by the learner (Options.MaxLag, the
// actors' bounded staleness): a unit goes out only while its groups can
// reach an update within MaxLag versions, so rollouts wait for the learner
// rather than make groups it drops; late groups are kept to KeepLateK. Each
// stage reports what became of the groups that reached the learner (used,
// kept late, discarded by reason) and how long dispatch waited
// (StageReport.Flow); the run's FlowRecord goes to Options.OnFlow and to
// Redis (P:run:{R}:flow) for t2t status, and Run warns when it discarded
// more than DiscardWarnShare. clusterbench.go measures this machine's
// costs (wire, Redis RecordUnit) and runs actors.Simulate over R rollouts
// (t2t bench cluster).
//
// Run state: Run records the run's store.RunState in Redis at every phase
// change (starting; training and evaluating per stage; done, interrupted
// or failed) and after every policy update, through one writer goroutine
// so that no actor waits for Redis (state.go); Options.OnState sees each
// state. With each state it writes the flow record and the nodes record
// (statusnodes.go, P:run:{R}:nodes: each node's roles and load as the
// coordinator accounts it; Cluster.Members lists a cluster's members).
// t2t status reads them.
//
// Learner metrics: every update logs, at Info ("train: update"; t2t train
// -v), its loss, the batch's mean reward and valid rate, the clip fraction,
// the KL estimate, the policy lag of its groups (min/mean/max: version
// before the update - version sampled with), the zero-signal share and the
// decisions trained per second (UpdateMetrics). StageReport.Learn sums
// them per stage, printed under each stage's row (metrics.go).
//
// Deterministic mode (Options.Deterministic, t2t train --deterministic):
// the final weights depend on the options alone. One rollout runs one unit
// at a time, in unit order; before a unit plays, the Runner waits until the
// policy version is the run's starting version + floor(groups of the
// earlier units / LearnerBatch), so each unit samples (with its unit seed)
// exactly the weights an uninterrupted run has there; no group is dropped
// as stale; a stage's instances fill whole units and whole learner batches,
// so no group waits for a batch across a stage's end, and the stage's
// evaluation and checkpoint wait for its last update (determinism.go). Two
// runs with the same options end with the same weights and optimizer
// state, bit for bit. It costs the overlap of sampling and learning.
//
// Resume (Options.Resume, t2t train --resume): after each stage the run
// checkpoints the policy and indexes the checkpoint in Redis before it
// proposes the next config. A resumed run loads the latest indexed
// checkpoint (after stage s: weights, optimizer moments, version), takes
// the configs of stages 0..s (and s+1, or proposes it again when the
// interrupted run died before recording it) from Redis, and runs stages
// s+1.. with actors.SystemConfig.FirstStage = s+1: unit ids and seeds are
// those of the interrupted run, so Redis counts the units it recorded once
// (store.RecordUnit is idempotent per unit) and every unit's groups reach
// the new learner. A deterministic run resumed after a kill -9 ends with
// the weights of an uninterrupted one. See resume.go for what each point
// of interruption leaves and how it is handled.
//
// Concurrency: Run starts the actor system and blocks until the run ends;
// the Runner is called from several rollout actors at once, the Updater and
// Proposer from one actor each. The policy serialises its own state.
//
// Errors: bad options and policy specs are *fielderr.Error (errors.Is
// ErrOptions; its Usage words one for a command line); a run that
// fails returns the first error with the stage it happened in. A run that
// cannot be resumed fails with ErrResume; a deterministic run whose update
// failed (its batch would be lost) ends with ErrDeterminism. A rollout
// node's unit fails with ErrNoSpec or ErrNoPolicy when the run has not
// published what it needs; the coordinator then re-issues the unit.
package train
