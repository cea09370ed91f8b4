package telemetry_test

import (
	"context"
	"errors"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

func metGet(t *testing.T, url string) (string, *http.Response) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp
}

func TestRegistryTextOverHTTP(t *testing.T) {
	t.Parallel()
	reg, err := telemetry.NewRegistry(map[string]string{"node": `r"1\` + "\n", "az": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	c, err := reg.Counter("t2t_things_total", "Things.\nSecond line \\ backslash.")
	if err != nil {
		t.Fatal(err)
	}
	g, err := reg.Gauge("t2t_depth", "")
	if err != nil {
		t.Fatal(err)
	}
	inf, _ := reg.Gauge("a_inf", "inf")
	c.Add(41)
	c.Inc()
	g.Set(2.5)
	g.Add(-1)
	inf.Set(math.Inf(-1))

	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	body, resp := metGet(t, srv.URL+"/metrics")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != telemetry.TextContentType {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	labels := `{az="eu",node="r\"1\\\n"}`
	want := "# HELP a_inf inf\n# TYPE a_inf gauge\na_inf" + labels + " -Inf\n" +
		"# TYPE t2t_depth gauge\nt2t_depth" + labels + " 1.5\n" +
		"# HELP t2t_things_total Things.\\nSecond line \\\\ backslash.\n# TYPE t2t_things_total counter\nt2t_things_total" + labels + " 42\n"
	if body != want {
		t.Errorf("body:\n%s\nwant:\n%s", body, want)
	}

	// Not GET/HEAD: 405. HEAD: headers, no body.
	resp, err = http.Post(srv.URL, "text/plain", strings.NewReader("x"))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST status %d", resp.StatusCode)
	}
	resp, err = http.Head(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(len(want)) {
		t.Errorf("HEAD status %d length %d", resp.StatusCode, resp.ContentLength)
	}
}

func TestRegistryErrors(t *testing.T) {
	t.Parallel()
	reg, err := telemetry.NewRegistry(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "1abc", "a-b", "a b", "é"} {
		if _, err := reg.Counter(bad, ""); !errors.Is(err, telemetry.ErrMetricName) {
			t.Errorf("Counter(%q) = %v, want ErrMetricName", bad, err)
		}
	}
	c1, _ := reg.Counter("x_total", "")
	c2, err := reg.Counter("x_total", "other help")
	if err != nil || c1 != c2 {
		t.Errorf("re-registering a counter: %v, same=%v", err, c1 == c2)
	}
	var me *telemetry.MetricError
	if _, err := reg.Gauge("x_total", ""); !errors.Is(err, telemetry.ErrMetricKind) || !errors.As(err, &me) || me.Name != "x_total" {
		t.Errorf("Gauge over a counter = %v", err)
	}
	for _, bad := range []string{"a:b", "__x", "1"} {
		if _, err := telemetry.NewRegistry(map[string]string{bad: "v"}); !errors.Is(err, telemetry.ErrMetricName) {
			t.Errorf("label %q: %v", bad, err)
		}
	}
}

// Concurrent updates are exact. Run under -race.
func TestRegistryConcurrent(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	const workers, per = 8, 1000
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for range per {
				m.Episodes.Inc()
				m.QueueDepth.Add(1)
				m.QueueDepth.Add(-0.5)
			}
		})
		wg.Go(func() {
			rec := httptest.NewRecorder()
			m.Registry.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if !strings.Contains(rec.Body.String(), telemetry.MetricEpisodes) {
				t.Error("scrape lacks episodes")
			}
		})
	}
	wg.Wait()
	if got := m.Episodes.Value(); got != workers*per {
		t.Errorf("episodes = %d, want %d", got, workers*per)
	}
	if got := m.QueueDepth.Value(); got != workers*per*0.5 {
		t.Errorf("queue depth = %v, want %v", got, workers*per*0.5)
	}
}

// The node's handler carries the standard metrics, labelled with the node.
func TestTelemetryMetricsHandler(t *testing.T) {
	t.Parallel()
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{NodeID: "coord"})
	if err != nil {
		t.Fatal(err)
	}
	m := tel.Metrics()
	m.Episodes.Add(7)
	m.LeaseReissues.Inc()
	m.PolicyLag.Set(1)
	m.QueueDepth.Set(12)
	m.EpisodesPerSecond.Set(3.5)
	srv := httptest.NewServer(tel.MetricsHandler())
	defer srv.Close()
	body, _ := metGet(t, srv.URL)
	for _, line := range []string{
		telemetry.MetricEpisodes + `{node="coord"} 7`,
		telemetry.MetricLeaseReissues + `{node="coord"} 1`,
		telemetry.MetricPolicyLag + `{node="coord"} 1`,
		telemetry.MetricQueueDepth + `{node="coord"} 12`,
		telemetry.MetricEpisodesPerSecond + `{node="coord"} 3.5`,
		telemetry.MetricWorkUnits + `{node="coord"} 0`,
		telemetry.MetricLearnerUpdates + `{node="coord"} 0`,
		telemetry.MetricStage + `{node="coord"} 0`,
		"# TYPE " + telemetry.MetricEpisodes + " counter",
		"# TYPE " + telemetry.MetricQueueDepth + " gauge",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, body)
		}
	}
}

func TestRegistryCounterVec(t *testing.T) {
	t.Parallel()
	reg, err := telemetry.NewRegistry(map[string]string{"node": "a"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := reg.CounterVec("t2t_dropped_total", "Dropped.", "reason")
	if err != nil {
		t.Fatal(err)
	}
	v.With("stale").Add(3)
	v.With(`du"p`).Inc()
	if again, err := reg.CounterVec("t2t_dropped_total", "", "reason"); err != nil || again != v {
		t.Fatalf("second registration: %v", err)
	}
	for _, bad := range []struct{ name, label string }{
		{"t2t_dropped_total", "other"}, // another label
		{"t2t_x_total", "node"},        // a constant label
		{"t2t_y_total", "__r"},
		{"t2t_z_total", "a:b"},
	} {
		if _, err := reg.CounterVec(bad.name, "", bad.label); err == nil {
			t.Errorf("CounterVec(%q, %q) accepted", bad.name, bad.label)
		}
	}
	if _, err := reg.Gauge("t2t_dropped_total", ""); !errors.Is(err, telemetry.ErrMetricKind) {
		t.Errorf("gauge over a vec: %v", err)
	}
	srv := httptest.NewServer(reg.Handler())
	defer srv.Close()
	body, _ := metGet(t, srv.URL)
	want := "# HELP t2t_dropped_total Dropped.\n# TYPE t2t_dropped_total counter\n" +
		`t2t_dropped_total{node="a",reason="du\"p"} 1` + "\n" +
		`t2t_dropped_total{node="a",reason="stale"} 3` + "\n"
	if body != want {
		t.Errorf("body:\n%s\nwant:\n%s", body, want)
	}
	bare, _ := telemetry.NewRegistry(nil)
	w, _ := bare.CounterVec("n_total", "", "r")
	w.With("x").Inc()
	srv2 := httptest.NewServer(bare.Handler())
	defer srv2.Close()
	if body, _ := metGet(t, srv2.URL); !strings.Contains(body, `n_total{r="x"} 1`) {
		t.Errorf("without constant labels: %s", body)
	}
}
