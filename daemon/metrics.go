package daemon

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/train"
)

// The daemon's own metric names, next to telemetry's standard ones.
const (
	MetricRolloutUnits   = "t2t_rollout_units_total"
	MetricRolloutFailed  = "t2t_rollout_units_failed_total"
	MetricPolicyLoads    = "t2t_policy_loads_total"
	MetricPolicyVersion  = "t2t_policy_version"
	MetricLearnerStale   = "t2t_learner_stale_groups_total"
	MetricLearnerPending = "t2t_learner_pending_groups"
	// Flow (dispatch paced by the learner; train.FlowStats).
	MetricDiscarded      = "t2t_learner_discarded_groups_total" // label reason: stale, late_stage, duplicate
	MetricLateKept       = "t2t_learner_late_kept_groups_total"
	MetricDiscardShare   = "t2t_learner_discarded_share"
	MetricLearnerWait    = "t2t_learner_wait_seconds"
	MetricOutstanding    = "t2t_dispatch_outstanding_groups"
	MetricDispatchWindow = "t2t_dispatch_window_groups"
	MetricGossipLogLines = "t2t_gossip_log_lines_total" // label level: warn, error
)

// Reasons of MetricDiscarded.
const (
	discardStale     = "stale"
	discardLateStage = "late_stage"
	discardDuplicate = "duplicate"
)

// metrics is a process's /metrics: telemetry's standard metrics and a few
// of the daemon's own, all labelled node=<Config.TelemetryName>. What
// feeds them:
//
//   - the units this process's rollouts ran (a rollout process's
//     RemoteRunner, or the run's own rollouts through
//     train.Options.OnUnit): episodes, units, policy lag, stage;
//   - the run's state (train.Options.OnState, coordinator): stage, policy
//     version;
//   - the actor system's live counters (actors.System.Stats, coordinator),
//     read at each scrape: work units completed, lease re-issues, learner
//     updates, stale and pending groups;
//   - a rollout process's runner counters, read at each scrape: failed
//     units, policy loads.
//
// t2t_work_queue_depth is the coordinator's queue of units waiting for a
// rollout. The flow metrics (coordinator) say what became of the groups
// that reached the learner (discarded by reason, kept late), how long
// queued units waited for the learner while rollouts had free slots, and
// how full the dispatch window is.
type metrics struct {
	m                                        *telemetry.Metrics
	rolloutUnits, rolloutFailed, policyLoads prometheus.Counter
	learnerStale, lateKept                   prometheus.Counter
	discarded, gossipLog                     *prometheus.CounterVec
	policyVersion, learnerPending            prometheus.Gauge
	discardShare, learnerWait                prometheus.Gauge
	outstanding, window                      prometheus.Gauge

	sys      atomic.Pointer[actors.System]
	runner   atomic.Pointer[train.RemoteRunner]
	now      func() time.Time
	episodes atomic.Uint64 // m.Episodes' count, for the rate

	mu                                  sync.Mutex // guards the fields below (one scrape at a time)
	completed, reissued, updates, stale uint64
	lastFlow                            actors.LearnerStats
	failed, loads                       int64
	rateAt                              time.Time
	rateEpisodes                        uint64
	rateWindow                          time.Duration
}

// newMetrics registers the metrics labelled node=name. Errors are
// *fielderr.Error (Field "TelemetryName").
func newMetrics(name string) (*metrics, error) {
	m, err := telemetry.NewMetrics(map[string]string{"node": name})
	if err != nil {
		return nil, settingError("TelemetryName", name, err)
	}
	counter := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	gauge := func(name, help string) prometheus.Gauge {
		return prometheus.NewGauge(prometheus.GaugeOpts{Name: name, Help: help})
	}
	nm := &metrics{m: m, now: time.Now, rateWindow: time.Second,
		rolloutUnits:   counter(MetricRolloutUnits, "Work units this node's rollouts ran."),
		rolloutFailed:  counter(MetricRolloutFailed, "Work units this node's rollouts failed (the coordinator re-issues them)."),
		policyLoads:    counter(MetricPolicyLoads, "Policy versions this rollout node loaded from Redis."),
		learnerStale:   counter(MetricLearnerStale, "Groups the learner found stale (older than the staleness bound K), kept or not."),
		lateKept:       counter(MetricLateKept, "Stale groups the learner kept (at most the keep bound old), corrected by truncated importance weights."),
		policyVersion:  gauge(MetricPolicyVersion, "Policy version: the learner's (coordinator) or the one the latest unit played (rollout node)."),
		learnerPending: gauge(MetricLearnerPending, "Groups waiting for the learner's next batch."),
		discardShare:   gauge(MetricDiscardShare, "Share of the groups that reached the learner which it discarded (any reason)."),
		learnerWait:    gauge(MetricLearnerWait, "Seconds queued work units waited for the learner while rollouts had free slots (cumulative)."),
		outstanding:    gauge(MetricOutstanding, "Groups issued to rollouts and not yet used or discarded by the learner."),
		window:         gauge(MetricDispatchWindow, "Most groups the coordinator lets be outstanding: (max lag + 1) x learner batch; 0 when dispatch is not paced."),
		discarded: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricDiscarded,
			Help: "Groups the learner discarded, by reason: stale (older than the keep bound), late_stage (their stage was over), duplicate (a re-issued unit's second copy)."},
			[]string{"reason"}),
		gossipLog: prometheus.NewCounterVec(prometheus.CounterOpts{Name: MetricGossipLogLines,
			Help: "Warnings and errors of the gossip layer (junk or foreign packets at the gossip port, failed probes), logged or left out of the log by its rate limit."},
			[]string{"level"}),
	}
	if err := m.Register(nm.rolloutUnits, nm.rolloutFailed, nm.policyLoads, nm.learnerStale, nm.lateKept,
		nm.policyVersion, nm.learnerPending, nm.discardShare, nm.learnerWait, nm.outstanding, nm.window, nm.discarded, nm.gossipLog); err != nil {
		return nil, err
	}
	for _, reason := range []string{discardStale, discardLateStage, discardDuplicate} {
		nm.discarded.WithLabelValues(reason) // every reason shows, at 0 until it happens
	}
	for _, level := range []string{"warn", "error"} {
		nm.gossipLog.WithLabelValues(level)
	}
	return nm, nil
}

// gossipLogLine counts a warning or error of the gossip layer (cluster.Config.OnLogLine).
func (nm *metrics) gossipLogLine(level string) {
	if level == "warn" || level == "error" {
		nm.gossipLog.WithLabelValues(level).Inc()
	}
}

// attach makes the scrapes read the run's actor system.
func (nm *metrics) attach(sys *actors.System) { nm.sys.Store(sys) }

// attachRunner makes the scrapes read a rollout process's runner.
func (nm *metrics) attachRunner(r *train.RemoteRunner) { nm.runner.Store(r) }

// state is train.Options.OnState.
func (nm *metrics) state(s store.RunState) {
	nm.m.Stage.Set(float64(s.Stage))
	nm.policyVersion.Set(float64(s.PolicyVersion))
}

func unitEpisodes(r store.UnitResult) uint64 {
	var n int64
	for _, c := range r.Buckets {
		n += c.Episodes
	}
	return uint64(max(n, 0))
}

// addEpisodes counts n finished episodes.
func (nm *metrics) addEpisodes(n uint64) {
	nm.episodes.Add(n)
	nm.m.Episodes.Add(float64(n))
}

// unit sees a unit this process's rollouts ran: train.Options.OnUnit in the
// run's process, the RemoteRunner's report on a rollout node.
func (nm *metrics) unit(u train.UnitLog) {
	nm.addEpisodes(unitEpisodes(u.Result))
	nm.rolloutUnits.Inc()
	nm.m.PolicyLag.Set(float64(u.Lag))
	nm.m.Stage.Set(float64(u.Result.Stage))
	nm.policyVersion.Set(float64(u.PolicyVersion))
}

// sync brings the counters read from the actor system and the runner up
// to date and measures the episode rate.
func (nm *metrics) sync() {
	nm.mu.Lock()
	defer nm.mu.Unlock()
	up := func(c prometheus.Counter, last *uint64, cur uint64) {
		if cur > *last {
			c.Add(float64(cur - *last))
			*last = cur
		}
	}
	if sys := nm.sys.Load(); sys != nil {
		st := sys.Stats()
		up(nm.m.WorkUnits, &nm.completed, st.Coordinator.Completed)
		up(nm.m.LeaseReissues, &nm.reissued, st.Coordinator.Reissued)
		up(nm.m.LearnerUpdates, &nm.updates, st.Learner.Updates)
		up(nm.learnerStale, &nm.stale, st.Learner.Stale)
		l, last := st.Learner, &nm.lastFlow
		up(nm.lateKept, &last.LateKept, l.LateKept)
		up(nm.discarded.WithLabelValues(discardStale), &last.DiscardedStale, l.DiscardedStale)
		up(nm.discarded.WithLabelValues(discardLateStage), &last.DiscardedLateStage, l.DiscardedLateStage)
		up(nm.discarded.WithLabelValues(discardDuplicate), &last.DiscardedDuplicate, l.DiscardedDuplicate)
		nm.discardShare.Set(l.DiscardShare())
		nm.learnerWait.Set(st.Coordinator.LearnerWait.Seconds())
		nm.outstanding.Set(float64(st.Coordinator.Outstanding))
		nm.window.Set(float64(st.Coordinator.Window))
		nm.learnerPending.Set(float64(st.Learner.Pending))
		nm.m.QueueDepth.Set(float64(st.Coordinator.Queued))
		nm.policyVersion.Set(float64(st.Learner.Version))
	}
	if r := nm.runner.Load(); r != nil {
		st := r.Stats()
		if st.Failed > nm.failed {
			nm.rolloutFailed.Add(float64(st.Failed - nm.failed))
			nm.failed = st.Failed
		}
		if st.PolicyLoads > nm.loads {
			nm.policyLoads.Add(float64(st.PolicyLoads - nm.loads))
			nm.loads = st.PolicyLoads
		}
	}
	now, eps := nm.now(), nm.episodes.Load()
	switch {
	case nm.rateAt.IsZero():
		nm.rateAt, nm.rateEpisodes = now, eps
	case now.Sub(nm.rateAt) >= nm.rateWindow:
		nm.m.EpisodesPerSecond.Set(float64(eps-nm.rateEpisodes) / now.Sub(nm.rateAt).Seconds())
		nm.rateAt, nm.rateEpisodes = now, eps
	}
}

// handler serves the metrics (telemetry.Metrics.Handler), synced first.
func (nm *metrics) handler() http.Handler {
	h := nm.m.Handler()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		nm.sync()
		h.ServeHTTP(w, r)
	})
}

// newMux routes /metrics to nm and everything else to h.
func newMux(h *health, nm *metrics) *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("/metrics", nm.handler())
	mux.Handle("/", h)
	return mux
}

// ReadOnly answers every method but GET and HEAD with 405: the node's endpoints (/healthz,
// /readyz, /metrics, /ui, /api/status) only report.
func ReadOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// ListenAndServe serves h on addr (ReadOnly) and prints "<prefix>http=<address>" to
// out; the returned func stops the server. A listen error is an
// *fielderr.Error (Field "HTTPAddr").
func ListenAndServe(addr string, h http.Handler, out io.Writer, prefix string) (func(), error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, settingError("HTTPAddr", addr, err)
	}
	srv := &http.Server{Handler: ReadOnly(h), ReadHeaderTimeout: 5 * time.Second}
	go srv.Serve(ln)
	fmt.Fprintf(out, "%shttp=%s\n", prefix, ln.Addr())
	return func() { srv.Close() }, nil
}

// ServeUntil serves h on addr as ListenAndServe does (its line prefixed
// with prefix) until ctx ends, then stops the server. Its error is
// ListenAndServe's.
func ServeUntil(ctx context.Context, addr string, h http.Handler, out io.Writer, prefix string) error {
	stop, err := ListenAndServe(addr, h, out, prefix)
	if err != nil {
		return err
	}
	defer stop()
	<-ctx.Done()
	return nil
}

// ServeRun serves a one-process run's RunHandler (named node, with the
// live page dash) on addr as ListenAndServe does (its line prefixed with
// prefix), hooking it into opt and into st's Redis commands; the returned
// func stops the server.
func ServeRun(addr, node string, opt *train.Options, st *store.Store, dash *Dashboard, out io.Writer, prefix string) (func(), error) {
	h, err := RunHandler(node, opt, dash)
	if err != nil {
		return nil, err
	}
	st.Observe(opt.Metrics.ObserveRedis)
	return ListenAndServe(addr, h, out, prefix)
}

// RunHandler serves a one-process run's /healthz, /readyz (ready while
// the stages run), /metrics (labelled node=telemetryName) and, with dash,
// the live page. It hooks itself into opt: OnState, OnUnit, OnFlow and
// Cluster.Started are replaced. A bad telemetryName is a *fielderr.Error.
func RunHandler(telemetryName string, opt *train.Options, dash *Dashboard) (http.Handler, error) {
	nm, err := newMetrics(telemetryName)
	if err != nil {
		return nil, err
	}
	h := &health{}
	h.set(false, "starting")
	opt.OnState = func(s store.RunState) {
		nm.state(s)
		switch s.Phase {
		case train.PhaseDone, train.PhaseFailed, train.PhaseInterrupted:
			h.set(false, s.Phase)
		}
	}
	opt.OnUnit = nm.unit
	opt.NodeName = telemetryName // the record's node is the page's and the metrics'
	if dash != nil {
		dash.local(telemetryName)
		opt.OnUnit = func(u train.UnitLog) {
			nm.unit(u)
			dash.onUnit(u.Lag)
		}
	}
	opt.Metrics = nm.m
	if dash != nil {
		opt.OnFlow = dash.onFlow
	}
	opt.Cluster.Started = func(sys *actors.System) error {
		nm.attach(sys)
		if dash != nil {
			dash.attach(sys)
		}
		h.set(true, "running")
		return nil
	}
	mux := newMux(h, nm)
	if dash != nil {
		dash.register(mux)
	}
	return mux, nil
}
