// Package engineer is the environment engineer of t2t: after each training
// stage it reads how the policy failed and proposes the generator
// configuration (env.Config) of the next stage.
//
// Inputs are plain values that the caller fills from its aggregate store: a
// History of StageResult values (stage 0 first), each with the config that
// stage used, per-size training and validation statistics (SizeStats), a few
// failure examples and the rationale that produced the config.
//
// Context modules (context.go) render the language-model engineer's prompt
// from a History: F (failure breakdown), G (design guidelines), H (history
// of past configs and their validation results, optionally without the
// round-0 config), S (the engineer's own previous rationale) and T (training
// bookkeeping). BuildPrompt is deterministic: the same history and modules
// give a byte-identical prompt and the same Prompt.Hash.
//
// BuildCompactPrompt renders the same modules in a few lines (about a tenth
// of the tokens) for small models; LLMOptions.Prompt picks the style.
//
// Engineer turns (turns.go) are supervised data for teaching a model the
// engineer's skill: Turns renders the context after every stage of recorded
// histories and answers it with a teacher strategy's proposal (learnability
// or rules) as the JSON the guardrails take, with a one-line rationale; the
// skill is distilled from the teacher. A share of the contexts is held out
// by a hash of the context (ContextHash, IsHeldOut), and ScoreTurns asks a
// model the held-out contexts through the llm strategy's guardrails: valid
// JSON, accepted, and the distance to the teacher's config.
//
// Strategies (Strategy) turn a History into a Proposal:
//
//   - fixed: the round-0 config for every stage (the paper's baseline);
//   - random: a seeded random valid config (the paper's round 0);
//   - rules: a hand-written curriculum over the failure breakdown;
//   - learnability: data ratios proportional to the reward variance of each
//     size (SFL's p(1−p)), hole and wait ratios steered toward a target
//     success band;
//   - llm: the paper's method, a chat model behind any OpenAI-compatible
//     endpoint writes the proposal, which is extracted, checked against a
//     strict schema, projected onto the valid space (env.Config.Project) and
//     dry-run through a feasibility check, with the errors fed back for a
//     bounded number of retries.
//
// Every strategy's output passes env.Config.Validate. No strategy stops a
// run: Propose returns an error only when its context is cancelled; any
// other trouble (HTTP errors, garbage answers, infeasible configs, spent
// budgets) falls back to the previous stage's config with a rationale that
// says why, and every step is recorded as an Attempt for the audit log.
//
// Concurrency: strategies are safe for concurrent use. The llm strategy
// keeps per-run call and token counters behind a mutex; the others are
// stateless (random derives its generator from the seed and the stage).
//
// Errors: see errors.go. Sentinels are matched with errors.Is; ModuleError
// and HTTPError carry details and wrap their sentinel.
package engineer
