package deploy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
	"sigs.k8s.io/yaml"

	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/train"
)

// grafanaPanel is what the test reads of a dashboard panel (rows nest
// panels).
type grafanaPanel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		Expr  string `json:"expr"`
		RefID string `json:"refId"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDashboard struct {
	Title      string `json:"title"`
	UID        string `json:"uid"`
	Templating struct {
		List []struct {
			Name  string          `json:"name"`
			Type  string          `json:"type"`
			Query json.RawMessage `json:"query"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

// scrapedMetricNames serves a node's /metrics the way t2t train --http
// does (daemon.RunHandler), observes each histogram once, scrapes it over
// HTTP and returns every series name on the page: each family's name and,
// for histograms and summaries, its _bucket, _sum and _count.
func scrapedMetricNames(t *testing.T) map[string]bool {
	t.Helper()
	var opt train.Options
	h, err := daemon.RunHandler("grafana-test", &opt, nil)
	if err != nil {
		t.Fatal(err)
	}
	opt.Metrics.ObserveUnit(time.Second, trace.SpanContext{})
	opt.Metrics.ObserveLearnerStep(time.Second, trace.SpanContext{})
	opt.Metrics.ObserveEngineerPropose(time.Second, trace.SpanContext{})
	opt.Metrics.ObserveRedis(context.Background(), "get", time.Millisecond)
	srv := httptest.NewServer(h)
	defer srv.Close()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %d %v", resp.StatusCode, err)
	}
	names := map[string]bool{}
	for _, l := range strings.Split(string(body), "\n") {
		f := strings.Fields(l)
		if len(f) != 4 || f[0] != "#" || f[1] != "TYPE" {
			continue
		}
		names[f[2]] = true
		if f[3] == "histogram" || f[3] == "summary" {
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				names[f[2]+s] = true
			}
		}
	}
	if !names["t2t_work_unit_duration_seconds_bucket"] || !names["go_goroutines"] || !names["process_cpu_seconds_total"] {
		t.Fatalf("the scrape lacks the histograms or collectors:\n%s", body)
	}
	return names
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promqlMatchers = regexp.MustCompile(`\{[^{}]*\}`)
	promqlRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promqlNumbers  = regexp.MustCompile(`\b\d+(?:\.\d+)?(?:e[+-]?\d+|ms|[smhdwy])?\b`) // numbers and durations
	promqlKeywords = []string{"and", "or", "unless", "bool", "offset", "Inf", "NaN"}
)

// promqlMetrics returns the metric names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges, grouping clauses,
// numbers, function calls (an identifier before "(") and keywords are
// taken out.
func promqlMetrics(expr string) []string {
	e := promqlStrings.ReplaceAllString(expr, `""`)
	e = promqlMatchers.ReplaceAllString(e, " ")
	e = promqlRanges.ReplaceAllString(e, " ")
	e = promqlGrouping.ReplaceAllString(e, " ")
	e = promqlNumbers.ReplaceAllString(e, " ")
	var out []string
	for _, m := range promqlIdent.FindAllStringSubmatch(e, -1) {
		if m[1] != "" || slices.Contains(promqlKeywords, m[0]) {
			continue // a function or aggregation, or a keyword
		}
		out = append(out, m[0])
	}
	return out
}

func TestPromqlMetrics(t *testing.T) {
	for expr, want := range map[string][]string{
		`histogram_quantile(0.99, sum by (le, command) (rate(t2t_redis_command_duration_seconds_bucket{node=~"$node"}[$__rate_interval])))`: {"t2t_redis_command_duration_seconds_bucket"},
		`sum by (instance) (go_memstats_heap_alloc_bytes) / 1048576`:                                                                        {"go_memstats_heap_alloc_bytes"},
		`a_total{x="y}{"} and on (z) b offset 5m > bool 1e3`:                                                                                {"a_total", "b"},
		`label_values(t2t_stage, node)`:                                                                                                     {"t2t_stage", "node"},
	} {
		if got := promqlMetrics(expr); !slices.Equal(got, want) {
			t.Errorf("promqlMetrics(%s) = %q, want %q", expr, got, want)
		}
	}
}

// TestGrafanaDashboard decodes deploy/grafana/t2t.json and checks that
// every panel query selects metrics a node exports (a real scrape), and
// the dashboard's shape: unique panel ids, a Prometheus data source, the
// histograms all shown.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("grafana/t2t.json")
	if err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	var d grafanaDashboard
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("grafana/t2t.json: %v", err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) == 0 {
		t.Fatalf("dashboard title %q uid %q, %d panels", d.Title, d.UID, len(d.Panels))
	}
	exported := scrapedMetricNames(t)
	used := map[string]bool{}
	check := func(where, expr string) {
		ms := promqlMetrics(expr)
		if len(ms) == 0 {
			t.Errorf("%s: %q selects no metric", where, expr)
		}
		for _, m := range ms {
			used[m] = true
			if !exported[m] {
				t.Errorf("%s: %q names %s, which no node exports", where, expr, m)
			}
		}
	}
	ids := map[int]bool{}
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if p.Datasource == nil || p.Datasource.Type != "prometheus" || len(p.Targets) == 0 {
				t.Errorf("panel %q: datasource %+v, %d targets", p.Title, p.Datasource, len(p.Targets))
			}
			for _, tg := range p.Targets {
				check("panel "+p.Title+" "+tg.RefID, tg.Expr)
			}
		}
	}
	walk(d.Panels)
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Fatalf("variable %s: query %s: %v", v.Name, v.Query, err)
		}
		// label_values(metric, label): only the metric must be exported.
		ms := promqlMetrics(q.Query)
		if len(ms) == 0 || !exported[ms[0]] {
			t.Errorf("variable %s: %q selects no exported metric", v.Name, q.Query)
		}
	}
	for _, h := range []string{"t2t_work_unit_duration_seconds", "t2t_learner_step_duration_seconds",
		"t2t_engineer_propose_duration_seconds", "t2t_redis_command_duration_seconds"} {
		if !used[h+"_bucket"] {
			t.Errorf("no panel shows the histogram %s", h)
		}
	}
}

// TestComposeMonitoring: compose's Prometheus scrapes the nodes' --http
// ports with exemplar storage on, and its Grafana provisions the
// Prometheus and Jaeger data sources and loads grafana/t2t.json.
func TestComposeMonitoring(t *testing.T) {
	b, err := os.ReadFile("compose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var cf composeFile
	if err := yaml.UnmarshalStrict(b, &cf); err != nil {
		t.Fatalf("compose.yaml: %v", err)
	}
	prom, graf := cf.Services["prometheus"], cf.Services["grafana"]
	if prom == nil || graf == nil {
		t.Fatal("compose.yaml: no prometheus or grafana service")
	}
	if !slices.Contains(prom.Command, "--enable-feature=exemplar-storage") {
		t.Errorf("prometheus %q: exemplar storage off", prom.Command)
	}
	var pc struct {
		ScrapeConfigs []struct {
			JobName       string `json:"job_name"`
			StaticConfigs []struct {
				Targets []string `json:"targets"`
			} `json:"static_configs"`
			DNSSDConfigs []struct {
				Names []string `json:"names"`
				Type  string   `json:"type"`
				Port  int      `json:"port"`
			} `json:"dns_sd_configs"`
		} `json:"scrape_configs"`
	}
	pb, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(pb, &pc); err != nil {
		t.Fatalf("prometheus.yml: %v", err)
	}
	scraped := map[string]int{} // compose service → port scraped
	for _, sc := range pc.ScrapeConfigs {
		for _, s := range sc.StaticConfigs {
			for _, tg := range s.Targets {
				h, _, _ := net.SplitHostPort(tg)
				scraped[h] = deployPort(t, sc.JobName, tg)
			}
		}
		for _, s := range sc.DNSSDConfigs {
			for _, n := range s.Names {
				scraped[n] = s.Port
			}
		}
	}
	for _, name := range []string{"coordinator", "rollout"} {
		httpPort := deployPort(t, name+" --http", must(deployFlagValue(cf.Services[name].Command, "http")))
		if scraped[name] != httpPort {
			t.Errorf("prometheus scrapes %s on port %d, its --http port is %d", name, scraped[name], httpPort)
		}
	}
	mounts := map[string]string{} // container path → host path
	for _, v := range graf.Volumes {
		parts := strings.Split(v, ":")
		mounts[parts[1]] = parts[0]
	}
	var dsf struct {
		Datasources []struct {
			UID      string `json:"uid"`
			Type     string `json:"type"`
			URL      string `json:"url"`
			JSONData struct {
				ExemplarTraceIDDestinations []struct {
					Name          string `json:"name"`
					DatasourceUID string `json:"datasourceUid"`
				} `json:"exemplarTraceIdDestinations"`
			} `json:"jsonData"`
		} `json:"datasources"`
	}
	db, err := os.ReadFile(path.Join(mounts["/etc/grafana/provisioning"], "datasources", "t2t.yaml"))
	if err != nil {
		t.Fatalf("grafana provisioning: %v", err)
	}
	if err := yaml.Unmarshal(db, &dsf); err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, ds := range dsf.Datasources {
		uids[ds.UID] = ds.Type
		host := strings.TrimPrefix(ds.URL, "http://")
		if h, _, err := net.SplitHostPort(host); err != nil || cf.Services[h] == nil {
			t.Errorf("data source %s: %s is not a compose service", ds.UID, ds.URL)
		}
	}
	for _, ds := range dsf.Datasources {
		for _, e := range ds.JSONData.ExemplarTraceIDDestinations {
			if e.Name != "trace_id" || uids[e.DatasourceUID] != "jaeger" {
				t.Errorf("exemplar link %+v: want trace_id to the Jaeger data source", e)
			}
		}
	}
	var pv struct {
		Providers []struct {
			Options struct {
				Path string `json:"path"`
			} `json:"options"`
		} `json:"providers"`
	}
	pvb, err := os.ReadFile(path.Join(mounts["/etc/grafana/provisioning"], "dashboards", "t2t.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(pvb, &pv); err != nil || len(pv.Providers) != 1 {
		t.Fatalf("dashboard provider: %v %+v", err, pv)
	}
	if src := mounts[path.Join(pv.Providers[0].Options.Path, "t2t.json")]; src != "./grafana/t2t.json" {
		t.Errorf("grafana loads dashboards from %s, where compose mounts %q, not ./grafana/t2t.json", pv.Providers[0].Options.Path, src)
	}
}
