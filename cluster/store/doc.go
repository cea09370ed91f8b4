// Package store is the Redis store of a t2t cluster: what outlives a stage.
//
// Rollout actors record the outcome of each work unit (episode counts per
// map size and agent count, failed checks by category, reward sums, a few
// failure examples); the engineer reads the stage aggregates and writes the
// next stage's config; the learner indexes its checkpoints; the
// coordinator keeps the run state for status pages and resume.
//
// # Use
//
//	s, err := store.Open(ctx, store.Options{URL: "redis://redis:6379/0"})
//	// Options{} (empty URL) embeds a miniredis: a single process needs nothing.
//	defer s.Close()
//	applied, err := s.RecordUnit(ctx, store.UnitResult{RunID: "r1", Stage: 0, Split: "train", UnitID: "u-17", ...})
//	agg, err := s.Aggregates(ctx, "r1", 0, "train")
//
// Commands take the Redis as Flags: --redis URL and --redis-password-file
// (or $T2T_REDIS_PASSWORD), so that the password need not stand in the URL
// on a command line; Flags.URL puts it in the URL Open takes. What is
// printed or logged of a URL goes through RedactURL
// (redis://:***@host:port/db), and ParseURL's errors (those of Open too)
// never show the password.
//
// # Key schema
//
// P is Options.Prefix ("t2t"); R a run id (letters, digits, ".-_");
// N a stage (decimal); S a split ("train", "val", "eval:<suite>"). Every
// key of one run carries the hash tag {R}, so a run lives in one Redis
// Cluster slot and the RecordUnit script touches a single slot.
//
//	| key pattern                    | type   | fields / members / entries                                   | written by                         | read by                          |
//	|--------------------------------|--------|--------------------------------------------------------------|------------------------------------|----------------------------------|
//	| P:runs                         | set    | run ids that have a run state                                | PutRunState (coordinator)          | Runs (status pages, resume)      |
//	| P:run:{R}:state                | string | JSON RunState                                                | PutRunState (coordinator)          | RunState (status, resume)        |
//	| P:run:{R}:stage:N:S:units      | hash   | unit id → token of the RecordUnit call that applied it       | RecordUnit script (rollout actors) | RecordUnit (dedup), UnitsApplied |
//	| P:run:{R}:stage:N:S:agg        | hash   | "<size>x<agents>:episodes", ":valid", ":optimal",            | RecordUnit script (rollout actors) | Aggregates (engineer, reports)   |
//	|                                |        | ":reward_nano" (sum of rewards / 1e-9), ":cat:<category>"    |                                    |                                  |
//	|                                |        | (int64 counters, HINCRBY; zero counters are not written)     |                                    |                                  |
//	| P:run:{R}:stage:N:S:examples   | stream | field "e": JSON Example; XADD MAXLEN = Options.MaxExamples   | RecordUnit script (rollout actors) | Examples (engineer)              |
//	| P:run:{R}:configs              | hash   | "<stage>" → JSON {stage, version, config, proposer,          | PutConfig (engineer/coordinator)   | Configs, Config (engineer H,     |
//	|                                |        | rationale}; set once per stage                               |                                    | coordinator, resume)             |
//	| P:run:{R}:audit                | hash   | "<stage>:<attempt>" → JSON AuditRecord; set once             | AppendAudit (engineer)             | Audit (reports, debugging)       |
//	| P:run:{R}:checkpoints          | hash   | "<version>" → JSON CheckpointRecord; set once                | PutCheckpoint (learner)            | Checkpoints, LatestCheckpoint    |
//	|                                |        |                                                              |                                    | (resume, inference nodes)        |
//	| P:run:{R}:spec                 | string | JSON train.RunSpec (seed, group size, policy kind)           | PutSpec (coordinator)              | Spec (rollout nodes)             |
//	| P:run:{R}:policy:latest        | string | decimal version of the newest published policy               | PublishPolicy (learner)            | LatestPolicy (rollout nodes)     |
//	| P:run:{R}:policy:<v>           | string | version v's weights (gridnet: model.safetensors bytes); the  | PublishPolicy (learner)            | PolicyWeights (rollout nodes)    |
//	|                                |        | newest KeepPolicies are kept; LLM weights travel as files    |                                    |                                  |
//	| P:run:{R}:flow                 | string | JSON train.FlowRecord: groups arrived, used, discarded, lag  | PutFlow (learner's run loop)       | Flow (status pages)              |
//	| P:run:{R}:nodes                | string | JSON train.NodesRecord: each node's roles and load (units    | PutNodes (the run, with its state) | Nodes (t2t status)               |
//	|                                |        | done, in flight, mean unit time, last heartbeat)             |                                    |                                  |
//
// Nothing expires: a run's keys stay until deleted by hand
// (redis-cli --scan --pattern 'P:run:{R}:*' | xargs redis-cli del).
//
// # Exactly-once aggregates
//
// RecordUnit runs one Lua script (EVALSHA, falling back to EVAL after a
// server restart empties the script cache) that adds the unit id to the
// stage's applied hash and, only if it was new, HINCRBYs every counter and
// XADDs the examples. Scripts run atomically, so a unit counts once however
// many goroutines, processes or retries deliver it; the first delivery
// wins and later ones return applied=false. The applied hash stores a
// random token per RecordUnit call, so when a call's write went through
// but its reply was lost, its retry recognises its own token and still
// reports applied=true. Reward sums are kept as
// integers of RewardQuantum (1e-9), so aggregates are exact and do not
// depend on the order units arrive in.
// Inputs are validated first, so the script cannot fail halfway (Redis
// does not roll scripts back) short of an int64 overflow or the server
// running out of memory. Config, audit and checkpoint records
// are set once per key (a Lua check-and-set); rewriting the same record is
// a no-op, a different one is ErrConflict. Run state is last writer wins.
//
// # Resilience
//
// Every operation retries transient failures (connection refused, reset or
// closed, EOF, timeouts, LOADING/TRYAGAIN/MASTERDOWN/CLUSTERDOWN/BUSY
// replies) with exponential backoff and seeded jitter, logging one Warn
// record ("store: transient redis error, retrying") per retry, until
// Options.MaxRetryElapsed has passed; it then returns an error wrapping
// ErrUnavailable and the last failure. Cancelling the context stops the
// retries (the error wraps ctx.Err()). Since every write is idempotent, a
// retry after an ambiguous failure (the write happened, the reply was
// lost) cannot double count. go-redis's own retries are disabled; each
// attempt is bounded by Options.OpTimeout. With a real Redis run with
// appendonly yes and appendfsync always, every acknowledged write
// survives a crash of the server.
//
// # Concurrency
//
// A Store is safe for concurrent use; it holds a go-redis connection pool.
// Open starts no goroutines of its own except, in embedded mode, the
// miniredis server, which Close stops.
//
// # Errors
//
// ErrInvalid (bad input, checked before anything is written), ErrConflict,
// ErrNotFound and ErrUnavailable; see their doc comments. Match with
// errors.Is. A URL that does not parse is a *fielderr.Error (ErrInvalid), its URL
// redacted.
package store
