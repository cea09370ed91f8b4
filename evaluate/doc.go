// Package evaluate is t2t's one evaluator: it plays a policy greedily on
// instances and turns the verified answers into report outcomes.
//
// The core is Play: a Player (train.Policy, textpolicy.Policy and
// textpolicy.Client all are) plays instances greedily, one episode each,
// either in one batch per agent count with one seed, or each instance
// alone with a seed derived from the run seed and its id (InstanceSeed),
// and every answer becomes a report.Outcome (OutcomeOf). Callers tally
// the outcomes with report.Tally.
//
// On top of it, Run evaluates a policy on a Suite (GenerateSuite for a
// named suite, FileSuite for a JSONL file and its manifest) resumably:
// answers are appended to an fsync'd answer cache (CacheFile) one chunk
// at a time, a torn last line is repaired on the next run (ReadCache),
// and only the instances without a cached answer are played. Run writes
// the report files (WriteReport) and returns the tallied report.Eval.
// Hooks let a caller watch the work and interrupt it.
//
// evaluate imports env, learner, report and internal leaves only: neither train nor the
// runtime (actors, cluster), so that the learner side and train can use
// it.
//
// Concurrency: Run plays chunks on Options.Workers goroutines; the
// Player must allow concurrent Play calls (every t2t policy does). Play
// itself calls the Player from the caller's goroutine.
//
// Errors: a malformed cache line or a manifest that does not describe its
// suite file is a *fielderr.Error (bad input: t2t eval exits with status 2);
// Options without a Player, PolicyID, Suite or Dir are ErrOptions; the
// player's and the file system's errors pass through, as does the error a
// Hooks.Acked callback returns.
package evaluate
