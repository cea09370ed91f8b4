// Package daemon runs one t2t process in a cluster: `t2t node`. It owns
// the process's lifecycle for its role set (Roles), the membership watch,
// the rollout generations of a rollout process, the health endpoints, the
// Prometheus metrics and the coordinator's live page. It does not own the
// membership itself (package cluster: cluster.Join, cluster.NodeMeta), the
// actors (package actors) or the training run (package train); it wires
// them for one process.
//
// Names: a daemon is one OS process. cluster.NodeMeta describes a member
// of the membership (this process or another), actors.Node is a process's
// actor system with its remote transport; this package adds no Node type.
//
// # Usage
//
//	roles, err := daemon.ParseRoles("coordinator,learner,engineer")
//	cfg := daemon.DefaultConfig()
//	cfg.Roles, cfg.RedisURL, cfg.Stdout = roles, "redis://10.0.0.5:6379/0", os.Stdout
//	err = daemon.Run(ctx, cfg, &daemon.RunSetup{RunID: "run-1", Build: build})
//
// A process holding coordinator, learner and engineer runs the training
// run (train.Run) built by RunSetup.Build, with its actor system listening
// for rollout processes; one holding rollout joins the cluster, waits for
// a coordinator in the membership and runs Config.Capacity rollout actors
// against it, a new generation of actors for each coordinator it serves.
// A process may hold all four roles (a one-node cluster).
//
// RunHandler and ListenAndServe give a one-process run (`t2t train
// --http`) the same /healthz, /readyz, /metrics and live page.
//
// # Output
//
// Run prints its progress lines ("t2t node: joined ...", "t2t node:
// serving coordinator ...", the run's summary line) to Config.Stdout, and
// writes Config.SummaryPath (Summary, JSON) when it stops and one UnitLine
// per unit to Config.UnitLogPath. Those formats are read by scripts and
// tests: keep them stable.
//
// # Concurrency
//
// Run blocks until the run ends (coordinator) or ctx is cancelled
// (rollout-only process), and returns once its goroutines have stopped:
// the membership watch, the HTTP servers, the rollout actors. Writes to
// Config.Stdout are serialised.
//
// # Errors
//
// ParseRoles returns a *fielderr.Error about --roles wrapping ErrNoRoles,
// ErrPartialRun or the *cluster.RoleError of an unknown role. Run returns a
// *fielderr.Error (wrapping ErrBadSetting) naming the Config field it cannot
// use and the flag of t2t node that sets it (an address it
// cannot listen on, a unit log it cannot open, TLS material that does not
// load, a metrics label), ErrNoRunSetup for a coordinator without a
// RunSetup, RunSetup.Build's error unchanged, and otherwise the run's or
// the membership's error.
package daemon
