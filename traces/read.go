package traces

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"

	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/cluster/telemetry/otlpjson"
	"github.com/t2t-lab/t2t/internal/jsonl"
)

// ParseError is a part of a span file that does not hold valid spans.
type ParseError struct {
	File string // the path given to ReadSpans, or the name given to DecodeSpans
	Line int    // 1-based: the line where the JSON value holding the problem starts
	Err  error  // the JSON error (jsonl.LineReason: a line that is not JSON is a *jsonl.NotJSONError), ErrInvalidSpan or ErrNotOTLP
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

var (
	// ErrInvalidSpan is wrapped (inside a *ParseError) for a span that is
	// valid JSON but not a valid span: missing traceId, spanId or name, a time
	// past 2262, or an end before the start.
	ErrInvalidSpan = errors.New("traces: invalid span")
	// ErrNotOTLP is wrapped (inside a *ParseError) for a JSON value that is
	// not an OTLP trace request: no resourceSpans. A line of the span format
	// t2t wrote before it wrote OTLP JSON ({"trace_id":…}) is one; those
	// files are no longer read.
	ErrNotOTLP = errors.New("traces: not an OTLP JSON trace request (no resourceSpans)")
)

// ReadSpans reads span files and returns all their spans in file order.
// A span file is OTLP JSON (package otlpjson): ExportTraceServiceRequest
// objects, one per line as telemetry.FileExporter and the OpenTelemetry
// Collector's file exporter write them, or pretty-printed over several
// lines. Whitespace between them is skipped; anything else fails with a
// *ParseError naming file:line. Files of several nodes may be given in any
// order.
func ReadSpans(paths ...string) ([]Span, error) {
	var all []Span
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, fmt.Errorf("traces: %w", err)
		}
		spans, err := DecodeSpans(f, p)
		_ = f.Close() // read-only: nothing to lose
		if err != nil {
			return nil, err
		}
		all = append(all, spans...)
	}
	return all, nil
}

// ReadOTLPJSON reads every *.json and *.jsonl file of dir, sorted by name,
// with ReadSpans: a folder of trace files written by --trace-file, or the
// OpenTelemetry Collector's file exporter output.
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
	return ReadSpans(files...)
}

// DecodeSpans reads the spans of one span file from r (see ReadSpans); name
// is used in errors (e.g. "stdin").
func DecodeSpans(r io.Reader, name string) ([]Span, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("traces: read %s: %w", name, err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	var spans []Span
	line, pos := 1, 0 // data[pos] is on line
	for {
		start := int(dec.InputOffset())
		for start < len(data) && isJSONSpace(data[start]) {
			start++
		}
		if start == len(data) {
			return spans, nil
		}
		line += bytes.Count(data[pos:start], []byte{'\n'})
		pos = start
		var req otlpjson.TracesData
		if err := dec.Decode(&req); err != nil {
			text := data[start:]
			if n := bytes.IndexByte(text, '\n'); n >= 0 {
				text = text[:n]
			}
			return nil, &ParseError{File: name, Line: line, Err: jsonl.LineReason(text, err)}
		}
		if req.ResourceSpans == nil && !isEmptyObject(data[start:dec.InputOffset()]) {
			return nil, &ParseError{File: name, Line: line, Err: ErrNotOTLP}
		}
		if spans, err = appendSpans(spans, &req); err != nil {
			return nil, &ParseError{File: name, Line: line, Err: err}
		}
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// isEmptyObject reports whether the JSON value v is {}.
func isEmptyObject(v []byte) bool {
	return len(v) >= 2 && v[0] == '{' && len(bytes.TrimSpace(v[1:len(v)-1])) == 0
}

// appendSpans flattens req's spans onto dst, each with its resource's node
// and service.
func appendSpans(dst []Span, req *otlpjson.TracesData) ([]Span, error) {
	for _, rs := range req.ResourceSpans {
		var node, service string
		for _, kv := range rs.Resource.Attributes {
			switch kv.Key {
			case telemetry.AttrNode:
				node, _ = attrValue(kv.Value).(string)
			case telemetry.AttrServiceName:
				service, _ = attrValue(kv.Value).(string)
			}
		}
		for _, ss := range rs.ScopeSpans {
			for i := range ss.Spans {
				s, err := flatSpan(&ss.Spans[i])
				if err != nil {
					return nil, err
				}
				s.Node, s.Service = node, service
				dst = append(dst, s)
			}
		}
	}
	return dst, nil
}

func flatSpan(sp *otlpjson.Span) (Span, error) {
	switch {
	case sp.TraceID == "":
		return Span{}, fmt.Errorf("%w: no traceId", ErrInvalidSpan)
	case sp.SpanID == "":
		return Span{}, fmt.Errorf("%w: no spanId", ErrInvalidSpan)
	case sp.Name == "":
		return Span{}, fmt.Errorf("%w: no name", ErrInvalidSpan)
	case sp.StartTimeUnixNano > math.MaxInt64 || sp.EndTimeUnixNano > math.MaxInt64:
		return Span{}, fmt.Errorf("%w: span %q: time past 2262", ErrInvalidSpan, sp.Name)
	case sp.EndTimeUnixNano < sp.StartTimeUnixNano:
		return Span{}, fmt.Errorf("%w: span %q: endTimeUnixNano %d before startTimeUnixNano %d",
			ErrInvalidSpan, sp.Name, sp.EndTimeUnixNano, sp.StartTimeUnixNano)
	}
	s := Span{
		TraceID:       sp.TraceID,
		SpanID:        sp.SpanID,
		ParentSpanID:  sp.ParentSpanID,
		Name:          sp.Name,
		Kind:          sp.Kind.String(),
		StartUnixNano: int64(sp.StartTimeUnixNano),
		EndUnixNano:   int64(sp.EndTimeUnixNano),
		Status:        sp.Status.Code.String(),
		StatusMessage: sp.Status.Message,
		Attributes:    attrMap(sp.Attributes),
	}
	if s.Attributes == nil {
		s.Attributes = map[string]any{}
	}
	for _, ev := range sp.Events {
		if ev.TimeUnixNano > math.MaxInt64 {
			return Span{}, fmt.Errorf("%w: span %q: event %q: time past 2262", ErrInvalidSpan, sp.Name, ev.Name)
		}
		s.Events = append(s.Events, Event{Name: ev.Name, TimeUnixNano: int64(ev.TimeUnixNano), Attributes: attrMap(ev.Attributes)})
	}
	for _, l := range sp.Links {
		s.Links = append(s.Links, Link{TraceID: l.TraceID, SpanID: l.SpanID})
	}
	return s, nil
}

// attrMap is kvs as a map (see Span.Attributes); nil when empty.
func attrMap(kvs []otlpjson.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[kv.Key] = attrValue(kv.Value)
	}
	return m
}

// attrValue is v as Span.Attributes holds it; nil for an empty value.
func attrValue(v otlpjson.AnyValue) any {
	switch {
	case v.StringValue != nil:
		return *v.StringValue
	case v.BoolValue != nil:
		return *v.BoolValue
	case v.IntValue != nil:
		return json.Number(strconv.FormatInt(int64(*v.IntValue), 10))
	case v.DoubleValue != nil:
		f := float64(*v.DoubleValue)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return f
		}
		b, _ := json.Marshal(f) // finite: cannot fail
		return json.Number(b)
	case v.ArrayValue != nil:
		out := make([]any, len(v.ArrayValue.Values))
		for i, x := range v.ArrayValue.Values {
			out[i] = attrValue(x)
		}
		return out
	case v.KvlistValue != nil:
		out := make(map[string]any, len(v.KvlistValue.Values))
		for _, kv := range v.KvlistValue.Values {
			out[kv.Key] = attrValue(kv.Value)
		}
		return out
	case v.BytesValue != nil:
		return *v.BytesValue
	}
	return nil
}
