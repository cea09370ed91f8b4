// Package train runs a staged training run: it plugs the testbed (env),
// a policy (learner: the step-wise gridnet, or a scripted policy that
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
// policy (validation and benchmark suites, recorded as splits "val" and
// "eval"), builds the engineer's history from Redis and asks the strategy
// for the next config, which the coordinator broadcasts before the next
// stage starts.
//
// Concurrency: Run starts the actor system and blocks until the run ends;
// the Runner is called from several rollout actors at once, the Updater and
// Proposer from one actor each. The policy serialises its own state.
//
// Errors: bad options are *OptionError (errors.Is ErrOptions); a run that
// fails returns the first error with the stage it happened in.
package train
