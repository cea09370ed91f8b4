package main

import (
	"flag"
	"github.com/asynkron/protoactor-go/remote"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
	"go.opentelemetry.io/otel/trace"
	"runtime"

	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
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
the embedded Redis serves one process only, so it is allowed only with all four roles.`

// nodeRoles is what a role set makes a node do.
type nodeRoles struct {
	roles   []cluster.Role
	run     bool // coordinator + learner + engineer: runs the training run
	rollout bool
}

func parseNodeRoles(s string) (nodeRoles, error) {
	if strings.TrimSpace(s) == "" {
		return nodeRoles{}, badInput("--roles is required: coordinator,learner,engineer and/or rollout")
	}
	roles, err := cluster.ParseRoles(s)
	if err != nil {
		return nodeRoles{}, badInput("--roles %q: %v (want coordinator, learner, engineer, rollout)", s, err)
	}
	nr := nodeRoles{roles: roles, rollout: slices.Contains(roles, cluster.RoleRollout)}
	n := 0
	for _, r := range []cluster.Role{cluster.RoleCoordinator, cluster.RoleLearner, cluster.RoleEngineer} {
		if slices.Contains(roles, r) {
			n++
		}
	}
	switch n {
	case 3:
		nr.run = true
	case 0:
	default:
		return nodeRoles{}, badInput("--roles %q: coordinator, learner and engineer run together on one node (give all three)", s)
	}
	return nr, nil
}

// full reports whether the node holds every role (a one-node cluster).
func (nr nodeRoles) full() bool { return nr.run && nr.rollout }

// nodeHealth backs /healthz and /readyz.
type nodeHealth struct {
	ready atomic.Bool
	state atomic.Pointer[string]
}

func (h *nodeHealth) set(ready bool, state string) {
	h.state.Store(&state)
	h.ready.Store(ready)
}

func (h *nodeHealth) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	case "/readyz":
		state := "starting"
		if p := h.state.Load(); p != nil {
			state = *p
		}
		ready := h.ready.Load()
		w.Header().Set("Content-Type", "application/json")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(map[string]any{"ready": ready, "state": state})
	default:
		http.NotFound(w, r)
	}
}

// lockedWriter serialises writes from the run's table and the node's
// goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// nodeSummary is the JSON a node writes to --summary when it stops.
type nodeSummary struct {
	ID    string `json:"id"`
	Roles string `json:"roles"`
	Error string `json:"error,omitempty"`
	// Run (coordinator nodes): the run's result, with the actor runtime's
	// report (per-stage units, issues, re-issues, duplicates).
	Run           *train.Result `json:"run,omitempty"`
	UnitsPerStage int           `json:"units_per_stage,omitempty"`
	// Rollout (rollout nodes): the runner's and rollout actors' counters.
	Rollout  *train.RemoteStats    `json:"rollout,omitempty"`
	Rollouts []actors.RolloutStats `json:"rollouts,omitempty"`
	// Flow (coordinator nodes): what became of the groups that reached
	// the learner over the run (per stage: Run.Stages[i].Flow).
	Flow *train.FlowStats `json:"flow,omitempty"`
}

// unitLine is one line of --unit-log.
type unitLine struct {
	Node           string       `json:"node"`
	Run            string       `json:"run"`
	Unit           string       `json:"unit"`
	Stage          int          `json:"stage"`
	Split          string       `json:"split"`
	PolicyVersion  int64        `json:"policy_version"`
	LearnerVersion int64        `json:"learner_version"`
	Lag            int64        `json:"lag"`
	Millis         int64        `json:"millis"`
	Buckets        []bucketLine `json:"buckets"`
}

type bucketLine struct {
	Size       int              `json:"size"`
	Agents     int              `json:"agents"`
	Episodes   int64            `json:"episodes"`
	Valid      int64            `json:"valid"`
	Optimal    int64            `json:"optimal"`
	RewardSum  float64          `json:"reward_sum"`
	Categories map[string]int64 `json:"categories,omitempty"`
}

func runNode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t node", nodeUsage, stderr)
	tf := addTrainFlags(fs)
	rolesFlag := fs.String("roles", "", "comma-separated roles: coordinator,learner,engineer (together) and/or rollout")
	join := fs.String("join", "", "gossip addresses host:port,... of cluster members to join (empty: start a new cluster)")
	gossip := fs.String("gossip", "0.0.0.0:7946", "gossip (memberlist) bind address ip:port; port 0 picks one")
	advertise := fs.String("advertise", "", "gossip address other nodes use to reach this one, ip[:port] (default: chosen by memberlist)")
	profile := fs.String("gossip-profile", cluster.ProfileLAN, "failure detection timers: lan (dead node seen in ~6s) or local (one host, ~1.3s)")
	listen := fs.String("listen", "127.0.0.1:0", "actor remote address host:port other nodes reach this one at (a routable IP in a real cluster; 0.0.0.0 stands for the --advertise IP, else this host's private IP); port 0 picks one")
	tlsCert := fs.String("tls-cert", "", "mutual TLS for the actor transport: this node's certificate (PEM); with --tls-key and --tls-ca, on every node")
	tlsKey := fs.String("tls-key", "", "mutual TLS: this node's private key (PEM)")
	tlsCA := fs.String("tls-ca", "", "mutual TLS: the CA certificate (PEM) that signs every node's certificate")
	gossipKeyFlag := fs.String("gossip-key", "", "gossip encryption key: base64 of 16, 24 or 32 bytes, the same on every node (default: $"+gossipKeyEnv+", else no encryption)")
	gossipKeyFile := fs.String("gossip-key-file", "", "read the gossip encryption key (base64) from this file instead")
	httpAddr := fs.String("http", "", "serve /healthz, /readyz and /metrics (Prometheus text) on this host:port (empty: off)")
	capacity := fs.Int("capacity", runtime.NumCPU(), "rollout role: rollout actors on this node (default: its CPU count)")
	serveAddr := fs.String("serve-addr", "", "coordinator with --policy qwen3: serve the trained model's OpenAI-compatible API here (host:port) so rollout nodes sample from its current weights")
	maxInFlight := fs.Int("max-in-flight", 2, "rollout role: units each rollout actor runs at once")
	joinTimeout := fs.Duration("join-timeout", 30*time.Second, "give up joining the cluster after this long")
	lease := fs.Duration("lease", 2*time.Minute, "coordinator: re-issue a unit whose rollout stays silent this long (dead nodes are re-issued as soon as membership reports them)")
	name := fs.String("name", "", "human name of this node (default: the host name)")
	staleness := fs.Int64("staleness", 4, "coordinator: the learner's staleness bound K: groups more than K policy versions old are late")
	maxLag := fs.Int64("max-lag", train.DefaultMaxLag, "coordinator: pace dispatch by the learner so that a unit's groups reach an update within this many\n"+
		"policy versions of the version it was issued at (1..--staleness); rollouts with free slots wait for the learner meanwhile; -1: no pacing")
	keepLate := fs.Int64("keep-late", 0, "coordinator: keep late groups up to this many versions old (truncated importance weights correct them)\n"+
		"instead of dropping them; 0: twice --staleness; --staleness or less: drop every late group")
	chunk := fs.Int("chunk", train.DefaultChunk, "rollout role: instances played between two looks for a newer policy version (0: a unit plays whole)")
	summary := fs.String("summary", "", "write a JSON summary of the node's work to this file when it stops")
	unitLog := fs.String("unit-log", "", "rollout role: append one JSON line per unit run on this node to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	nr, err := parseNodeRoles(*rolesFlag)
	if err != nil {
		return err
	}
	if *tf.redisURL == "" && !nr.full() {
		return badInput("--roles %s is a multi-node role set: it needs --redis redis://host:port, one real Redis shared by every node (the embedded Redis serves one process only)", cluster.FormatRoles(nr.roles))
	}
	if *capacity < 1 || *capacity > 256 {
		return badInput("--capacity %d: want 1..256", *capacity)
	}
	if *maxInFlight < 1 || *maxInFlight > 64 {
		return badInput("--max-in-flight %d: want 1..64", *maxInFlight)
	}
	if *joinTimeout <= 0 || *lease <= 0 {
		return badInput("--join-timeout and --lease must be > 0")
	}
	switch {
	case *staleness < 1:
		return badInput("--staleness %d: want >= 1", *staleness)
	case *maxLag == 0 || *maxLag < -1 || *maxLag > *staleness:
		return badInput("--max-lag %d: want 1..--staleness (%d), or -1 for no pacing", *maxLag, *staleness)
	case *keepLate < 0:
		return badInput("--keep-late %d: want >= 0", *keepLate)
	case *chunk < 0:
		return badInput("--chunk %d: want >= 0", *chunk)
	}
	ccfg, err := gossipConfig(*gossip, *advertise, *join, *profile, *joinTimeout)
	if err != nil {
		return err
	}
	if ccfg.SecretKey, err = gossipKey(*gossipKeyFlag, *gossipKeyFile); err != nil {
		return err
	}
	listenHost, listenPort, err := splitAddr("--listen", *listen)
	if err != nil {
		return err
	}
	if listenHost, err = routableHost(listenHost, *advertise); err != nil {
		return badInput("--listen %s: %v", *listen, err)
	}
	*listen = net.JoinHostPort(listenHost, strconv.Itoa(listenPort))
	if *name == "" {
		*name, _ = os.Hostname()
	}
	nodeNameSet := false
	fs.Visit(func(f *flag.Flag) { nodeNameSet = nodeNameSet || f.Name == "node-name" })
	if !nodeNameSet {
		*tf.tel.node = *name // traces name the node as --name does
	}
	out := &lockedWriter{w: stdout}
	logger := nodeLogger(*tf.verbose, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	health := &nodeHealth{}
	health.set(false, "starting")
	metrics, err := newNodeMetrics(*tf.tel.node)
	if err != nil {
		return badInput("--node-name: %v", err)
	}
	mux := nodeMux(health, metrics)
	if *httpAddr != "" {
		stopHTTP, err := serveHTTP(*httpAddr, mux, out, "t2t node: ")
		if err != nil {
			return err
		}
		defer stopHTTP()
	}

	n := &nodeRun{
		out: out, logger: logger, health: health, metrics: metrics, roles: nr, ccfg: ccfg, name: *name,
		id: cluster.NewNodeID(), capacity: *capacity, maxInFlight: *maxInFlight,
		listenHost: listenHost, listenPort: listenPort, listen: *listen, lease: *lease,
		summaryPath: *summary, unitLogPath: *unitLog, tf: tf, device: *tf.device, serveAddr: *serveAddr,
		staleness: *staleness, maxLag: *maxLag, keepLate: *keepLate, chunk: *chunk,
	}
	if tlsFiles := (cluster.TLSFiles{Cert: *tlsCert, Key: *tlsKey, CA: *tlsCA}); tlsFiles.Enabled() {
		if n.remoteOpts, err = cluster.RemoteTLSOptions(tlsFiles); err != nil {
			return badInput("--tls-*: %v", err)
		}
	}
	tel, stopTel, err := tf.tel.setup(ctx)
	if err != nil {
		return err
	}
	defer stopTel()
	n.tracer = tel.Tracer("t2t/node")
	st, err := store.Open(ctx, store.Options{URL: *tf.redisURL, Logger: logger, MaxRetryElapsed: 30 * time.Second})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	n.st = st
	if nr.run {
		runID := *tf.runID
		if runID == "" {
			runID = fmt.Sprintf("run-%d", *tf.seed)
		}
		n.dash = &dashboard{st: st, run: runID, nodes: func() []cluster.NodeMeta {
			if m := n.members.Load(); m != nil {
				return m.Members()
			}
			return nil
		}}
		n.dash.register(mux)
	}
	if *tf.redisURL != "" {
		if n.ps, err = train.OpenPolicyStore(ctx, *tf.redisURL, ""); err != nil {
			return err
		}
		defer n.ps.Close()
		if n.dash != nil {
			n.dash.ps = n.ps
		}
	}
	if nr.run {
		return n.coordinate(ctx)
	}
	return n.serveRollouts(ctx)
}

func nodeLogger(verbose bool, stderr io.Writer) *slog.Logger {
	level := slog.LevelWarn
	if verbose {
		level = slog.LevelInfo
	}
	return slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
}

func splitAddr(flagName, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, badInput("%s %q: %v", flagName, addr, err)
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, badInput("%s %q: port must be 0..65535", flagName, addr)
	}
	return host, port, nil
}

func gossipConfig(bind, advertise, join, profile string, joinTimeout time.Duration) (cluster.Config, error) {
	c := cluster.DefaultConfig()
	if profile == cluster.ProfileLocal {
		c = cluster.LocalConfig()
	}
	c.Profile = profile
	host, port, err := splitAddr("--gossip", bind)
	if err != nil {
		return c, err
	}
	c.BindAddr, c.BindPort = host, port
	if advertise != "" {
		h, p, err := net.SplitHostPort(advertise)
		if err != nil {
			h, p = advertise, "0"
		}
		ap, perr := strconv.Atoi(p)
		if perr != nil {
			return c, badInput("--advertise %q: bad port", advertise)
		}
		c.AdvertiseAddr, c.AdvertisePort = h, ap
	}
	for _, s := range strings.Split(join, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Seeds = append(c.Seeds, s)
		}
	}
	c.JoinTimeout = joinTimeout
	if err := c.Validate(); err != nil {
		return c, badInput("gossip flags: %v", err)
	}
	return c, nil
}

// nodeRun is one t2t node process.
type nodeRun struct {
	out         io.Writer
	logger      *slog.Logger
	tracer      trace.Tracer
	serveAddr   string                             // --serve-addr
	members     atomic.Pointer[cluster.Membership] // the coordinator's membership, for the live page
	remoteOpts  []remote.ConfigOption              // mutual TLS of the actor transport
	health      *nodeHealth
	metrics     *nodeMetrics
	roles       nodeRoles
	ccfg        cluster.Config
	id, name    string
	capacity    int
	maxInFlight int
	listenHost  string
	listenPort  int
	listen      string
	lease       time.Duration
	summaryPath string
	unitLogPath string
	tf          *trainFlags
	device      string
	st          *store.Store
	ps          *train.PolicyStore
	dash        *dashboard // the coordinator's live page
	// Flow control (coordinator) and policy refresh (rollout): --staleness,
	// --max-lag, --keep-late, --chunk.
	staleness, maxLag, keepLate int64
	chunk                       int
}

func (n *nodeRun) meta(address string) cluster.NodeMeta {
	m := cluster.NodeMeta{ID: n.id, Name: n.name, Address: address, Roles: n.roles.roles}
	if n.roles.rollout {
		m.Capacity = n.capacity
	}
	return m
}

func (n *nodeRun) joined(m *cluster.Membership, address string) {
	fmt.Fprintf(n.out, "t2t node: joined id=%s roles=%s gossip=%s actors=%s members=%d\n",
		n.id, cluster.FormatRoles(n.roles.roles), m.Addr(), address, len(m.Members()))
}

func (n *nodeRun) writeSummary(s nodeSummary) error {
	if n.summaryPath == "" {
		return nil
	}
	s.ID, s.Roles = n.id, cluster.FormatRoles(n.roles.roles)
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(n.summaryPath, append(b, '\n'), 0o644)
}

// coordinate runs the training run with the actor system listening for
// rollout nodes, and feeds departed rollout nodes to System.NodeLeft.
func (n *nodeRun) coordinate(ctx context.Context) error {
	s, err := n.tf.build(n.logger, n.out)
	if err != nil {
		return err
	}
	opt := n.tf.options(s, n.out)
	opt.Tracer = n.tracer
	opt.OnState = n.metrics.state
	opt.StalenessK, opt.MaxLag, opt.KeepLateK = n.staleness, n.maxLag, n.keepLate
	if n.dash != nil {
		opt.OnFlow = n.dash.onFlow
	}
	if n.roles.rollout {
		opt.Rollouts = n.capacity
		logUnit, closeLog, err := n.openUnitLog()
		if err != nil {
			return err
		}
		defer closeLog()
		opt.OnUnit = func(r store.UnitResult) {
			n.metrics.localUnit(r)
			logUnit(train.UnitLog{Result: r, PolicyVersion: r.PolicyVersion, LearnerVersion: r.PolicyVersion})
		}
	}
	var (
		mu sync.Mutex
		m  *cluster.Membership
	)
	// Without a shared Redis (a one-node cluster) no rollout node could run
	// this run's units: the node then neither listens nor advertises an
	// actor address, so rollout nodes do not take it for a coordinator.
	listen := n.listen
	if n.ps == nil {
		listen = ""
	}
	endpoint, stopServe, err := n.serveLLM(s.pol)
	if err != nil {
		return err
	}
	defer stopServe()
	opt.Cluster = train.Cluster{Endpoint: endpoint, EndpointModel: llmModelName,
		Node: n.id, Listen: listen, RemoteOnly: !n.roles.rollout, LeaseTimeout: n.lease, Policies: n.ps, RemoteOptions: n.remoteOpts,
		Started: func(sys *actors.System) error {
			addr := ""
			if listen != "" {
				addr = sys.Node().Address()
			}
			mm, err := cluster.Join(ctx, n.ccfg, n.meta(addr), n.logger)
			if err != nil {
				return fmt.Errorf("join cluster: %w", err)
			}
			mu.Lock()
			m = mm
			mu.Unlock()
			n.members.Store(mm)
			n.metrics.attach(sys)
			go n.watchRollouts(mm, sys)
			n.joined(mm, addr)
			n.health.set(true, "running")
			return nil
		},
	}
	res, runErr := train.Run(ctx, opt, s.pol, n.st)
	n.health.set(false, "stopping")
	mu.Lock()
	if m != nil {
		if err := m.Leave(n.ccfg.LeaveTimeout); err != nil {
			n.logger.Warn("leave cluster", "error", err)
		}
	}
	mu.Unlock()
	sum := nodeSummary{Run: res}
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	if res != nil {
		sum.UnitsPerStage = (s.cfg.Instances + *n.tf.perUnit - 1) / *n.tf.perUnit
		var reissued, dups uint64
		for _, sd := range res.Actors.Stages {
			reissued += uint64(sd.Reissued)
		}
		dups = res.Actors.Coordinator.Duplicates
		f := res.Flow()
		sum.Flow = &f
		l := res.Actors.Learner
		line := fmt.Sprintf("t2t node: run %s: %d stages done, %d units per stage, %d re-issued, %d duplicate results, learner %d updates, %d groups used (%d kept late), %d discarded (%.1f%%: stale %d, late stage %d, duplicate %d), dispatch waited %s for the learner",
			res.RunID, len(res.Actors.Stages), sum.UnitsPerStage, reissued, dups, l.Updates, l.Used, l.LateKept, f.Discarded(), 100*f.DiscardShare(),
			f.DiscardedStale, f.DiscardedLateStage, f.DiscardedDuplicate, f.LearnerWait.Round(100*time.Millisecond))
		if f.Warn() {
			line += "; WARNING: " + train.DiscardWarning(f)
		}
		fmt.Fprintln(n.out, line)
	}
	if err := n.writeSummary(sum); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", runErr)
	}
	return runErr
}

// watchRollouts reports every rollout node that leaves the membership
// (gracefully or declared dead) to the coordinator, which re-issues its
// units at once.
func (n *nodeRun) watchRollouts(m *cluster.Membership, sys *actors.System) {
	ch, cancel := m.Watch()
	defer cancel()
	known := map[string]cluster.NodeMeta{}
	for range ch {
		cur := map[string]cluster.NodeMeta{}
		for _, mem := range m.Members() {
			if mem.ID != n.id && mem.HasRole(cluster.RoleRollout) {
				cur[mem.ID] = mem
			}
		}
		for id, mem := range known {
			if _, ok := cur[id]; !ok {
				sys.NodeLeft(id)
				fmt.Fprintf(n.out, "t2t node: rollout node left id=%s name=%s: its units are re-issued\n", id, mem.Name)
			}
		}
		for id, mem := range cur {
			if _, ok := known[id]; !ok {
				fmt.Fprintf(n.out, "t2t node: rollout node joined id=%s name=%s capacity=%d actors=%s\n", id, mem.Name, mem.Capacity, mem.Address)
			}
		}
		known = cur
	}
}

// serving is a rollout node's rollouts for one coordinator.
type serving struct {
	coord   cluster.NodeMeta
	handles []*actors.RolloutHandle
}

// serveRollouts runs a rollout-only node: it joins the cluster, waits for a
// coordinator in the membership, runs --capacity rollout actors against
// it, and when that coordinator goes, stops them and waits for the next.
func (n *nodeRun) serveRollouts(ctx context.Context) error {
	reg := actors.NewRegistry()
	if err := actors.RegisterMessages(reg); err != nil {
		return err
	}
	node := actors.NewNode(n.id, reg, n.logger)
	defer node.Close()
	if err := node.StartRemote(n.listenHost, n.listenPort, n.remoteOpts...); err != nil {
		return badInput("--listen %s: %v", n.listen, err)
	}
	m, err := cluster.Join(ctx, n.ccfg, n.meta(node.Address()), n.logger)
	if err != nil {
		return fmt.Errorf("join cluster via %s: %w", strings.Join(n.ccfg.Seeds, ","), err)
	}
	n.joined(m, node.Address())
	n.health.set(false, "waiting for a coordinator")

	logUnit, closeLog, err := n.openUnitLog()
	if err != nil {
		m.Shutdown()
		return err
	}
	defer closeLog()
	runner := train.NewRemoteRunner(n.st, n.ps, n.device, n.logger, func(u train.UnitLog) {
		n.metrics.remoteUnit(u)
		logUnit(u)
	})
	runner.SetTracer(n.tracer)
	runner.SetChunk(n.chunk)
	n.metrics.attachRunner(runner)
	var (
		cur      atomic.Pointer[serving]
		all      []*actors.RolloutHandle
		gen      int
		stopping = func(s *serving) {
			for _, h := range s.handles {
				if err := node.System().Root.StopFuture(h.PID).Wait(); err != nil {
					n.logger.Warn("stop rollout", "error", err)
				}
			}
		}
	)
	runner.SetLearnerVersion(func() int64 {
		s := cur.Load()
		if s == nil {
			return -1
		}
		v := int64(0)
		for _, h := range s.handles {
			v = max(v, h.Stats().Policy)
		}
		return v
	})
	ch, cancelWatch := m.Watch()
	defer cancelWatch()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case _, ok := <-ch:
			if !ok {
				break loop
			}
		}
		members := m.Members()
		if s := cur.Load(); s != nil && !slices.ContainsFunc(members, func(x cluster.NodeMeta) bool { return x.ID == s.coord.ID }) {
			cur.Store(nil)
			stopping(s)
			runner.Forget()
			n.health.set(false, "waiting for a coordinator")
			fmt.Fprintf(n.out, "t2t node: coordinator %s left; waiting for the next\n", s.coord.ID)
		}
		if cur.Load() != nil {
			continue
		}
		i := slices.IndexFunc(members, func(x cluster.NodeMeta) bool {
			return x.ID != n.id && x.HasRole(cluster.RoleCoordinator) && x.Address != ""
		})
		if i < 0 {
			continue
		}
		c := members[i]
		s := &serving{coord: c}
		coordPID, learnerPID := actor.NewPID(c.Address, actors.CoordinatorName), actor.NewPID(c.Address, actors.LearnerName)
		for k := range n.capacity {
			h, err := node.SpawnRollout(actors.RolloutConfig{Name: fmt.Sprintf("rollout-%d-%d", gen, k),
				Coordinator: coordPID, Learner: learnerPID, MaxInFlight: n.maxInFlight, OnPolicy: runner.Prefetch}, runner)
			if err != nil {
				stopping(s)
				m.Shutdown()
				return err
			}
			s.handles = append(s.handles, h)
		}
		gen++
		all = append(all, s.handles...)
		cur.Store(s)
		n.health.set(true, "serving coordinator "+c.ID)
		fmt.Fprintf(n.out, "t2t node: serving coordinator %s at %s with %d rollouts\n", c.ID, c.Address, n.capacity)
	}
	n.health.set(false, "stopping")
	if s := cur.Load(); s != nil {
		cur.Store(nil)
		stopping(s)
	}
	leaveErr := m.Leave(n.ccfg.LeaveTimeout)
	stats := runner.Stats()
	sum := nodeSummary{Rollout: &stats}
	for _, h := range all {
		sum.Rollouts = append(sum.Rollouts, h.Stats())
	}
	fmt.Fprintf(n.out, "t2t node: stopped: %d units run (%d failed), %d policy loads, policy lag mean %.2f max %d, %d units took up a newer version mid-unit\n",
		stats.Units, stats.Failed, stats.PolicyLoads, meanLag(stats), stats.PolicyLagMax, stats.Refreshes)
	if leaveErr != nil {
		n.logger.Warn("leave cluster", "error", leaveErr)
	}
	return n.writeSummary(sum)
}

// openUnitLog opens --unit-log; the returned func appends one line per
// unit (a no-op without --unit-log) and is safe for concurrent use.
func (n *nodeRun) openUnitLog() (func(train.UnitLog), func(), error) {
	if n.unitLogPath == "" {
		return func(train.UnitLog) {}, func() {}, nil
	}
	f, err := os.OpenFile(n.unitLogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, nil, badInput("--unit-log: %v", err)
	}
	var mu sync.Mutex
	return func(u train.UnitLog) {
		b, err := json.Marshal(unitLineOf(n.id, u))
		if err != nil {
			n.logger.Error("unit log", "error", err)
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if _, err := f.Write(append(b, '\n')); err != nil {
			n.logger.Error("unit log", "error", err)
		}
	}, func() { f.Close() }, nil
}

func meanLag(s train.RemoteStats) float64 {
	if s.Units == 0 {
		return 0
	}
	return float64(s.PolicyLagSum) / float64(s.Units)
}

func unitLineOf(node string, u train.UnitLog) unitLine {
	r := u.Result
	l := unitLine{Node: node, Run: r.RunID, Unit: r.UnitID, Stage: r.Stage, Split: r.Split,
		PolicyVersion: u.PolicyVersion, LearnerVersion: u.LearnerVersion, Lag: u.Lag, Millis: u.Millis}
	for k, c := range r.Buckets {
		l.Buckets = append(l.Buckets, bucketLine{Size: k.Size, Agents: k.Agents, Episodes: c.Episodes, Valid: c.Valid,
			Optimal: c.Optimal, RewardSum: c.RewardSum, Categories: c.Categories})
	}
	slices.SortFunc(l.Buckets, func(a, b bucketLine) int {
		if a.Size != b.Size {
			return a.Size - b.Size
		}
		return a.Agents - b.Agents
	})
	return l
}

// llmModelName is the model id the coordinator's endpoint serves.
const llmModelName = "t2t-policy"

// serveLLM starts t2t serve over an LLM policy's model on --serve-addr, so
// rollout nodes sample from the weights the learner trains (the same model
// object: no copy, no swap). It returns the endpoint's base URL, or "" for
// other policies.
func (n *nodeRun) serveLLM(pol train.Policy) (string, func(), error) {
	tp, ok := pol.(*textpolicy.Policy)
	if !ok || n.serveAddr == "" {
		return "", func() {}, nil
	}
	srv, err := serve.New(tp.LM(), serve.Options{ModelName: llmModelName, Logger: n.logger})
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", n.serveAddr)
	if err != nil {
		return "", nil, badInput("--serve-addr %s: %v", n.serveAddr, err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 5 * time.Second}
	go hs.Serve(ln)
	url := "http://" + ln.Addr().String() + "/v1"
	fmt.Fprintf(n.out, "t2t node: serving the policy at %s\n", url)
	return url, func() { hs.Close() }, nil
}
