package telemetry_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	promtest "github.com/prometheus/client_golang/prometheus/testutil"
	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

// metGet GETs url with the Accept header accept ("" for none).
func metGet(t *testing.T, url, accept string) (string, *http.Response) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := http.DefaultClient.Do(req)
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

// spanContext is a sampled (or not) remote span context with fixed ids.
func spanContext(t *testing.T, sampled bool) trace.SpanContext {
	t.Helper()
	tid, err := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	if err != nil {
		t.Fatal(err)
	}
	sid, err := trace.SpanIDFromHex("00f067aa0ba902b7")
	if err != nil {
		t.Fatal(err)
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true})
}

// TestMetricsOverHTTP scrapes a registry over HTTP in both formats: the
// standard counters and gauges with escaped constant labels, every
// histogram's _bucket series, the Go and process collectors, and (in
// OpenMetrics only) the exemplar of an observation made in a sampled span.
func TestMetricsOverHTTP(t *testing.T) {
	t.Parallel()
	m, err := telemetry.NewMetrics(map[string]string{"node": `r"1\` + "\n", "az": "eu"})
	if err != nil {
		t.Fatal(err)
	}
	m.Episodes.Add(41)
	m.Episodes.Inc()
	m.QueueDepth.Set(2.5)
	m.QueueDepth.Add(-1)
	sampled := spanContext(t, true)
	m.ObserveUnit(300*time.Millisecond, sampled)
	m.ObserveUnit(2*time.Second, spanContext(t, false))
	m.ObserveLearnerStep(40*time.Millisecond, trace.SpanContext{})
	m.ObserveEngineerPropose(time.Millisecond, sampled)
	m.ObserveRedis(trace.ContextWithSpanContext(context.Background(), sampled), "evalsha", 300*time.Microsecond)
	m.ObserveRedis(context.Background(), "pipeline", time.Millisecond)

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	body, resp := metGet(t, srv.URL+"/metrics", "")
	if ct := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("status %d, content-type %q", resp.StatusCode, ct)
	}
	labels := `az="eu",node="r\"1\\\n"`
	for _, want := range []string{
		"# TYPE t2t_episodes_total counter\nt2t_episodes_total{" + labels + "} 42\n",
		"t2t_work_queue_depth{" + labels + "} 1.5\n",
		"# TYPE t2t_work_unit_duration_seconds histogram\n",
		"t2t_work_unit_duration_seconds_bucket{" + labels + `,le="0.5"} 1` + "\n",
		"t2t_work_unit_duration_seconds_bucket{" + labels + `,le="+Inf"} 2` + "\n",
		"t2t_work_unit_duration_seconds_count{" + labels + "} 2\n",
		"t2t_learner_step_duration_seconds_count{" + labels + "} 1\n",
		"t2t_engineer_propose_duration_seconds_bucket{" + labels + `,le="0.001"} 1` + "\n",
		`t2t_redis_command_duration_seconds_bucket{az="eu",command="evalsha",node="r\"1\\\n",le="0.0005"} 1` + "\n",
		`t2t_redis_command_duration_seconds_count{az="eu",command="pipeline",node="r\"1\\\n"} 1` + "\n",
		"\ngo_goroutines ",
		"\ngo_memstats_heap_alloc_bytes ",
		"\nprocess_cpu_seconds_total ",
		"\nprocess_resident_memory_bytes ",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("text scrape lacks %q", want)
		}
	}
	if strings.Contains(body, "trace_id") {
		t.Error("the text format carries exemplars")
	}
	if t.Failed() {
		t.Fatalf("page:\n%s", body)
	}

	om, resp := metGet(t, srv.URL+"/metrics", "application/openmetrics-text; version=1.0.0")
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("asked for OpenMetrics, got %q", ct)
	}
	// A bucket line with an exemplar: `name{labels} count # {trace_id="..",span_id=".."} value timestamp`.
	for prefix, value := range map[string]string{
		"t2t_work_unit_duration_seconds_bucket{" + labels + `,le="0.5"} 1 # {`:                                   "} 0.3 ",
		"t2t_engineer_propose_duration_seconds_bucket{" + labels + `,le="0.001"} 1 # {`:                          "} 0.001 ",
		`t2t_redis_command_duration_seconds_bucket{az="eu",command="evalsha",node="r\"1\\\n",le="0.0005"} 1 # {`: "} 0.0003 ",
	} {
		i := strings.Index(om, "\n"+prefix)
		if i < 0 {
			t.Errorf("OpenMetrics scrape lacks an exemplar on %q", prefix)
			continue
		}
		l, _, _ := strings.Cut(om[i+1:], "\n")
		if !strings.Contains(l, `trace_id="4bf92f3577b34da6a3ce929d0e0e4736"`) || !strings.Contains(l, `span_id="00f067aa0ba902b7"`) || !strings.Contains(l, value) {
			t.Errorf("exemplar line %q: want the span's trace_id and span_id and the value%s", l, value)
		}
	}
	if !strings.HasSuffix(om, "# EOF\n") {
		t.Error("OpenMetrics scrape does not end with # EOF")
	}
	// Unsampled or absent spans give no exemplar.
	for _, l := range strings.Split(om, "\n") {
		if strings.Contains(l, "trace_id") && (strings.Contains(l, `le="2.5"`) || strings.Contains(l, "learner_step") || strings.Contains(l, `"pipeline"`)) {
			t.Errorf("exemplar without a sampled span: %s", l)
		}
	}
	if t.Failed() {
		t.Fatalf("page:\n%s", om)
	}
}

// TestMetricsErrors: labels and metrics client_golang refuses are
// *MetricError wrapping ErrMetric and client_golang's own error.
func TestMetricsErrors(t *testing.T) {
	t.Parallel()
	for _, labels := range []map[string]string{{"": "v"}, {"__x": "v"}, {"node": "\xff"}} {
		_, err := telemetry.NewMetrics(labels)
		var me *telemetry.MetricError
		if !errors.Is(err, telemetry.ErrMetric) || !errors.As(err, &me) || me.Err == nil {
			t.Errorf("NewMetrics(%q) = %v, want a *MetricError", labels, err)
		}
	}
	m, err := telemetry.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	dup := prometheus.NewCounter(prometheus.CounterOpts{Name: telemetry.MetricEpisodes, Help: "again"})
	err = m.Register(dup)
	if !errors.Is(err, telemetry.ErrMetric) || !strings.Contains(err.Error(), telemetry.MetricEpisodes) {
		t.Errorf("registering a taken name: %v", err)
	}
	if err := m.Register(prometheus.NewGauge(prometheus.GaugeOpts{Name: "t2t_other"})); err != nil {
		t.Errorf("registering a new name: %v", err)
	}
}

// A nil *Metrics observes nothing and does not panic (metrics off).
func TestMetricsNil(t *testing.T) {
	t.Parallel()
	var m *telemetry.Metrics
	m.ObserveUnit(time.Second, trace.SpanContext{})
	m.ObserveLearnerStep(time.Second, trace.SpanContext{})
	m.ObserveEngineerPropose(time.Second, trace.SpanContext{})
	m.ObserveRedis(context.Background(), "get", time.Second)
}

// Concurrent updates and scrapes are exact. Run under -race.
func TestMetricsConcurrent(t *testing.T) {
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
				m.ObserveRedis(context.Background(), "get", time.Millisecond)
			}
		})
		wg.Go(func() {
			rec := httptest.NewRecorder()
			m.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
			if !strings.Contains(rec.Body.String(), telemetry.MetricEpisodes) {
				t.Error("scrape lacks episodes")
			}
		})
	}
	wg.Wait()
	if got := promtest.ToFloat64(m.Episodes); got != workers*per {
		t.Errorf("episodes = %v, want %d", got, workers*per)
	}
	if got := promtest.ToFloat64(m.QueueDepth); got != workers*per*0.5 {
		t.Errorf("queue depth = %v, want %v", got, workers*per*0.5)
	}
	if got := promtest.CollectAndCount(m.RedisSeconds); got != 1 {
		t.Errorf("redis series = %d, want 1", got)
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
	body, _ := metGet(t, srv.URL, "")
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
		"# TYPE " + telemetry.MetricLearnerStepSeconds + " histogram",
	} {
		if !strings.Contains(body, line+"\n") {
			t.Errorf("scrape lacks %q:\n%s", line, body)
		}
	}
}
