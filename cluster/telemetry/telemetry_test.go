package telemetry_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/traces"
)

func telSetup(t *testing.T, opt telemetry.Options) *telemetry.Telemetry {
	t.Helper()
	tel, err := telemetry.Setup(context.Background(), opt)
	if err != nil {
		t.Fatalf("Setup(%+v): %v", opt, err)
	}
	return tel
}

func telShutdown(t *testing.T, tel *telemetry.Telemetry) {
	t.Helper()
	if err := tel.Shutdown(context.Background()); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func telCountLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// telCountSpans reads path back with package traces.
func telCountSpans(t *testing.T, path string) int {
	t.Helper()
	spans, err := traces.ReadSpans(path)
	if err != nil {
		t.Fatal(err)
	}
	return len(spans)
}

// Two nodes, two files: the coordinator's stage span on node A, its headers
// carried to node B, a work unit there. Reading both files back links them.
func TestCrossNodeParentChild(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fileA, fileB := filepath.Join(dir, "a.jsonl"), filepath.Join(dir, "b.jsonl")
	nodeA := telSetup(t, telemetry.Options{NodeID: "coord-A", TraceFile: fileA})
	nodeB := telSetup(t, telemetry.Options{NodeID: "rollout-B", TraceFile: fileB, ServiceName: "t2t-rollout"})

	ctxA, stage := nodeA.Tracer("test").Start(context.Background(), telemetry.SpanStage,
		trace.WithAttributes(attribute.Int(telemetry.AttrStage, 2), attribute.String(telemetry.AttrRun, "r1")))
	headers := telemetry.Inject(ctxA)
	if headers["traceparent"] == "" {
		t.Fatalf("Inject gave no traceparent: %v", headers)
	}
	// The headers travel as a plain map (msgpack on the wire); copy to be sure
	// nothing but the map crosses.
	wire := map[string]string{}
	for k, v := range headers {
		wire[k] = v
	}

	ctxB := telemetry.Extract(context.Background(), wire)
	_, unit := nodeB.Tracer("test").Start(ctxB, telemetry.SpanWorkUnit,
		trace.WithSpanKind(trace.SpanKindConsumer),
		trace.WithAttributes(attribute.String(telemetry.AttrWorkUnit, "u-7"), attribute.Float64("nan", math.NaN())))
	unit.SetStatus(codes.Error, "lease lost")
	unit.AddEvent("retry", trace.WithAttributes(attribute.Int("n", 1)))
	unit.End()
	stage.End()
	telShutdown(t, nodeB)
	telShutdown(t, nodeA)

	a, err := traces.ReadSpans(fileA)
	if err != nil {
		t.Fatal(err)
	}
	b, err := traces.ReadSpans(fileB)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || len(b) != 1 {
		t.Fatalf("got %d spans in A's file, %d in B's, want 1 and 1", len(a), len(b))
	}
	p, c := a[0], b[0]
	if p.Node != "coord-A" || p.Service != telemetry.DefaultServiceName || c.Node != "rollout-B" || c.Service != "t2t-rollout" {
		t.Errorf("node/service: parent %q/%q child %q/%q", p.Node, p.Service, c.Node, c.Service)
	}
	if c.TraceID != p.TraceID || c.ParentSpanID != p.SpanID || p.ParentSpanID != "" {
		t.Errorf("child trace %s parent %s; parent trace %s span %s parent %q",
			c.TraceID, c.ParentSpanID, p.TraceID, p.SpanID, p.ParentSpanID)
	}
	if got, _ := p.Attr(telemetry.AttrStage); got != "2" {
		t.Errorf("stage attr = %q, want 2", got)
	}
	if c.Kind != "consumer" || c.Status != "error" || c.StatusMessage != "lease lost" {
		t.Errorf("kind/status = %q/%q/%q", c.Kind, c.Status, c.StatusMessage)
	}
	if got, _ := c.Attr("nan"); got != "NaN" {
		t.Errorf("NaN attribute = %q", got)
	}
	if len(c.Events) != 1 || c.Events[0].Name != "retry" {
		t.Errorf("events = %+v", c.Events)
	}
	if c.StartUnixNano < p.StartUnixNano || c.EndUnixNano > p.EndUnixNano {
		t.Errorf("child [%d,%d] not inside parent [%d,%d]", c.StartUnixNano, c.EndUnixNano, p.StartUnixNano, p.EndUnixNano)
	}

	// Together, the analysis attributes B's unit to A's stage.
	rep := traces.Analyze(append(a, b...))
	if len(rep.Stages) != 1 || rep.Stages[0].WorkUnits != 1 || rep.Stages[0].Stage != "2" || rep.Stages[0].Run != "r1" {
		t.Errorf("stages = %+v", rep.Stages)
	}
}

func TestInjectExtractWithoutSpan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	if h := telemetry.Inject(ctx); h != nil {
		t.Errorf("Inject without span = %v, want nil", h)
	}
	for _, h := range []map[string]string{nil, {}, {"traceparent": "garbage"}, {"traceparent": "00-00000000000000000000000000000000-0000000000000000-01"}} {
		got := telemetry.Extract(ctx, h)
		if trace.SpanContextFromContext(got).IsValid() {
			t.Errorf("Extract(%v) gave a valid span context", h)
		}
	}
}

// With tracing off on a relay node, context received from elsewhere still
// flows through to the next hop.
func TestNoopForwardsContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := telSetup(t, telemetry.Options{NodeID: "a", TraceFile: filepath.Join(dir, "a.jsonl")})
	defer telShutdown(t, a)
	relay := telSetup(t, telemetry.Options{NodeID: "relay"})
	ctx, sp := a.Tracer("t").Start(context.Background(), "x")
	defer sp.End()
	ctx2, rs := relay.Tracer("t").Start(telemetry.Extract(context.Background(), telemetry.Inject(ctx)), "y")
	if rs.IsRecording() {
		t.Error("no-op span records")
	}
	got := trace.SpanContextFromContext(telemetry.Extract(context.Background(), telemetry.Inject(ctx2)))
	if got.TraceID() != sp.SpanContext().TraceID() || got.SpanID() != sp.SpanContext().SpanID() {
		t.Errorf("relayed context %v, want %v", got, sp.SpanContext())
	}
}

func TestNoExporterCreatesNoFiles(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	tel := telSetup(t, telemetry.Options{NodeID: "quiet"})
	if tel.Enabled() {
		t.Error("Enabled() with no exporter")
	}
	ctx, sp := tel.Tracer("t").Start(context.Background(), telemetry.SpanStage)
	if sp.IsRecording() || sp.SpanContext().IsValid() {
		t.Error("no-op provider produced a recording or valid span")
	}
	if h := telemetry.Inject(ctx); h != nil {
		t.Errorf("Inject = %v, want nil", h)
	}
	sp.End()
	if err := tel.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	telShutdown(t, tel)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("no-exporter setup created %v", ents)
	}
}

func TestShutdownFlushes(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "n.jsonl")
	tel := telSetup(t, telemetry.Options{NodeID: "n", TraceFile: path})
	if !tel.Enabled() {
		t.Fatal("not enabled")
	}
	tr := tel.Tracer("t")
	for i := range 20 {
		_, sp := tr.Start(context.Background(), telemetry.SpanSample, trace.WithAttributes(attribute.Int("i", i)))
		sp.End()
	}
	// Buffered: 20 small spans stay in memory (batch queue or the exporter's
	// 64 KiB buffer) until a flush.
	if n := telCountLines(t, path); n != 0 {
		t.Errorf("file has %d lines before any flush, want 0 (buffered)", n)
	}
	telShutdown(t, tel)
	if n := telCountSpans(t, path); n != 20 {
		t.Errorf("file has %d spans after Shutdown, want 20", n)
	}
	// Spans ended after Shutdown are dropped, not written.
	_, sp := tr.Start(context.Background(), "late")
	sp.End()
	telShutdown(t, tel)
	if n := telCountSpans(t, path); n != 20 {
		t.Errorf("file has %d spans after a late span, want 20", n)
	}
}

func TestForceFlushWritesWithoutShutdown(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "n.jsonl")
	tel := telSetup(t, telemetry.Options{NodeID: "n", TraceFile: path})
	defer telShutdown(t, tel)
	_, sp := tel.Tracer("t").Start(context.Background(), telemetry.SpanVerify)
	sp.End()
	if err := tel.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := traces.ReadSpans(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || spans[0].Name != telemetry.SpanVerify {
		t.Errorf("after ForceFlush: %+v", spans)
	}
}

// Many goroutines ending spans on one provider: every span lands exactly
// once, on whole lines. Run under -race.
func TestProviderConcurrentSpans(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "n.jsonl")
	tel := telSetup(t, telemetry.Options{NodeID: "n", TraceFile: path})
	const workers, per = 8, 300
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			tr := tel.Tracer(fmt.Sprint("w", w))
			for i := range per {
				_, sp := tr.Start(context.Background(), telemetry.SpanInstance,
					trace.WithAttributes(attribute.String(telemetry.AttrInstance, fmt.Sprintf("w%d-i%d", w, i))))
				sp.End()
			}
		})
	}
	wg.Wait()
	telShutdown(t, tel)
	spans, err := traces.ReadSpans(path)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, s := range spans {
		id, _ := s.Attr(telemetry.AttrInstance)
		if seen[id] {
			t.Fatalf("instance %s written twice", id)
		}
		seen[id] = true
	}
	if len(seen) != workers*per {
		t.Errorf("got %d distinct spans, want %d", len(seen), workers*per)
	}
}

// telLineWriter checks that every Write carries whole lines of valid JSON.
type telLineWriter struct {
	t      *testing.T
	lines  []string
	writes int
}

func (w *telLineWriter) Write(p []byte) (int, error) {
	w.writes++
	if len(p) == 0 || p[len(p)-1] != '\n' {
		w.t.Errorf("write of %d bytes does not end a line", len(p))
	}
	w.lines = append(w.lines, strings.Split(strings.TrimSuffix(string(p), "\n"), "\n")...)
	return len(p), nil
}

// ExportSpans called from many goroutines at once: nothing lost or torn,
// buffered writes of whole lines. Run under -race.
func TestFileExporterConcurrentExport(t *testing.T) {
	t.Parallel()
	w := &telLineWriter{t: t}
	exp := telemetry.NewFileExporter(w)
	const workers, batches, per = 8, 20, 25
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			for b := range batches {
				stubs := make(tracetest.SpanStubs, per)
				for i := range stubs {
					stubs[i] = tracetest.SpanStub{
						Name: telemetry.SpanSample,
						SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
							TraceID: trace.TraceID{byte(g + 1)},
							SpanID:  trace.SpanID{byte(g + 1), byte(b), byte(i), 1},
						}),
						Attributes: []attribute.KeyValue{attribute.String("pad", strings.Repeat("x", 200))},
					}
				}
				if err := exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	if w.writes < 2 {
		t.Errorf("%d writes: expected the 64 KiB buffer to flush several times", w.writes)
	}
	seen := map[string]bool{}
	for _, l := range w.lines {
		spans, err := traces.DecodeSpans(strings.NewReader(l), "line")
		if err != nil {
			t.Fatalf("bad line %q: %v", l, err)
		}
		if len(spans) != per {
			t.Fatalf("a line of %d spans, want one line per batch of %d", len(spans), per)
		}
		for _, s := range spans {
			if seen[s.SpanID] {
				t.Fatalf("span %s twice", s.SpanID)
			}
			seen[s.SpanID] = true
		}
	}
	if len(seen) != workers*batches*per {
		t.Errorf("%d spans written, want %d", len(seen), workers*batches*per)
	}
	// Closed: further exports fail; Shutdown again is fine.
	err := exp.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "x"}}.Snapshots())
	if !errors.Is(err, telemetry.ErrExporterClosed) {
		t.Errorf("ExportSpans after Shutdown = %v, want ErrExporterClosed", err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Errorf("second Shutdown: %v", err)
	}
}

type telFailWriter struct{}

func (telFailWriter) Write([]byte) (int, error) { return 0, io.ErrShortWrite }

func TestFileExporterWriteError(t *testing.T) {
	t.Parallel()
	exp := telemetry.NewFileExporter(telFailWriter{})
	if err := exp.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "x"}}.Snapshots()); err != nil {
		t.Fatalf("buffered export failed: %v", err)
	}
	if err := exp.ForceFlush(context.Background()); !errors.Is(err, io.ErrShortWrite) {
		t.Errorf("ForceFlush = %v, want the write error", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := exp.ExportSpans(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Errorf("ExportSpans with cancelled ctx = %v", err)
	}
}

func TestOpenFileExporterAppends(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "shared.jsonl")
	for range 2 { // two "processes" appending to one file in turn
		exp, err := telemetry.OpenFileExporter(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := exp.ExportSpans(context.Background(), tracetest.SpanStubs{{Name: "a"}, {Name: "b"}}.Snapshots()); err != nil {
			t.Fatal(err)
		}
		if err := exp.Shutdown(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := telCountLines(t, path); n != 2 {
		t.Errorf("%d lines, want 2 (one per export)", n)
	}
	if n := telCountSpans(t, path); n != 4 {
		t.Errorf("%d spans, want 4", n)
	}
	if _, err := telemetry.OpenFileExporter(filepath.Join(t.TempDir(), "no", "such", "dir.jsonl")); err == nil {
		t.Error("OpenFileExporter in a missing directory succeeded")
	}
}

func TestOptionsValidate(t *testing.T) {
	t.Parallel()
	cases := []struct {
		opt   telemetry.Options
		field string
	}{
		{telemetry.Options{SampleRatio: -0.1}, "SampleRatio"},
		{telemetry.Options{SampleRatio: 1.5}, "SampleRatio"},
		{telemetry.Options{SampleRatio: math.NaN()}, "SampleRatio"},
		{telemetry.Options{OTLPEndpoint: "collector"}, "OTLPEndpoint"},
		{telemetry.Options{OTLPEndpoint: "ftp://collector:4318"}, "OTLPEndpoint"},
		{telemetry.Options{OTLPEndpoint: "http:///v1/traces"}, "OTLPEndpoint"},
	}
	for _, c := range cases {
		err := c.opt.Validate()
		var oe *fielderr.Error
		if !errors.Is(err, telemetry.ErrInvalidOptions) || !errors.As(err, &oe) || oe.Field != c.field {
			t.Errorf("Validate(%+v) = %v, want a field error on %s", c.opt, err, c.field)
		}
		if _, err := telemetry.Setup(context.Background(), c.opt); !errors.Is(err, telemetry.ErrInvalidOptions) {
			t.Errorf("Setup(%+v) = %v, want ErrInvalidOptions", c.opt, err)
		}
	}
	for _, ok := range []telemetry.Options{{}, {SampleRatio: 1}, {SampleRatio: 0.5, OTLPEndpoint: "localhost:4318"},
		{OTLPEndpoint: "https://otel.example:4318/custom/path"}} {
		if err := ok.Validate(); err != nil {
			t.Errorf("Validate(%+v) = %v", ok, err)
		}
	}
	tel := telSetup(t, telemetry.Options{})
	if o := tel.Options(); o.ServiceName != "t2t" || o.NodeID == "" || o.SampleRatio != 1 {
		t.Errorf("defaults not filled: %+v", o)
	}
}

// A tiny sample ratio drops new traces, but a span whose remote parent was
// sampled is recorded: the decision travels with the headers.
func TestSamplingFollowsParent(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	a := telSetup(t, telemetry.Options{NodeID: "a", TraceFile: filepath.Join(dir, "a.jsonl")})
	bPath := filepath.Join(dir, "b.jsonl")
	b := telSetup(t, telemetry.Options{NodeID: "b", TraceFile: bPath, SampleRatio: 1e-12})
	for range 50 {
		_, sp := b.Tracer("t").Start(context.Background(), "root")
		sp.End()
	}
	ctx, parent := a.Tracer("t").Start(context.Background(), telemetry.SpanStage)
	_, child := b.Tracer("t").Start(telemetry.Extract(context.Background(), telemetry.Inject(ctx)), telemetry.SpanWorkUnit)
	child.End()
	parent.End()
	telShutdown(t, a)
	telShutdown(t, b)
	spans, err := traces.ReadSpans(bPath)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 1 || spans[0].Name != telemetry.SpanWorkUnit {
		t.Errorf("node b recorded %d spans (%+v), want only the child of a sampled parent", len(spans), spans)
	}
}

// OTLP/HTTP export to a real (loopback) HTTP receiver, both endpoint forms.
func TestOTLPHTTPExport(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var names []string
	var nodes []string
	var paths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Error(err)
			return
		}
		var req coltrace.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			t.Errorf("bad OTLP body: %v", err)
		}
		mu.Lock()
		defer mu.Unlock()
		paths = append(paths, r.URL.Path)
		for _, rs := range req.ResourceSpans {
			for _, kv := range rs.GetResource().GetAttributes() {
				if kv.Key == telemetry.AttrNode {
					nodes = append(nodes, kv.GetValue().GetStringValue())
				}
			}
			for _, ss := range rs.ScopeSpans {
				for _, s := range ss.Spans {
					names = append(names, s.Name)
				}
			}
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	hostPort := strings.TrimPrefix(srv.URL, "http://")
	for _, ep := range []string{hostPort, srv.URL + "/custom/traces"} {
		tel := telSetup(t, telemetry.Options{NodeID: "otlp-node", OTLPEndpoint: ep})
		_, sp := tel.Tracer("t").Start(context.Background(), telemetry.SpanLearnerUpdate)
		sp.End()
		telShutdown(t, tel)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Join(names, ",") != "learner.update,learner.update" {
		t.Errorf("collector got spans %v", names)
	}
	if strings.Join(nodes, ",") != "otlp-node,otlp-node" {
		t.Errorf("collector got nodes %v", nodes)
	}
	if strings.Join(paths, ",") != "/v1/traces,/custom/traces" {
		t.Errorf("collector got paths %v", paths)
	}
}

func TestSetGlobal(t *testing.T) {
	prevTP, prevProp := otel.GetTracerProvider(), otel.GetTextMapPropagator()
	t.Cleanup(func() {
		otel.SetTracerProvider(prevTP)
		otel.SetTextMapPropagator(prevProp)
	})
	path := filepath.Join(t.TempDir(), "g.jsonl")
	tel := telSetup(t, telemetry.Options{NodeID: "g", TraceFile: path})
	tel.SetGlobal()
	if _, ok := otel.GetTracerProvider().(*sdktrace.TracerProvider); !ok {
		t.Errorf("global provider is %T", otel.GetTracerProvider())
	}
	_, sp := otel.Tracer("lib").Start(context.Background(), "from-global")
	sp.End()
	telShutdown(t, tel)
	spans, err := traces.ReadSpans(path)
	if err != nil || len(spans) != 1 || spans[0].Name != "from-global" {
		t.Errorf("spans %+v, err %v", spans, err)
	}
	if f := otel.GetTextMapPropagator().Fields(); len(f) == 0 || f[0] != "traceparent" {
		t.Errorf("global propagator fields %v", f)
	}
}

// The OTLP JSON line format, field by field, as the collector's file
// exporter writes it.
func TestFileExporterLineFormat(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "f.jsonl")
	tel := telSetup(t, telemetry.Options{NodeID: "fmt", TraceFile: path})
	ctx, p := tel.Tracer("t").Start(context.Background(), telemetry.SpanStage)
	_, c := tel.Tracer("t").Start(ctx, telemetry.SpanEval, trace.WithAttributes(
		attribute.Bool("b", true), attribute.Int64("i", 1<<60), attribute.Float64("f", 0.25),
		attribute.StringSlice("ss", []string{"x", "y"}), attribute.Float64Slice("fs", []float64{1, math.Inf(1)})))
	c.End()
	p.End()
	telShutdown(t, tel)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1 (one export)", len(lines))
	}
	var req map[string]any
	dec := json.NewDecoder(strings.NewReader(lines[0]))
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		t.Fatal(err)
	}
	at := func(v any, path ...any) any {
		t.Helper()
		for _, k := range path {
			switch k := k.(type) {
			case string:
				m, ok := v.(map[string]any)
				if !ok {
					t.Fatalf("%v: not an object at %q", v, k)
				}
				v = m[k]
			case int:
				l, ok := v.([]any)
				if !ok || k >= len(l) {
					t.Fatalf("%v: no element %d", v, k)
				}
				v = l[k]
			}
		}
		return v
	}
	res := at(req, "resourceSpans", 0, "resource", "attributes")
	resAttrs := map[string]string{}
	for _, kv := range res.([]any) {
		resAttrs[fmt.Sprint(at(kv, "key"))] = fmt.Sprint(at(kv, "value", "stringValue"))
	}
	if resAttrs[telemetry.AttrNode] != "fmt" || resAttrs[telemetry.AttrServiceName] != "t2t" {
		t.Errorf("resource attributes %v", resAttrs)
	}
	if name := at(req, "resourceSpans", 0, "scopeSpans", 0, "scope", "name"); name != "t" {
		t.Errorf("scope name %v", name)
	}
	spans := at(req, "resourceSpans", 0, "scopeSpans", 0, "spans").([]any)
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	child, root := spans[0].(map[string]any), spans[1].(map[string]any) // the child ends first
	for _, k := range []string{"traceId", "spanId", "parentSpanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano", "attributes", "status"} {
		if _, ok := child[k]; !ok {
			t.Errorf("span lacks %q: %v", k, child)
		}
	}
	if _, ok := root["parentSpanId"]; ok {
		t.Error("root span has parentSpanId")
	}
	if child["kind"] != json.Number("1") || fmt.Sprint(child["status"]) != "map[]" {
		t.Errorf("kind %v status %v, want 1 (internal) and {} (unset)", child["kind"], child["status"])
	}
	if _, ok := child["startTimeUnixNano"].(string); !ok {
		t.Errorf("startTimeUnixNano %v is not a string", child["startTimeUnixNano"])
	}
	attrs := map[string]string{}
	for _, kv := range child["attributes"].([]any) {
		v, _ := json.Marshal(at(kv, "value"))
		attrs[fmt.Sprint(at(kv, "key"))] = string(v)
	}
	want := map[string]string{"b": `{"boolValue":true}`, "i": `{"intValue":"1152921504606846976"}`, "f": `{"doubleValue":0.25}`,
		"ss": `{"arrayValue":{"values":[{"stringValue":"x"},{"stringValue":"y"}]}}`,
		"fs": `{"arrayValue":{"values":[{"doubleValue":1},{"doubleValue":"Infinity"}]}}`}
	if !reflect.DeepEqual(attrs, want) {
		t.Errorf("attributes\n%v, want\n%v", attrs, want)
	}
	if len(child["traceId"].(string)) != 32 || len(child["spanId"].(string)) != 16 {
		t.Errorf("ids: %v %v", child["traceId"], child["spanId"])
	}
}

// What the exporter writes, package traces reads back: every attribute
// type, kinds, statuses, events, links, resources and scopes.
func TestFileExporterRoundTrip(t *testing.T) {
	t.Parallel()
	var buf strings.Builder
	exp := telemetry.NewFileExporter(&buf)
	tid := trace.TraceID{0xab, 1}
	sc := func(s byte) trace.SpanContext {
		return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: trace.SpanID{s}, TraceFlags: trace.FlagsSampled})
	}
	t0 := time.Unix(1_700_000_000, 5)
	resA := resource.NewSchemaless(attribute.String(telemetry.AttrServiceName, "t2t"), attribute.String(telemetry.AttrNode, "a"))
	resB := resource.NewSchemaless(attribute.String(telemetry.AttrNode, "b"))
	stubs := tracetest.SpanStubs{
		{Name: telemetry.SpanStage, SpanContext: sc(1), SpanKind: trace.SpanKindInternal, StartTime: t0, EndTime: t0.Add(time.Second),
			Attributes: []attribute.KeyValue{attribute.Int(telemetry.AttrStage, 4), attribute.String(telemetry.AttrRun, "r")},
			Status:     sdktrace.Status{Code: codes.Ok}, Resource: resA, InstrumentationLibrary: instrumentation.Scope{Name: "coord"}},
		{Name: telemetry.SpanWorkUnit, SpanContext: sc(2), Parent: sc(1), SpanKind: trace.SpanKindConsumer,
			StartTime: t0.Add(time.Millisecond), EndTime: t0.Add(2 * time.Millisecond),
			Attributes: []attribute.KeyValue{attribute.Bool("b", false), attribute.Float64("f", -1.5e-7), attribute.Float64("nan", math.NaN()),
				attribute.Int64Slice("is", []int64{-1, 1 << 62}), attribute.BoolSlice("bs", []bool{true})},
			Events: []sdktrace.Event{{Name: "retry", Time: t0.Add(1500 * time.Microsecond), Attributes: []attribute.KeyValue{attribute.Int("n", 2)}}},
			Links:  []sdktrace.Link{{SpanContext: sc(9)}},
			Status: sdktrace.Status{Code: codes.Error, Description: "boom"}, Resource: resB, InstrumentationLibrary: instrumentation.Scope{Name: "rollout"}},
		{Name: telemetry.SpanLearnerUpdate, SpanContext: sc(3), Parent: sc(1), SpanKind: trace.SpanKindServer, StartTime: t0, EndTime: t0,
			Resource: resA, InstrumentationLibrary: instrumentation.Scope{Name: "learner", Version: "v2"}},
		{Name: telemetry.SpanSample, SpanContext: sc(4), Parent: sc(2), SpanKind: trace.SpanKindClient, StartTime: t0, EndTime: t0.Add(time.Microsecond),
			Resource: resB, InstrumentationLibrary: instrumentation.Scope{Name: "rollout"}},
	}
	if err := exp.ExportSpans(context.Background(), stubs.Snapshots()); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	spans, err := traces.DecodeSpans(strings.NewReader(buf.String()), "buf")
	if err != nil {
		t.Fatal(err)
	}
	id := func(s byte) string { return trace.SpanID{s}.String() }
	start := t0.UnixNano()
	// Grouped by resource, then scope, in order of first appearance.
	want := []traces.Span{
		{TraceID: tid.String(), SpanID: id(1), Name: telemetry.SpanStage, Kind: "internal", StartUnixNano: start, EndUnixNano: start + 1e9,
			Status: "ok", Attributes: map[string]any{telemetry.AttrStage: json.Number("4"), telemetry.AttrRun: "r"}, Node: "a", Service: "t2t"},
		{TraceID: tid.String(), SpanID: id(3), ParentSpanID: id(1), Name: telemetry.SpanLearnerUpdate, Kind: "server", StartUnixNano: start,
			EndUnixNano: start, Status: "unset", Attributes: map[string]any{}, Node: "a", Service: "t2t"},
		{TraceID: tid.String(), SpanID: id(2), ParentSpanID: id(1), Name: telemetry.SpanWorkUnit, Kind: "consumer", StartUnixNano: start + 1e6,
			EndUnixNano: start + 2e6, Status: "error", StatusMessage: "boom", Node: "b",
			Attributes: map[string]any{"b": false, "f": json.Number("-1.5e-7"), "is": []any{json.Number("-1"), json.Number("4611686018427387904")}, "bs": []any{true}},
			Events:     []traces.Event{{Name: "retry", TimeUnixNano: start + 1.5e6, Attributes: map[string]any{"n": json.Number("2")}}},
			Links:      []traces.Link{{TraceID: tid.String(), SpanID: id(9)}}},
		{TraceID: tid.String(), SpanID: id(4), ParentSpanID: id(2), Name: telemetry.SpanSample, Kind: "client", StartUnixNano: start,
			EndUnixNano: start + 1e3, Status: "unset", Attributes: map[string]any{}, Node: "b"},
	}
	if v, _ := spans[2].Attr("nan"); v != "NaN" {
		t.Errorf("NaN attribute = %q", v)
	}
	delete(spans[2].Attributes, "nan")
	if !reflect.DeepEqual(spans, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", spans, want)
	}
}
