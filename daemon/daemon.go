package daemon

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/asynkron/protoactor-go/remote"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/train"
)

// process is one daemon: a running t2t process with its role set.
type process struct {
	cfg        Config
	run        *RunSetup
	out        io.Writer // cfg.Stdout, serialised
	logger     *slog.Logger
	listenHost string
	listenPort int
	remoteOpts []remote.ConfigOption // mutual TLS of the actor transport
	health     *health
	metrics    *metrics
	st         *store.Store
	ps         *train.PolicyStore                 // nil without a shared Redis
	dash       *Dashboard                         // the coordinator's live page
	members    atomic.Pointer[cluster.Membership] // the coordinator's membership, for the live page
}

// Run runs one t2t process with cfg.Roles until the run ends (a role set
// with coordinator, learner and engineer: the training run that run
// builds) or ctx is cancelled (a rollout-only process). It serves
// cfg.HTTPAddr from the start, opens the store, joins the cluster and
// writes cfg.SummaryPath when it stops. A run cut short by ctx returns
// an error wrapping the run's ("interrupted: ..."); a rollout-only process
// stopped by ctx returns nil. See the package doc for the errors.
func Run(ctx context.Context, cfg Config, run *RunSetup) error {
	if cfg.Roles.Run && (run == nil || run.Build == nil) {
		return ErrNoRunSetup
	}
	p, err := newProcess(cfg, run)
	if err != nil {
		return err
	}
	mux := newMux(p.health, p.metrics)
	if cfg.HTTPAddr != "" {
		stopHTTP, err := ListenAndServe(cfg.HTTPAddr, mux, p.out, "t2t node: ")
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	if w := gossipWarning(cfg.Gossip); w != "" {
		fmt.Fprintln(p.out, w)
	}
	if cfg.TLS.Enabled() {
		if p.remoteOpts, err = cluster.RemoteTLSOptions(cfg.TLS); err != nil {
			return settingError("TLS", cfg.TLS.Cert, err)
		}
	}
	st, err := store.Open(ctx, store.Options{URL: cfg.RedisURL, Logger: p.logger, MaxRetryElapsed: 30 * time.Second,
		ObserveCommand: p.metrics.m.ObserveRedis})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	p.st = st
	if cfg.RedisURL != "" {
		p.ps = train.NewPolicyStore(st)
	}
	if !cfg.Roles.Run {
		return p.serveRollouts(ctx)
	}
	p.dash = NewDashboard(st, p.ps, run.RunID, p.memberList)
	p.dash.register(mux)
	return p.coordinate(ctx)
}

// newProcess fills cfg's defaults and builds the health and metrics.
func newProcess(cfg Config, run *RunSetup) (*process, error) {
	if cfg.ID == "" {
		cfg.ID = cluster.NewNodeID()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	host, port, err := splitHostPort(cfg.Listen)
	if err != nil {
		return nil, settingError("Listen", cfg.Listen, err)
	}
	p := &process{cfg: cfg, run: run, out: &lockedWriter{w: cfg.Stdout}, logger: cfg.Logger,
		listenHost: host, listenPort: port, health: &health{}}
	p.health.set(false, "starting")
	if p.metrics, err = newMetrics(cfg.TelemetryName); err != nil {
		return nil, err
	}
	p.cfg.Gossip.OnLogLine = p.metrics.gossipLogLine // rate-limited in the log, every one counted here
	return p, nil
}

// splitHostPort splits host:port with a numeric port.
func splitHostPort(addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(p)
	if err != nil {
		return "", 0, err
	}
	return host, port, nil
}

// meta is the process's membership metadata with its actor address.
func (p *process) meta(address string) cluster.NodeMeta {
	m := cluster.NodeMeta{ID: p.cfg.ID, Name: p.cfg.Name, Address: address, Roles: p.cfg.Roles.List}
	if p.cfg.Roles.Rollout {
		m.Capacity = p.cfg.Capacity
	}
	return m
}

func (p *process) joined(m *cluster.Membership, address string) {
	fmt.Fprintf(p.out, "t2t node: joined id=%s roles=%s gossip=%s actors=%s members=%d\n",
		p.cfg.ID, p.cfg.Roles, m.Addr(), address, len(m.Members()))
}

func (p *process) writeSummary(s Summary) error {
	return writeSummary(p.cfg.SummaryPath, p.cfg.ID, p.cfg.Roles, s)
}

// lockedWriter serialises writes from the run's table and the process's
// goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(b)
}

// gossipWarning is the warning for gossip that binds an address other hosts can reach without a
// key (anyone who reaches it can join the cluster and read its membership); "" otherwise.
func gossipWarning(c cluster.Config) string {
	if !c.Exposed() {
		return ""
	}
	return fmt.Sprintf("t2t node: WARNING: gossip on %s is unencrypted and reachable from other hosts: anyone who can reach it can join the cluster (set --gossip-key, or bind --gossip to 127.0.0.1)",
		net.JoinHostPort(c.BindAddr, strconv.Itoa(c.BindPort)))
}

// memberList is the cluster's members (none before the process joined).
func (p *process) memberList() []cluster.NodeMeta {
	if m := p.members.Load(); m != nil {
		return m.Members()
	}
	return nil
}

// memberNodes is the cluster's members as nodes of the run
// (train.Cluster.Members).
func (p *process) memberNodes() []train.StatusNode { return memberNodes(p.memberList()) }
