package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/testutil"
	"github.com/t2t-lab/t2t/train"
)

// metricsParse reads the t2t_ samples of a Prometheus text page into name
// → value, checking that every one carries the node label want. A sample
// with other labels too is stored as name{label="value",...} (node left
// out, the others in page order); go_, process_ and other samples are
// skipped.
func metricsParse(t *testing.T, body, node string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	nodeLabel := fmt.Sprintf("node=%q", node)
	for _, l := range strings.Split(body, "\n") {
		if !strings.HasPrefix(l, "t2t_") {
			continue
		}
		name, rest, ok := strings.Cut(l, "{")
		if !ok {
			t.Fatalf("sample without labels: %q", l)
		}
		labels, val, ok := strings.Cut(rest, "} ")
		var others []string
		for _, lv := range strings.Split(labels, ",") {
			if lv != nodeLabel {
				others = append(others, lv)
			}
		}
		if !ok || len(others) == len(strings.Split(labels, ",")) {
			t.Fatalf("sample %q: labels %q, want node=%q", l, labels, node)
		}
		if len(others) > 0 {
			name += "{" + strings.Join(others, ",") + "}"
		}
		v, err := strconv.ParseFloat(val, 64)
		if err != nil {
			t.Fatalf("sample %q: %v", l, err)
		}
		out[name] = v
	}
	return out
}

// metricsRuntimeCheck scrapes url over HTTP and checks the page for the
// line prefix bucket (a histogram's _bucket series), the Go runtime
// collector and the process collector.
func metricsRuntimeCheck(t *testing.T, url, bucket string) {
	t.Helper()
	code, body := httpStatus(t, url)
	for _, want := range []string{"\n" + bucket, "\ngo_goroutines ", "\ngo_memstats_alloc_bytes ", "\nprocess_cpu_seconds_total ", "\nprocess_open_fds "} {
		if code != 200 || !strings.Contains(body, want) {
			t.Errorf("GET %s: %d, no line %q", url, code, strings.TrimPrefix(want, "\n"))
		}
	}
}

// metricsGet is a GET that reports instead of failing the test (for
// goroutines other than the test's).
func metricsGet(url string) (int, string, string) {
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return 0, "", err.Error()
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return resp.StatusCode, "", err.Error()
	}
	return resp.StatusCode, string(b), ""
}

func metricsScrape(t *testing.T, url, node string) map[string]float64 {
	t.Helper()
	code, body := httpStatus(t, url)
	if code != 200 {
		t.Fatalf("GET %s: %d %s", url, code, body)
	}
	return metricsParse(t, body, node)
}

// evalSize is the instances and units of the evaluation after each stage
// of a run with opt: the validation set and the benchmark suite, one
// greedy episode per instance.
func evalSize(opt train.Options) (episodes, units int) {
	opt.SetDefaults()
	for _, spec := range []env.SuiteSpec{env.ValidationSpec(opt.SuiteSeed, opt.ValPerSize), env.PaperEvalSpec(opt.SuiteSeed, opt.EvalPerSize)} {
		episodes += spec.Len()
		units += (spec.Len() + opt.InstancesPerUnit - 1) / opt.InstancesPerUnit
	}
	return episodes, units
}

// TestTrainMetricsHTTP runs a scripted run with t2t train's HTTP endpoints
// and scrapes /metrics over HTTP while stage 0 is being evaluated and after
// the run: the counters equal what the run did.
func TestTrainMetricsHTTP(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	const stages, instances, group, perUnit = 2, 40, 4, 8
	cfg := env.DefaultLocalConfig()
	cfg.Instances = instances
	opt := train.Options{RunID: "metrics", Stages: stages, Seed: 3, Config: cfg, InstancesPerUnit: perUnit, GroupSize: group,
		LearnerBatch: 2, ValPerSize: 1, EvalPerSize: 1}
	var out testutil.SyncBuffer
	stop, err := daemon.ServeRun("127.0.0.1:0", "test-node", &opt, st, daemon.NewDashboard(st, nil, opt.RunID, nil), &out, "t2t train: ")
	if err != nil {
		t.Fatal(err)
	}
	defer stop()
	base := "http://" + nodeField(t, strings.TrimSpace(out.String()), "http")
	if code, _ := httpStatus(t, base+"/readyz"); code != 503 {
		t.Fatalf("/readyz before the run: %d, want 503", code)
	}
	if code, _ := httpStatus(t, base+"/healthz"); code != 200 {
		t.Fatalf("/healthz: %d", code)
	}
	// The scrape during the run happens on the engineer's goroutine (the
	// hook); its checks run here.
	var (
		scraped           bool
		midBody, midErr   string
		midCode, midReady int
	)
	onState := opt.OnState
	opt.OnState = func(s store.RunState) {
		onState(s)
		if s.Phase == train.PhaseEvaluating && s.Stage == 0 && !scraped {
			scraped = true
			midCode, midBody, midErr = metricsGet(base + "/metrics")
			midReady, _, _ = metricsGet(base + "/readyz")
		}
	}
	res, err := train.Run(context.Background(), opt, &train.ScriptedPolicy{MistakeRate: 0.1}, st)
	if err != nil {
		t.Fatal(err)
	}
	units := (instances + perUnit - 1) / perUnit
	evalEpisodes, evalUnits := evalSize(opt)
	if !scraped || midCode != 200 || midErr != "" {
		t.Fatalf("scrape during the run: scraped %v, %d %s %s", scraped, midCode, midErr, midBody)
	}
	if midReady != 200 {
		t.Fatalf("/readyz during the run: %d", midReady)
	}
	mid := metricsParse(t, midBody, "test-node")
	if mid[telemetry.MetricStage] != 0 || mid[telemetry.MetricWorkUnits] != float64(units) ||
		mid[telemetry.MetricEpisodes] != instances*group || mid[daemon.MetricRolloutUnits] != float64(units) {
		t.Fatalf("metrics after stage 0: %v", mid)
	}
	end := metricsScrape(t, base+"/metrics", "test-node")
	rep := res.Actors
	for name, want := range map[string]float64{
		telemetry.MetricStage:                            stages - 1,
		telemetry.MetricWorkUnits:                        float64(rep.Coordinator.Completed),
		telemetry.MetricLeaseReissues:                    float64(rep.Coordinator.Reissued),
		telemetry.MetricLearnerUpdates:                   float64(rep.Learner.Updates),
		telemetry.MetricEpisodes:                         float64(stages * (instances*group + evalEpisodes)),
		daemon.MetricRolloutUnits:                        float64(stages * (units + evalUnits)),
		daemon.MetricPolicyVersion:                       float64(res.Stages[stages-1].Policy),
		daemon.MetricLearnerStale:                        float64(rep.Learner.Stale),
		daemon.MetricLateKept:                            float64(rep.Learner.LateKept),
		daemon.MetricDiscarded + `{reason="stale"}`:      float64(rep.Learner.DiscardedStale),
		daemon.MetricDiscarded + `{reason="late_stage"}`: float64(rep.Learner.DiscardedLateStage),
		daemon.MetricDiscarded + `{reason="duplicate"}`:  float64(rep.Learner.DiscardedDuplicate),
		daemon.MetricDiscardShare:                        rep.Learner.DiscardShare(),
		daemon.MetricDispatchWindow:                      float64(rep.Coordinator.Window),
	} {
		if end[name] != want {
			t.Errorf("%s = %v after the run, want %v", name, end[name], want)
		}
	}
	if rep.Coordinator.Completed != uint64(stages*(units+evalUnits)) || rep.Learner.Updates == 0 {
		t.Fatalf("the run did not do what it should: %+v", rep)
	}
	// The histograms: one observation per unit, update and proposal.
	for name, want := range map[string]float64{
		telemetry.MetricUnitSeconds:            float64(stages * (units + evalUnits)),
		telemetry.MetricLearnerStepSeconds:     float64(rep.Learner.Updates),
		telemetry.MetricEngineerProposeSeconds: stages - 1,
	} {
		if end[name+"_count"] != want || end[name+`_bucket{le="+Inf"}`] != want || end[name+"_sum"] <= 0 {
			t.Errorf("%s: count %v, +Inf bucket %v, sum %v; want %v observations", name,
				end[name+"_count"], end[name+`_bucket{le="+Inf"}`], end[name+"_sum"], want)
		}
	}
	var redisOps float64 // the store's commands, timed per command
	for k, v := range end {
		if strings.HasPrefix(k, telemetry.MetricRedisSeconds+"_count{") {
			redisOps += v
		}
	}
	if redisOps == 0 {
		t.Errorf("no %s observations: the store's Redis commands are not timed", telemetry.MetricRedisSeconds)
	}
	if _, ok := end[daemon.MetricLearnerWait]; !ok || rep.Coordinator.Window == 0 {
		t.Errorf("no %s, or dispatch not paced (window %d)", daemon.MetricLearnerWait, rep.Coordinator.Window)
	}
	if code, body := httpStatus(t, base+"/readyz"); code != 503 || !strings.Contains(body, train.PhaseDone) {
		t.Fatalf("/readyz after the run: %d %s", code, body)
	}
	t.Run("dashboard", func(t *testing.T) { dashboardCheck(t, base, stages) })
}

// dashboardCheck reads the live page's data over HTTP and renders the page
// in headless Chromium: the script must have filled the stage table and
// drawn the learning curves from /api/status.
func dashboardCheck(t *testing.T, base string, stages int) {
	code, body := httpStatus(t, base+"/api/status")
	if code != 200 {
		t.Fatalf("/api/status: %d %s", code, body)
	}
	var st struct {
		Run    string `json:"run"`
		Stages []struct {
			Stage int `json:"stage"`
			Val   struct {
				Episodes int64 `json:"episodes"`
			} `json:"val"`
		} `json:"stages"`
	}
	if err := json.Unmarshal([]byte(body), &st); err != nil || st.Run != "metrics" || len(st.Stages) != stages || st.Stages[stages-1].Val.Episodes == 0 {
		t.Fatalf("/api/status: %v %s", err, body)
	}
	if code, page := httpStatus(t, base+"/ui"); code != 200 || !strings.Contains(page, "/api/status") || strings.Contains(page, "http://") && !strings.Contains(page, "http://www.w3.org/2000/svg") {
		t.Fatalf("/ui: %d, or it references external assets", code)
	}
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("T2T_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium not found and T2T_REQUIRE_CHROMIUM=1 (apt-get install -y chromium)")
		}
		t.Skip("chromium not found: skipping the live page check (apt-get install -y chromium; T2T_REQUIRE_CHROMIUM=1 makes this a failure)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir="+t.TempDir(),
		"--virtual-time-budget=5000", "--dump-dom", base+"/ui")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	dom := stdout.String()
	if !strings.Contains(dom, "<polyline") || strings.Count(dom, "<tr>") < stages+2 || !strings.Contains(dom, "phase "+train.PhaseDone) {
		t.Fatalf("the live page did not render the run:\n%.3000s", dom)
	}
	// The learner's flow: the run's line and each stage's updates and
	// discarded groups.
	if !strings.Contains(dom, "groups arrived") || !strings.Contains(dom, "for the learner (max policy lag 2, staleness K 4)") || !strings.Contains(dom, `<p id="warn"></p>`) {
		t.Fatalf("the live page did not render the flow:\n%.3000s", dom)
	}
}

// TestNodeMetricsRollout runs a coordinator node and one rollout node
// (processes, real Redis) and scrapes both nodes' /metrics over HTTP: the
// coordinator's while it runs, the rollout node's after the run (it waits
// for the next coordinator), where every episode and unit of the run was
// played.
func TestNodeMetricsRollout(t *testing.T) {
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	const stages, instances, perUnit, group = 2, 96, 8, 4
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0",
		"--http", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer", "--name", "coord",
		"--policy", "scripted", "--stages", strconv.Itoa(stages), "--instances", strconv.Itoa(instances),
		"--instances-per-unit", strconv.Itoa(perUnit), "--group", strconv.Itoa(group), "--val-per-size", "1", "--eval-per-size", "1",
		"--run-id", "metrics-node", "--summary", filepath.Join(dir, "a.json")}, common...)...)
	aHTTP := nodeField(t, a.line("t2t node: http=", 30*time.Second), "http")
	gossipA := nodeField(t, a.line("t2t node: joined ", 60*time.Second), "gossip")
	am := metricsScrape(t, "http://"+aHTTP+"/metrics", "coord")
	if _, ok := am[telemetry.MetricWorkUnits]; !ok {
		t.Fatalf("coordinator metrics lack %s: %v", telemetry.MetricWorkUnits, am)
	}
	// Open's PING at least went through the store's Redis hook.
	metricsRuntimeCheck(t, "http://"+aHTTP+"/metrics", telemetry.MetricRedisSeconds+`_bucket{command="ping",node="coord",le="+Inf"} `)
	b := startNode(t, "B", append([]string{"node", "--roles", "rollout", "--keep", "--name", "roll-b", "--join", gossipA, "--capacity", "2"}, common...)...)
	bHTTP := nodeField(t, b.line("t2t node: http=", 30*time.Second), "http")
	if code := a.wait(90 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	units := (instances + perUnit - 1) / perUnit
	evalEpisodes, evalUnits := evalSize(train.Options{InstancesPerUnit: perUnit, ValPerSize: 1, EvalPerSize: 1})
	bm := metricsScrape(t, "http://"+bHTTP+"/metrics", "roll-b")
	for name, want := range map[string]float64{
		telemetry.MetricEpisodes:   float64(stages * (instances*group + evalEpisodes)),
		daemon.MetricRolloutUnits:  float64(stages * (units + evalUnits)),
		telemetry.MetricStage:      stages - 1,
		daemon.MetricRolloutFailed: 0,
	} {
		if bm[name] != want {
			t.Errorf("rollout node: %s = %v, want %v", name, bm[name], want)
		}
	}
	if bm[daemon.MetricPolicyLoads] < 1 {
		t.Errorf("rollout node loaded no policy: %v", bm)
	}
	if n := bm[telemetry.MetricUnitSeconds+`_bucket{le="+Inf"}`]; n != float64(stages*(units+evalUnits)) {
		t.Errorf("rollout node: %v units in %s, want %d", n, telemetry.MetricUnitSeconds, stages*(units+evalUnits))
	}
	if bm[telemetry.MetricRedisSeconds+`_count{command="evalsha"}`] < float64(stages*(units+evalUnits)) {
		t.Errorf("rollout node: fewer EVALSHA in %s than units recorded: %v", telemetry.MetricRedisSeconds, bm)
	}
	metricsRuntimeCheck(t, "http://"+bHTTP+"/metrics", telemetry.MetricUnitSeconds+`_bucket{node="roll-b",le="500"} `)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil { // --keep: it must still run
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("B exited with %d", code)
	}
}
