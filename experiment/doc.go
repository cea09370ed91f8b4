// Package experiment is t2t's experiment engine: several engineer
// strategies (arms), each trained with the same seeds, and one report.
//
// ParseArms expands a strategy list into arms (llm: one arm per context
// module variant). Run trains every (seed, arm) with train.Run in a fresh
// embedded store, with a policy from the caller's NewPolicy factory,
// turns each result and the store's config history and audit into a
// report.Run, saves it under DIR/runs/RUNID.json (RunID, RunPath) with its
// fingerprint, and writes the report files (WriteReport). A later Run with
// Resume reuses every saved run whose fingerprint matches.
//
// The fingerprint (Options.Fingerprint) is computed from the whole Options
// struct: every field that is not tagged `json:"-"` is in it, so a new
// setting is fingerprinted by default and a changed setting never reuses a
// stale run. Fields that must not matter (the output folder, the report's
// title, the API key, writers and the factory) are tagged, each with the
// reason. The JSON names and two small types (BaseConfig, SuiteSeed) keep
// the fingerprints of runs saved before this package existed.
//
// t2t experiment's command line is Flags: Register binds every flag, and
// after parsing, Flags.Options applies a recipe file (Recipe: a JSON
// object of flag names and values, for the flags the command line did not
// set; configs/paper/qwen3-4b.json is the paper's setting), checks the
// settings (Options.Validate: train's ranges, before any run), shrinks the
// counts by --scale (Recipe.Scale) and returns the Options for Run.
//
// Concurrency: Run trains one run at a time; each run's actors run
// concurrently inside train.Run. Options.Out receives the progress lines
// and the runs' tables, whole lines at a time.
//
// Errors: bad arms, strategies, flags or recipes are a *fielderr.Error
// naming the flag (t2t experiment exits with status 2 on them); Options without Dir, NewPolicy, arms or seeds are
// ErrOptions; NewPolicy's errors are returned as they are, a run's
// training errors wrapped with the arm and seed.
package experiment
