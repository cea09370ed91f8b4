package daemon

import (
	"context"
	"io"
	"log/slog"
	"runtime"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/serve"
	"github.com/t2t-lab/t2t/train"
)

// Config is what one daemon process needs. DefaultConfig fills the
// defaults; Roles, RedisURL (except for a full role set), Stdout and the
// addresses are the caller's.
type Config struct {
	// Roles is the process's role set (ParseRoles).
	Roles Roles
	// ID is the process's member ID, fresh per start. Default: a new
	// cluster.NewNodeID().
	ID string
	// Name is the human name other members see. Default: "".
	Name string
	// Gossip is the membership config: bind and advertise addresses, the
	// seeds to join (none: start a new cluster), the failure-detection
	// profile, the join timeout and the gossip key (SecretKey). Default:
	// cluster.DefaultConfig().
	Gossip cluster.Config
	// Listen is the actor transport's address, host:port, with a host
	// other members can reach (RoutableHost turns a wildcard into one);
	// port 0 picks one. Default: 127.0.0.1:0.
	Listen string
	// TLS is the actor transport's mutual TLS (off unless Enabled).
	TLS cluster.TLSFiles
	// HTTPAddr serves /healthz, /readyz, /metrics and, on a coordinator,
	// the live page (/ui, /api/status). Default: "" (off).
	HTTPAddr string
	// ServeAddr: on a coordinator whose policy is an LLM, serve the
	// policy's OpenAI-compatible API here, so that rollout processes
	// sample from the weights the learner trains. Default: "" (off).
	ServeAddr string
	// Serve holds the policy endpoint's request limits and API key
	// (serve.Options; its ModelName and Logger are the coordinator's own).
	// A rollout process sends Serve.APIKey to the endpoint it samples from,
	// so every node of a cluster gets the same key. Default: the zero
	// Options, serve's defaults and no key.
	Serve serve.Options
	// RedisURL is the run's store, one real Redis shared by every member.
	// "" embeds an in-process one, which serves this process only: then no
	// rollout process can take part, so the coordinator neither listens
	// nor advertises an actor address.
	RedisURL string
	// TelemetryName is the node label of the metrics. Default: "".
	TelemetryName string
	// Tracer traces the run (coordinator) or the units (rollout). Default:
	// nil, no spans.
	Tracer trace.Tracer

	// Capacity is the number of rollout actors of the rollout role.
	// Default: the CPU count.
	Capacity int
	// MaxInFlight is the number of units each rollout actor runs at once.
	// Default: 2, so that an actor fetches its next unit while the learner
	// takes the last one's groups.
	MaxInFlight int
	// Device is the rollout role's device for its copy of the policy.
	// Default: "cpu".
	Device string
	// Chunk is the number of instances a rollout plays between two looks
	// for a newer policy version (0: a unit plays whole). Default:
	// train.DefaultChunk.
	Chunk int

	// Lease: the coordinator re-issues a unit whose rollout stays silent
	// this long. Membership reports dead processes sooner; the lease covers
	// the rest. Default: 2m.
	Lease time.Duration
	// StalenessK, MaxLag and KeepLateK are the coordinator's flow control
	// (train.Options.StalenessK, MaxLag, KeepLateK). Defaults: 4,
	// train.DefaultMaxLag, 0 (twice StalenessK).
	StalenessK, MaxLag, KeepLateK int64

	// Keep keeps a rollout node running after the run it served is done
	// (its coordinator left with the run's phase "done"), waiting for the
	// next coordinator. Default: false (the node stops).
	Keep bool

	// SummaryPath receives a Summary (JSON) when the process stops.
	// Default: "" (none).
	SummaryPath string
	// UnitLogPath receives one UnitLine per unit this process's rollouts
	// ran, appended. Default: "" (none).
	UnitLogPath string

	// Logger logs the runtime's warnings. Default: discard.
	Logger *slog.Logger
	// Stdout receives the process's progress lines. Default: discard.
	Stdout io.Writer
}

// DefaultConfig returns a Config with every default filled.
func DefaultConfig() Config {
	return Config{
		Gossip:      cluster.DefaultConfig(),
		Listen:      "127.0.0.1:0",
		Capacity:    runtime.NumCPU(),
		MaxInFlight: 2,
		Device:      "cpu",
		Chunk:       train.DefaultChunk,
		Lease:       2 * time.Minute,
		StalenessK:  4,
		MaxLag:      train.DefaultMaxLag,
	}
}

// RunSetup is what the coordinator role needs to run the training run;
// the caller (t2t node's run flags) knows how to build it.
type RunSetup struct {
	// RunID is the run's id in Redis; the live page shows it.
	RunID string
	// Build checks the run's settings and builds its policy and options.
	// The coordinator calls it once, after the store is open (so that a
	// process whose Redis is down loads no model), with the process's
	// logger and serialised stdout, which the options should use. Its
	// error is returned by Run unchanged.
	Build func(logger *slog.Logger, out io.Writer) (*Training, error)
}

// Training is a built training run: what train.Run takes.
type Training struct {
	// Options are the run's options. Run sets the daemon's hooks
	// (OnState, OnFlow, Tracer), the flow control and Cluster, and with
	// the rollout role Rollouts and OnUnit.
	Options train.Options
	// Policy is the policy the run trains.
	Policy train.Policy
	// Close releases the policy (a torch worker) once the run is over;
	// nil: nothing to release.
	Close func() error
}

// FlagsRunSetup is the RunSetup of a run that train's command-line flags
// describe (t2t node's train flags): its RunID (train.DefaultRunID of the
// seed when the flags name none), and a Build that builds the policy and
// the options from the flags within ctx.
func FlagsRunSetup(ctx context.Context, tf *train.Flags) *RunSetup {
	run := &RunSetup{RunID: tf.Opt.RunID, Build: func(logger *slog.Logger, out io.Writer) (*Training, error) {
		s, err := tf.Build(ctx, logger, out)
		if err != nil {
			return nil, err
		}
		return &Training{Options: tf.Options(s, out), Policy: s.Policy, Close: s.Close}, nil
	}}
	if run.RunID == "" {
		run.RunID = train.DefaultRunID(tf.Opt.Seed)
	}
	return run
}
