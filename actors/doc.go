// Package actors is t2t's actor runtime on protoactor-go: the coordinator,
// rollout, learner and engineer actors, their messages, the msgpack wire
// and the flow control between them. It holds no algorithm: instances,
// rewards, GRPO and config proposals come in through three interfaces.
//
// # Collaborators
//
//	Runner   RunUnit(ctx, WorkUnit) (UnitDone, error)          — env + inference (rollout side)
//	Updater  Update(ctx, []Group) (newVersion int64, error)      — GRPO step (learner side)
//	Proposer Propose(ctx, runID, stage) (version, json, error)  — environment engineer
//	         CloseStage(ctx, runID, stage) error (optional: StageCloser) — closes a finished stage
//	         (evaluation, checkpoint) before the next is proposed
//	Clock    Now() time.Time                                     — lease deadlines (ManualClock in tests)
//
// # Use
//
//	sys, err := actors.NewLocal(actors.DefaultSystemConfig(), runner, updater, proposer, logger)
//	if err != nil { ... }
//	defer sys.Close()
//	report, err := sys.Run(ctx, stages)
//
// report.Stages[i] has, per stage, the units, leases issued, re-issues,
// duplicates and completions; Completed == Units means every unit was counted
// exactly once.
//
// # Protocol
//
// Rollouts pull: each grants MaxInFlight credits with RequestWork and one
// more per unit it finishes, so units in flight are bounded by construction.
// The coordinator leases a unit with a deadline from its Clock; on Tick it
// re-queues expired leases and stops sending to their holder until it hears
// from it again; NodeLeft re-queues a node's leases at once; UnitRejected
// re-queues at once. The first UnitDone per unit wins; later ones are counted
// as duplicates. A stage starts when every live rollout acked the stage's
// ConfigUpdate, and the engineer proposes the next stage's config on
// StageDone. A run may start at a later stage (SystemConfig.FirstStage, a
// resumed run): stages keep their numbers, unit ids and seeds. See messages.go for every message, its sender and its answer.
//
// # Nodes
//
// A System is the whole pipeline on one Host. With SystemConfig.Listen set
// it also listens for other nodes: a rollout node builds its own Host
// (NewHost, StartRemote) and calls Host.SpawnRollout with the coordinator's
// and learner's PIDs (actor.NewPID(address, CoordinatorName), LearnerName).
// The coordinator learns rollouts from their first RequestWork; membership
// reports departed nodes with NodeLeft (System.NodeLeft), and leases catch
// the rest. System.NodeLoads is the coordinator's account per node: units
// done, in flight and lost, mean lease-to-result time, and when it last
// heard from the node (its heartbeat), kept after the node left.
//
// # Wire
//
// A Host (one process's actor system; "node" is the membership's word,
// cluster.Node) owns an actor system, a Serializer built from an explicit Registry
// (RegisterMessages registers every t2t message; no init-time registries) and
// optionally the protoactor remote transport (StartRemote). Messages between
// nodes are msgpack with a version header, carried in a protobuf Any because
// protoactor's remote always uses its serializer 0 (protobuf) when sending.
// Messages inside a node are passed as pointers and never encoded. Payloads
// are checked before decoding (lengths against the payload size, nesting
// depth), so a hostile header cannot make the decoder allocate gigabytes.
//
// Start at most one remote per process: protoactor's remote.Start resets
// grpc's global logger without synchronisation. Host.Close stops the
// listener abruptly (protoactor's graceful stop can wait 10 s) and is meant
// for the end of a node's life.
//
// # Flow control
//
// Mailboxes are bounded (protoactor's Bounded ring buffer). A post that
// finds one full is counted (HostStats.MailboxFull), logged, and blocks its
// sender until there is room. Blocking can only deadlock in a cycle of full
// mailboxes, and the protocol rules that out: what the coordinator and the
// rollouts send each other is bounded by the credits (MailboxSize and the
// rollout mailbox are sized for it), the learner keeps at most one
// PolicyVersion in each subscriber's mailbox (PolicyAck window), and the
// only unbounded flow, rollouts' UnitGroups to the learner, blocks rollouts
// on a learner that itself never waits on anyone. That block is the
// intended back-pressure: a slow Updater slows rollouts down and bounds
// policy lag. TestSystemNoDeadlockUnderBackpressure exercises it.
//
// Dispatch paced by the learner (SystemConfig.MaxLag ≥ 0) bounds policy lag
// before any work is done: the coordinator issues a unit only while the
// groups issued and not yet retired by the learner, plus the unit's, fit
// in (MaxLag+1)·LearnerBatch, and tells the rollout the learner's version
// to play at least (WorkUnit.PolicyVersion). The learner reports its
// counters with learnerProgressed (at most one on its way), and rollouts
// with credits left wait meanwhile (CoordinatorStats.LearnerWait,
// SystemConfig.OnLearnerWait). The learner's mailbox then never holds more
// than the window's units. Simulate runs the same logic in simulated time
// with R rollouts and injected unit, update and Redis times, to see where
// a cluster saturates.
//
// # Concurrency
//
// Each actor handles one message at a time; the logic structs
// (coordinator, rollout, learner, engineer) are plain, single-threaded and
// tested without actors. A rollout runs its Runner calls on goroutines (at
// most MaxInFlight); the learner calls the Updater and the engineer the
// Proposer inline. Counters are atomics (the per-node account a mutex) and
// may be read at any time.
//
// # Errors
//
// Wire failures wrap ErrUnknownType, ErrCorrupt or ErrVersion (as *WireError)
// and are counted in WireStats; config errors are *fielderr.Error wrapping
// ErrInvalidConfig; stale configs wrap ErrStaleConfig; a run that cannot go
// on returns ErrRunFailed.
package actors
