package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// OTLP JSON (the OpenTelemetry Collector's file exporter, and the OTLP/HTTP
// JSON encoding): each line, or the whole file, is one
// ExportTraceServiceRequest {"resourceSpans":[{"resource":{"attributes":…},
// "scopeSpans":[{"spans":[…]}]}]}. 64-bit integers are JSON strings, ids are
// hex, kinds are enum numbers or names. The resource attributes service.name
// and t2t.node give Span.Service and Span.Node.

type otlpRequest struct {
	ResourceSpans []struct {
		Resource struct {
			Attributes []otlpKV `json:"attributes"`
		} `json:"resource"`
		ScopeSpans []struct {
			Spans []otlpSpan `json:"spans"`
		} `json:"scopeSpans"`
	} `json:"resourceSpans"`
}

type otlpKV struct {
	Key   string `json:"key"`
	Value struct {
		StringValue *string          `json:"stringValue"`
		IntValue    *json.RawMessage `json:"intValue"`
		DoubleValue *json.Number     `json:"doubleValue"`
		BoolValue   *bool            `json:"boolValue"`
	} `json:"value"`
}

type otlpSpan struct {
	TraceID           string          `json:"traceId"`
	SpanID            string          `json:"spanId"`
	ParentSpanID      string          `json:"parentSpanId"`
	Name              string          `json:"name"`
	Kind              json.RawMessage `json:"kind"`
	StartTimeUnixNano json.RawMessage `json:"startTimeUnixNano"`
	EndTimeUnixNano   json.RawMessage `json:"endTimeUnixNano"`
	Attributes        []otlpKV        `json:"attributes"`
	Status            struct {
		Code    json.RawMessage `json:"code"`
		Message string          `json:"message"`
	} `json:"status"`
}

var otlpKinds = map[string]string{
	"0": "unspecified", "1": "internal", "2": "server", "3": "client", "4": "producer", "5": "consumer",
	"SPAN_KIND_UNSPECIFIED": "unspecified", "SPAN_KIND_INTERNAL": "internal", "SPAN_KIND_SERVER": "server",
	"SPAN_KIND_CLIENT": "client", "SPAN_KIND_PRODUCER": "producer", "SPAN_KIND_CONSUMER": "consumer",
}

var otlpStatus = map[string]string{"0": "unset", "1": "ok", "2": "error",
	"STATUS_CODE_UNSET": "unset", "STATUS_CODE_OK": "ok", "STATUS_CODE_ERROR": "error"}

// unquote turns an OTLP JSON scalar (a number, or a string holding one or
// an enum name) into its text.
func unquote(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	return string(bytes.TrimSpace(raw))
}

func otlpInt(raw json.RawMessage) (int64, error) {
	if len(raw) == 0 {
		return 0, nil
	}
	return strconv.ParseInt(unquote(raw), 10, 64)
}

func otlpAttrs(kvs []otlpKV, into map[string]any) {
	for _, kv := range kvs {
		v := kv.Value
		switch {
		case v.StringValue != nil:
			into[kv.Key] = *v.StringValue
		case v.IntValue != nil:
			into[kv.Key] = json.Number(unquote(*v.IntValue))
		case v.DoubleValue != nil:
			into[kv.Key] = *v.DoubleValue
		case v.BoolValue != nil:
			into[kv.Key] = *v.BoolValue
		}
	}
}

// DecodeOTLPJSON reads OTLP JSON trace requests from r (one per line, or
// one spanning the whole input); name is used in errors.
func DecodeOTLPJSON(r io.Reader, name string) ([]Span, error) {
	data, err := io.ReadAll(bufio.NewReader(r))
	if err != nil {
		return nil, fmt.Errorf("traces: read %s: %w", name, err)
	}
	var out []Span
	dec := json.NewDecoder(bytes.NewReader(data))
	for n := 1; ; n++ {
		var req otlpRequest
		if err := dec.Decode(&req); err == io.EOF {
			return out, nil
		} else if err != nil {
			return nil, &ParseError{File: name, Line: n, Err: err}
		}
		for _, rs := range req.ResourceSpans {
			res := map[string]any{}
			otlpAttrs(rs.Resource.Attributes, res)
			node, _ := res["t2t.node"].(string)
			service, _ := res["service.name"].(string)
			for _, ss := range rs.ScopeSpans {
				for _, sp := range ss.Spans {
					s := Span{TraceID: sp.TraceID, SpanID: sp.SpanID, ParentSpanID: sp.ParentSpanID, Name: sp.Name,
						Kind: otlpKinds[unquote(sp.Kind)], Status: otlpStatus[unquote(sp.Status.Code)], StatusMessage: sp.Status.Message,
						Node: node, Service: service, Attributes: map[string]any{}}
					if s.Kind == "" {
						s.Kind = "internal"
					}
					if s.Status == "" {
						s.Status = "unset"
					}
					var e1, e2 error
					s.StartUnixNano, e1 = otlpInt(sp.StartTimeUnixNano)
					s.EndUnixNano, e2 = otlpInt(sp.EndTimeUnixNano)
					otlpAttrs(sp.Attributes, s.Attributes)
					switch {
					case e1 != nil || e2 != nil:
						return nil, &ParseError{File: name, Line: n, Err: fmt.Errorf("%w: span %q: bad time", ErrInvalidSpan, sp.Name)}
					case s.TraceID == "" || s.SpanID == "" || s.Name == "":
						return nil, &ParseError{File: name, Line: n, Err: fmt.Errorf("%w: span without traceId, spanId or name", ErrInvalidSpan)}
					case s.EndUnixNano < s.StartUnixNano:
						return nil, &ParseError{File: name, Line: n, Err: fmt.Errorf("%w: span %q ends before it starts", ErrInvalidSpan, sp.Name)}
					}
					out = append(out, s)
				}
			}
		}
	}
}

// ReadOTLPJSON reads every *.json and *.jsonl file of dir (sorted by name)
// as OTLP JSON, e.g. the OpenTelemetry Collector's file exporter output.
func ReadOTLPJSON(dir string) ([]Span, error) {
	var files []string
	for _, pat := range []string{"*.json", "*.jsonl"} {
		m, err := filepath.Glob(filepath.Join(dir, pat))
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("traces: no *.json or *.jsonl file in %s", dir)
	}
	sort.Strings(files)
	var all []Span
	for _, p := range files {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		spans, err := DecodeOTLPJSON(f, p)
		_ = f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, spans...)
	}
	return all, nil
}
