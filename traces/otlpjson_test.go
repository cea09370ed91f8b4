package traces

import (
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const otlpSample = `{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"t2t"}},{"key":"t2t.node","value":{"stringValue":"a"}}]},"scopeSpans":[{"scope":{"name":"t2t"},"spans":[
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"b7ad6b7169203331","name":"stage","kind":1,"startTimeUnixNano":"1000","endTimeUnixNano":"9000","attributes":[{"key":"t2t.stage","value":{"intValue":"0"}},{"key":"t2t.run","value":{"stringValue":"r"}}],"status":{}},
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"00f067aa0ba902b7","parentSpanId":"b7ad6b7169203331","name":"work_unit","kind":"SPAN_KIND_INTERNAL","startTimeUnixNano":"2000","endTimeUnixNano":"5000","attributes":[{"key":"t2t.reward","value":{"doubleValue":0.5}},{"key":"x","value":{"boolValue":true}}],"status":{"code":2,"message":"boom"}}
]}]}]}
{"resourceSpans":[{"resource":{"attributes":[{"key":"t2t.node","value":{"stringValue":"b"}}]},"scopeSpans":[{"spans":[
{"traceId":"0af7651916cd43dd8448eb211c80319c","spanId":"1111111111111111","parentSpanId":"b7ad6b7169203331","name":"work_unit","kind":3,"startTimeUnixNano":"3000","endTimeUnixNano":"8000"}
]}]}]}
`

func TestReadOTLPJSON(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// The collector writes one request per line; a pretty-printed file
	// holding one request works too.
	if err := os.WriteFile(filepath.Join(dir, "traces.json"), []byte(strings.ReplaceAll(otlpSample, "\n{\"traceId", "{\"traceId")), 0o644); err != nil {
		t.Fatal(err)
	}
	spans, err := ReadOTLPJSON(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3", len(spans))
	}
	st, wu, wb := spans[0], spans[1], spans[2]
	if st.Name != "stage" || st.Node != "a" || st.Service != "t2t" || st.Kind != "internal" || st.StartUnixNano != 1000 || st.EndUnixNano != 9000 {
		t.Fatalf("stage span %+v", st)
	}
	if v, _ := st.Attr("t2t.stage"); v != "0" {
		t.Fatalf("t2t.stage = %q", v)
	}
	if wu.ParentSpanID != st.SpanID || wu.Status != "error" || wu.StatusMessage != "boom" || wu.Attributes["x"] != true {
		t.Fatalf("work unit span %+v", wu)
	}
	if wb.Node != "b" || wb.Kind != "client" || wb.Status != "unset" {
		t.Fatalf("node b span %+v", wb)
	}
	rep := Analyze(spans)
	if len(rep.Stages) != 1 || rep.Stages[0].Wall != 8000 {
		t.Fatalf("analysis: %+v", rep.Stages)
	}
}

func TestReadOTLPJSONErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if _, err := ReadOTLPJSON(dir); err == nil {
		t.Fatal("empty folder accepted")
	}
	bad := `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"a","spanId":"b","name":"x","startTimeUnixNano":"9","endTimeUnixNano":"1"}]}]}]}`
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte(bad), 0o644)
	var pe *ParseError
	if _, err := ReadOTLPJSON(dir); !errors.As(err, &pe) || !errors.Is(err, ErrInvalidSpan) {
		t.Fatalf("span ending before it starts: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "bad.json"), []byte("{not json"), 0o644)
	if _, err := ReadOTLPJSON(dir); !errors.As(err, &pe) || pe.Line != 1 {
		t.Fatalf("broken JSON: %v", err)
	}
}

// testdata/collector.jsonl is written by hand from the OTLP specification
// (opentelemetry-proto's examples/trace.json and the file exporter's one
// request per line): two nodes, every attribute value type, events, links,
// fields the reader ignores (flags, schemaUrl, dropped counts), enums as
// numbers and names, a time as a bare number.
func TestReadCollectorFile(t *testing.T) {
	t.Parallel()
	spans, err := ReadSpans(filepath.Join("testdata", "collector.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	const tr, s0 = "5b8efff798038103d269b633813fc60c", int64(1_700_000_000_000_000_000)
	want := []Span{
		{TraceID: tr, SpanID: "eee19b7ec3c1b174", Name: "stage", Kind: "internal", StartUnixNano: s0, EndUnixNano: s0 + 1e9,
			Status: "unset", Attributes: map[string]any{"t2t.stage": json.Number("3"), "t2t.run": "r1"}, Node: "coord", Service: "t2t"},
		{TraceID: tr, SpanID: "eee19b7ec3c1b175", ParentSpanID: "eee19b7ec3c1b174", Name: "work_unit", Kind: "producer",
			StartUnixNano: s0 + 1e8, EndUnixNano: s0 + 9e8, Status: "unset", Attributes: map[string]any{"t2t.work_unit": "s3-u0"},
			Node: "coord", Service: "t2t"},
		{TraceID: tr, SpanID: "0102030405060708", ParentSpanID: "eee19b7ec3c1b175", Name: "work_unit", Kind: "consumer",
			StartUnixNano: s0 + 2e8, EndUnixNano: s0 + 8e8, Status: "error", StatusMessage: "lease lost",
			Attributes: map[string]any{"t2t.work_unit": "s3-u0", "t2t.stage": json.Number("3"), "t2t.reward": json.Number("0.5"),
				"nan": math.NaN(), "inf": math.Inf(-1), "list": []any{json.Number("1"), "a", true},
				"kv": map[string]any{"k": "v"}, "raw": []byte{1, 2, 3}, "empty": nil},
			Node: "rollout-1", Service: "t2t-rollout",
			Events: []Event{{Name: "retry", TimeUnixNano: s0 + 5e8, Attributes: map[string]any{"n": json.Number("1")}},
				{Name: "mark", TimeUnixNano: s0 + 6e8}},
			Links: []Link{{TraceID: "0af7651916cd43dd8448eb211c80319c", SpanID: "b7ad6b7169203331"}}},
		{TraceID: tr, SpanID: "0102030405060709", ParentSpanID: "0102030405060708", Name: "sample", Kind: "internal",
			StartUnixNano: s0 + 2e8, EndUnixNano: s0 + 7e8, Status: "ok",
			Attributes: map[string]any{"t2t.policy_version": json.Number("7")}, Node: "rollout-1", Service: "t2t-rollout"},
	}
	if len(spans) != len(want) {
		t.Fatalf("%d spans, want %d: %+v", len(spans), len(want), spans)
	}
	// NaN is not equal to itself: compare its text.
	if v, _ := spans[2].Attr("nan"); v != "NaN" {
		t.Errorf("nan = %q", v)
	}
	delete(spans[2].Attributes, "nan")
	delete(want[2].Attributes, "nan")
	for i := range want {
		if !reflect.DeepEqual(spans[i], want[i]) {
			t.Errorf("span %d\n got %+v\nwant %+v", i, spans[i], want[i])
		}
	}
	for key, text := range map[string]string{"t2t.reward": "0.5", "inf": "-Inf", "list": "[1 a true]", "kv": "map[k:v]"} {
		if v, _ := spans[2].Attr(key); v != text {
			t.Errorf("Attr(%s) = %q, want %q", key, v, text)
		}
	}
	rep := Analyze(spans)
	if len(rep.Stages) != 1 || rep.Stages[0].Stage != "3" || rep.Stages[0].Run != "r1" || rep.Stages[0].WorkUnits != 1 {
		t.Errorf("stages %+v", rep.Stages)
	}
}
