package traces

import (
	"errors"
	"os"
	"path/filepath"
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
