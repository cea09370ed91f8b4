package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/serve"
	"github.com/t2t-lab/t2t/train"
)

const nodeUsage = `t2t node --roles R1,R2 [--join host:port,...] [--gossip host:port] [--listen host:port] [--redis redis://...] [train flags]

Joins (or starts) a t2t cluster with the given roles:
  coordinator,learner,engineer  runs the training run (as 't2t train', with the train flags)
                                and serves its work units to rollout nodes
  rollout                       runs --capacity rollout actors that pull work units from the
                                coordinator found in the cluster; its policy (kind, seed,
                                weights) comes from the run, through Redis
A node may hold all four roles. Every node of a cluster shares one real Redis (--redis);
the embedded Redis serves one process only, so it is allowed only with all four roles.
Gossip binds 127.0.0.1:7946 unless --gossip names an address; one that other hosts can reach
needs a gossip key (--gossip-key, --gossip-key-file or $T2T_GOSSIP_KEY) or --insecure.`

// nodeFlags are t2t node's flags: most are bound to the daemon's Config,
// the rest are parsed into it by config (the run's flags are trainFlags).
type nodeFlags struct {
	cfg            daemon.Config
	g              cluster.GossipFlags
	roles, listen  *string
	insecureListen *bool
	warn           io.Writer // where config warns of --insecure-listen
}

func addNodeFlags(fs *flag.FlagSet) *nodeFlags {
	f := &nodeFlags{cfg: daemon.DefaultConfig()}
	c := &f.cfg
	f.roles = fs.String("roles", "", "comma-separated roles: coordinator,learner,engineer (together) and/or rollout")
	f.g.Register(fs)
	f.listen = fs.String("listen", c.Listen, "actor remote address host:port other nodes reach this one at (a routable IP in a real cluster; 0.0.0.0 stands for the --advertise IP, else this host's private IP); port 0 picks one")
	c.TLS.Register(fs)
	f.insecureListen = fs.Bool("insecure-listen", false, "allow the actor transport on an address other hosts can reach without TLS (--tls-*): anyone who reaches it can send actor messages")
	fs.StringVar(&c.HTTPAddr, "http", "", "serve on this host:port (empty: off): /healthz, /readyz, /metrics (Prometheus text) and, on a coordinator, the live page /ui and its JSON /api/status; GET and HEAD only")
	fs.IntVar(&c.Capacity, "capacity", c.Capacity, "rollout role: rollout actors on this node (default: its CPU count)")
	fs.StringVar(&c.ServeAddr, "serve-addr", "", "coordinator with --policy qwen3: serve the trained model's OpenAI-compatible API here (host:port) so rollout nodes sample from its current weights")
	serve.RegisterFlags(fs, &c.Serve) // --api-key: rollout nodes send it to --serve-addr
	fs.IntVar(&c.MaxInFlight, "max-in-flight", c.MaxInFlight, "rollout role: units each rollout actor runs at once")
	fs.DurationVar(&c.Lease, "lease", c.Lease, "coordinator: re-issue a unit whose rollout stays silent this long (dead nodes are re-issued as soon as membership reports them)")
	fs.StringVar(&c.Name, "name", "", "human name of this node (default: the host name)")
	fs.Int64Var(&c.StalenessK, "staleness", c.StalenessK, "coordinator: the learner's staleness bound K: groups more than K policy versions old are late")
	fs.Int64Var(&c.MaxLag, "max-lag", c.MaxLag, "coordinator: pace dispatch by the learner so that a unit's groups reach an update within this many\n"+
		"policy versions of the version it was issued at (1..--staleness); rollouts with free slots wait for the learner meanwhile; -1: no pacing")
	fs.Int64Var(&c.KeepLateK, "keep-late", c.KeepLateK, "coordinator: keep late groups up to this many versions old (truncated importance weights correct them)\n"+
		"instead of dropping them; 0: twice --staleness; --staleness or less: drop every late group")
	fs.IntVar(&c.Chunk, "chunk", c.Chunk, "rollout role: instances played between two looks for a newer policy version (0: a unit plays whole)")
	fs.BoolVar(&c.Keep, "keep", false, "rollout role: keep running after the run is done, waiting for the next coordinator (default: leave)")
	fs.StringVar(&c.SummaryPath, "summary", "", "write a JSON summary of the node's work to this file when it stops")
	fs.StringVar(&c.UnitLogPath, "unit-log", "", "rollout role: append one JSON line per unit run on this node to this file")
	return f
}

func runNode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t node", nodeUsage, stderr)
	var tf train.Flags
	tf.Register(fs)
	nf := addNodeFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	roles, err := daemon.ParseRoles(*nf.roles)
	if err != nil {
		return err
	}
	if tf.Redis.URL() == "" && !roles.Full() {
		return badInput("--roles %s is a multi-node role set: it needs --redis redis://host:port, one real Redis shared by every node (the embedded Redis serves one process only)", roles)
	}
	nf.warn = stderr
	cfg, err := nf.config(roles)
	if err != nil {
		return err
	}
	nodeNameSet := false
	fs.Visit(func(f *flag.Flag) { nodeNameSet = nodeNameSet || f.Name == "node-name" })
	if !nodeNameSet {
		tf.Telemetry.Node = cfg.Name // traces name the node as --name does
	}
	cfg.TelemetryName, cfg.RedisURL, cfg.Device = tf.Telemetry.Node, tf.Redis.URL(), tf.Device
	cfg.Logger, cfg.Stdout = nodeLogger(tf.Verbose, stderr), stdout
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	tel, stopTel, err := tf.Telemetry.Setup(ctx)
	if err != nil {
		return badInput("tracing: %v", err)
	}
	defer stopTel()
	cfg.Tracer = tel.Tracer("t2t/node")
	tf.Rollout.APIKey = cfg.Serve.APIKey // the key every node sends (--api-key), to a rollout engine too
	return daemon.Run(ctx, cfg, daemon.FlagsRunSetup(ctx, &tf))
}

// config checks the flags and returns the daemon's Config of them.
func (f *nodeFlags) config(roles daemon.Roles) (daemon.Config, error) {
	c := f.cfg
	if err := c.CheckRanges(f.g.JoinTimeout); err != nil {
		return c, err
	}
	c.Roles, c.ID = roles, cluster.NewNodeID()
	var err error
	if c.Gossip, err = f.g.Config(); err != nil {
		return c, err
	}
	c.Listen, err = daemon.ListenAddr(*f.listen, f.g.Advertise, c.TLS.Enabled(), *f.insecureListen, func() {
		fmt.Fprintf(f.warn, "t2t node: WARNING: the actor transport on %s is plain gRPC reachable from other hosts (--insecure-listen): anyone who can reach it can send actor messages\n", *f.listen)
	})
	if err != nil {
		return c, err
	}
	if c.Name == "" {
		c.Name, _ = os.Hostname()
	}
	return c, nil
}

func nodeLogger(verbose bool, stderr io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}
