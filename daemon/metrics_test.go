package daemon

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/train"
)

// TestMetricsPage pins /metrics of a process that ran units remotely and
// locally and saw the run's state: every name, help text and label, the
// discard reasons at 0, the episode rate over an injected clock's window.
// (The page was taken from the code before it moved out of cmd/t2t.)
func TestMetricsPage(t *testing.T) {
	t.Parallel()
	u := testUnitLog("u")
	nm, err := newMetrics("test-node")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1000, 0)
	nm.now = func() time.Time { return now }
	nm.attachRunner(train.NewRemoteRunner(nil, nil, "cpu", nil, nil))
	scrape := func() string {
		w := httptest.NewRecorder()
		newMux(&health{}, nm).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
		return w.Body.String()
	}
	nm.unit(u)
	scrape() // starts the rate window at 12 episodes
	nm.unit(u)
	nm.unit(u)
	nm.state(store.RunState{Stage: 3, PolicyVersion: 11})
	nm.gossipLogLine("error")
	nm.gossipLogLine("info") // not counted: only warnings and errors
	now = now.Add(2 * time.Second)
	if got := counterAndGaugeLines(scrape()); got != metricsPage {
		t.Fatalf("/metrics:\n%s\nwant:\n%s", got, metricsPage)
	}
}

// counterAndGaugeLines keeps the lines of page's t2t_ counters and gauges
// (not the histograms, nor the go_ and process_ collectors).
func counterAndGaugeLines(page string) string {
	keep := map[string]bool{}
	for _, l := range strings.Split(page, "\n") {
		if f := strings.Fields(l); len(f) == 4 && f[1] == "TYPE" && strings.HasPrefix(f[2], "t2t_") && f[3] != "histogram" {
			keep[f[2]] = true
		}
	}
	var b strings.Builder
	for _, l := range strings.Split(page, "\n") {
		name := l
		if f := strings.Fields(l); len(f) >= 3 && f[0] == "#" {
			name = f[2]
		} else if i := strings.IndexAny(l, "{ "); i >= 0 {
			name = l[:i]
		}
		if keep[name] {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

const metricsPage = `# HELP t2t_dispatch_outstanding_groups Groups issued to rollouts and not yet used or discarded by the learner.
# TYPE t2t_dispatch_outstanding_groups gauge
t2t_dispatch_outstanding_groups{node="test-node"} 0
# HELP t2t_dispatch_window_groups Most groups the coordinator lets be outstanding: (max lag + 1) x learner batch; 0 when dispatch is not paced.
# TYPE t2t_dispatch_window_groups gauge
t2t_dispatch_window_groups{node="test-node"} 0
# HELP t2t_episodes_per_second Episodes per second over the last measured window.
# TYPE t2t_episodes_per_second gauge
t2t_episodes_per_second{node="test-node"} 12
# HELP t2t_episodes_total Episodes finished (one sampled plan verified).
# TYPE t2t_episodes_total counter
t2t_episodes_total{node="test-node"} 36
# HELP t2t_gossip_log_lines_total Warnings and errors of the gossip layer (junk or foreign packets at the gossip port, failed probes), logged or left out of the log by its rate limit.
# TYPE t2t_gossip_log_lines_total counter
t2t_gossip_log_lines_total{level="error",node="test-node"} 1
t2t_gossip_log_lines_total{level="warn",node="test-node"} 0
# HELP t2t_learner_discarded_groups_total Groups the learner discarded, by reason: stale (older than the keep bound), late_stage (their stage was over), duplicate (a re-issued unit's second copy).
# TYPE t2t_learner_discarded_groups_total counter
t2t_learner_discarded_groups_total{node="test-node",reason="duplicate"} 0
t2t_learner_discarded_groups_total{node="test-node",reason="late_stage"} 0
t2t_learner_discarded_groups_total{node="test-node",reason="stale"} 0
# HELP t2t_learner_discarded_share Share of the groups that reached the learner which it discarded (any reason).
# TYPE t2t_learner_discarded_share gauge
t2t_learner_discarded_share{node="test-node"} 0
# HELP t2t_learner_late_kept_groups_total Stale groups the learner kept (at most the keep bound old), corrected by truncated importance weights.
# TYPE t2t_learner_late_kept_groups_total counter
t2t_learner_late_kept_groups_total{node="test-node"} 0
# HELP t2t_learner_pending_groups Groups waiting for the learner's next batch.
# TYPE t2t_learner_pending_groups gauge
t2t_learner_pending_groups{node="test-node"} 0
# HELP t2t_learner_stale_groups_total Groups the learner found stale (older than the staleness bound K), kept or not.
# TYPE t2t_learner_stale_groups_total counter
t2t_learner_stale_groups_total{node="test-node"} 0
# HELP t2t_learner_updates_total Learner updates applied.
# TYPE t2t_learner_updates_total counter
t2t_learner_updates_total{node="test-node"} 0
# HELP t2t_learner_wait_seconds Seconds queued work units waited for the learner while rollouts had free slots (cumulative).
# TYPE t2t_learner_wait_seconds gauge
t2t_learner_wait_seconds{node="test-node"} 0
# HELP t2t_lease_reissues_total Work units re-issued after their lease expired.
# TYPE t2t_lease_reissues_total counter
t2t_lease_reissues_total{node="test-node"} 0
# HELP t2t_policy_lag_versions Policy lag of the latest samples, in versions.
# TYPE t2t_policy_lag_versions gauge
t2t_policy_lag_versions{node="test-node"} 2
# HELP t2t_policy_loads_total Policy versions this rollout node loaded from Redis.
# TYPE t2t_policy_loads_total counter
t2t_policy_loads_total{node="test-node"} 0
# HELP t2t_policy_version Policy version: the learner's (coordinator) or the one the latest unit played (rollout node).
# TYPE t2t_policy_version gauge
t2t_policy_version{node="test-node"} 11
# HELP t2t_rollout_units_failed_total Work units this node's rollouts failed (the coordinator re-issues them).
# TYPE t2t_rollout_units_failed_total counter
t2t_rollout_units_failed_total{node="test-node"} 0
# HELP t2t_rollout_units_total Work units this node's rollouts ran.
# TYPE t2t_rollout_units_total counter
t2t_rollout_units_total{node="test-node"} 3
# HELP t2t_stage Current stage index.
# TYPE t2t_stage gauge
t2t_stage{node="test-node"} 3
# HELP t2t_work_queue_depth Work units waiting for a rollout.
# TYPE t2t_work_queue_depth gauge
t2t_work_queue_depth{node="test-node"} 0
# HELP t2t_work_units_total Work units completed (first result per unit).
# TYPE t2t_work_units_total counter
t2t_work_units_total{node="test-node"} 0
`

// TestRunHandler: a one-process run's endpoints follow the hooks it puts
// into the run's options: ready once the actor system started, not ready
// with the final phase when the run ends; the live page is served.
func TestRunHandler(t *testing.T) {
	t.Parallel()
	var opt train.Options
	dash := NewDashboard(testStatusStore(t), nil, "r7", nil)
	h, err := RunHandler("n1", &opt, dash)
	if err != nil {
		t.Fatal(err)
	}
	if opt.OnState == nil || opt.OnUnit == nil || opt.OnFlow == nil || opt.Cluster.Started == nil {
		t.Fatalf("hooks not set: %+v", opt)
	}
	if opt.NodeName != "n1" {
		t.Fatalf("NodeName %q: the run's nodes record would not name the node as its page and metrics do", opt.NodeName)
	}
	get := func(path string) (int, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String()
	}
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, `"starting"`) {
		t.Fatalf("/readyz before the run: %d %s", code, body)
	}
	if err := opt.Cluster.Started(nil); err != nil {
		t.Fatal(err)
	}
	if code, body := get("/readyz"); code != 200 || !strings.Contains(body, `"running"`) {
		t.Fatalf("/readyz while running: %d %s", code, body)
	}
	opt.OnState(store.RunState{Stage: 1, PolicyVersion: 4, Phase: train.PhaseEvaluating})
	if code, _ := get("/readyz"); code != 200 {
		t.Fatalf("/readyz while evaluating: %d", code)
	}
	opt.OnState(store.RunState{Stage: 1, PolicyVersion: 4, Phase: train.PhaseDone})
	if code, body := get("/readyz"); code != 503 || !strings.Contains(body, `"state":"`+train.PhaseDone+`"`) {
		t.Fatalf("/readyz after the run: %d %s", code, body)
	}
	if code, body := get("/metrics"); code != 200 || !strings.Contains(body, "\nt2t_stage{node=\"n1\"} 1\n") || !strings.Contains(body, "\nt2t_policy_version{node=\"n1\"} 4\n") {
		t.Fatalf("/metrics: %d\n%s", code, body)
	}
	if code, _ := get("/api/status"); code != 200 {
		t.Fatalf("/api/status: %d", code)
	}
	if code, _ := get("/ui"); code != 200 {
		t.Fatalf("/ui: %d", code)
	}
}

// TestListenAndServe serves a handler, prints its address and stops; an
// address it cannot listen on is a *fielderr.Error naming HTTPAddr.
func TestListenAndServe(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	stop, err := ListenAndServe("127.0.0.1:0", &health{}, &out, "t2t test: ")
	if err != nil {
		t.Fatal(err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(out.String()), "t2t test: http=")
	if !ok {
		t.Fatalf("printed %q", out.String())
	}
	if code := getStatus(t, "http://"+addr+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	stop()
	_, err = ListenAndServe("127.0.0.1:bad", &health{}, &out, "")
	var ie *fielderr.Error
	if !errors.As(err, &ie) || ie.Field != "HTTPAddr" || ie.Value != "127.0.0.1:bad" {
		t.Fatalf("bad address: %v", err)
	}
}
