package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/t2t-lab/t2t/cluster/telemetry/otlpjson"
)

// fileFlushBytes is the buffer size above which ExportSpans writes the
// buffered lines out; it always writes whole lines in one Write call.
const fileFlushBytes = 64 << 10

// FileExporter is an sdktrace.SpanExporter that writes OTLP JSON as the
// OpenTelemetry Collector's file exporter does: each ExportSpans call becomes
// one line holding one ExportTraceServiceRequest (otlpjson.TracesData), its
// spans grouped by resource and instrumentation scope:
//
//	{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"t2t"}},…]},
//	 "scopeSpans":[{"scope":{"name":"t2t/actors"},"spans":[{"traceId":"…32 hex…","spanId":"…16 hex…",
//	 "parentSpanId":"…","name":"work_unit","kind":5,"startTimeUnixNano":"…","endTimeUnixNano":"…",
//	 "attributes":[{"key":"t2t.stage","value":{"intValue":"3"}},…],"events":[…],"links":[…],
//	 "status":{"code":2,"message":"…"}}]}]}]}
//
// The resource carries the node (AttrNode) and service.name. Package otlpjson
// documents the encoding; traces.ReadSpans reads these files back, and any
// OTLP JSON tool (the collector's file receiver, otel-desktop-viewer) reads
// them too.
//
// Lines are buffered in memory and written when the buffer passes 64 KiB,
// on ForceFlush and on Shutdown; every Write carries whole lines only, so
// several processes may append to one file opened with O_APPEND on a local
// file system without tearing lines. One file per node is still the
// recommended setup (no reliance on append atomicity, no contention, and a
// crashed node loses only its own unflushed tail); `t2t traces` reads any
// number of files.
//
// A FileExporter is safe for concurrent use.
type FileExporter struct {
	mu     sync.Mutex
	w      io.Writer
	closer io.Closer // nil when the caller owns w
	buf    []byte
	closed bool

	// resource cache: the SDK passes the same *Resource for every span of a
	// provider, so its attributes are converted once per provider.
	lastRes   *resource.Resource
	lastAttrs []otlpjson.KeyValue
}

// NewFileExporter returns an exporter writing to w. The caller owns w:
// Shutdown flushes but does not close it.
func NewFileExporter(w io.Writer) *FileExporter {
	return &FileExporter{w: w}
}

// OpenFileExporter opens (creating it if needed, mode 0644) the file at path
// for appending and returns an exporter that owns it: Shutdown closes it.
func OpenFileExporter(path string) (*FileExporter, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("telemetry: open trace file: %w", err)
	}
	return &FileExporter{w: f, closer: f}, nil
}

// ExportSpans encodes spans as one line into the buffer, writing the buffer
// out when it is full. It returns ErrExporterClosed after Shutdown.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrExporterClosed
	}
	if len(spans) > 0 {
		req := e.request(spans)
		line, err := json.Marshal(&req)
		if err != nil { // unreachable: every value is JSON-safe
			return fmt.Errorf("telemetry: encode %d spans: %w", len(spans), err)
		}
		e.buf = append(e.buf, line...)
		e.buf = append(e.buf, '\n')
	}
	if len(e.buf) >= fileFlushBytes {
		return e.writeLocked()
	}
	return nil
}

// ForceFlush writes the buffered lines to the underlying writer. It does not
// fsync.
func (e *FileExporter) ForceFlush(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	return e.writeLocked()
}

// Shutdown writes the buffered lines and closes the file when the exporter
// owns it. Later calls return nil; later ExportSpans calls fail.
func (e *FileExporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	err := e.writeLocked()
	if e.closer != nil {
		if cerr := e.closer.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("telemetry: close trace file: %w", cerr)
		}
	}
	return err
}

// writeLocked writes the whole buffer in one call. On error the buffered
// lines are dropped (they cannot be written whole any more).
func (e *FileExporter) writeLocked() error {
	if len(e.buf) == 0 {
		return nil
	}
	_, err := e.w.Write(e.buf)
	e.buf = e.buf[:0]
	if err != nil {
		return fmt.Errorf("telemetry: write trace file: %w", err)
	}
	return nil
}

// request groups spans by resource and then by instrumentation scope, each
// group in order of first appearance and spans in the order given.
func (e *FileExporter) request(spans []sdktrace.ReadOnlySpan) otlpjson.TracesData {
	var (
		req    otlpjson.TracesData
		resIdx = map[*resource.Resource]int{}
	)
	type scopeKey struct {
		res int
		sc  instrumentation.Scope
	}
	scopeIdx := map[scopeKey]int{}
	for _, s := range spans {
		ri, ok := resIdx[s.Resource()]
		if !ok {
			ri = len(req.ResourceSpans)
			resIdx[s.Resource()] = ri
			req.ResourceSpans = append(req.ResourceSpans, otlpjson.ResourceSpans{
				Resource:  otlpjson.Resource{Attributes: e.resourceAttrs(s.Resource())},
				SchemaURL: s.Resource().SchemaURL(),
			})
		}
		rs := &req.ResourceSpans[ri]
		sk := scopeKey{ri, s.InstrumentationScope()}
		si, ok := scopeIdx[sk]
		if !ok {
			si = len(rs.ScopeSpans)
			scopeIdx[sk] = si
			rs.ScopeSpans = append(rs.ScopeSpans, otlpjson.ScopeSpans{
				Scope:     otlpjson.Scope{Name: sk.sc.Name, Version: sk.sc.Version},
				SchemaURL: sk.sc.SchemaURL,
			})
		}
		ss := &rs.ScopeSpans[si]
		ss.Spans = append(ss.Spans, otlpSpan(s))
	}
	return req
}

// resourceAttrs converts res's attributes, once per resource.
func (e *FileExporter) resourceAttrs(res *resource.Resource) []otlpjson.KeyValue {
	if res != e.lastRes {
		e.lastRes = res
		e.lastAttrs = nil
		if res != nil {
			e.lastAttrs = otlpAttrs(res.Attributes())
		}
	}
	return e.lastAttrs
}

func otlpSpan(s sdktrace.ReadOnlySpan) otlpjson.Span {
	sc := s.SpanContext()
	out := otlpjson.Span{
		TraceID:                sc.TraceID().String(),
		SpanID:                 sc.SpanID().String(),
		TraceState:             sc.TraceState().String(),
		Name:                   s.Name(),
		Kind:                   otlpjson.SpanKind(s.SpanKind()),
		StartTimeUnixNano:      unixNano(s.StartTime()),
		EndTimeUnixNano:        unixNano(s.EndTime()),
		Attributes:             otlpAttrs(s.Attributes()),
		DroppedAttributesCount: uint32(s.DroppedAttributes()),
		DroppedEventsCount:     uint32(s.DroppedEvents()),
		DroppedLinksCount:      uint32(s.DroppedLinks()),
		Status:                 otlpjson.Status{Code: otlpStatus(s.Status().Code), Message: s.Status().Description},
	}
	if p := s.Parent(); p.IsValid() {
		out.ParentSpanID = p.SpanID().String()
	}
	for _, ev := range s.Events() {
		out.Events = append(out.Events, otlpjson.Event{
			TimeUnixNano:           unixNano(ev.Time),
			Name:                   ev.Name,
			Attributes:             otlpAttrs(ev.Attributes),
			DroppedAttributesCount: uint32(ev.DroppedAttributeCount),
		})
	}
	for _, l := range s.Links() {
		out.Links = append(out.Links, otlpjson.Link{
			TraceID:                l.SpanContext.TraceID().String(),
			SpanID:                 l.SpanContext.SpanID().String(),
			TraceState:             l.SpanContext.TraceState().String(),
			Attributes:             otlpAttrs(l.Attributes),
			DroppedAttributesCount: uint32(l.DroppedAttributeCount),
		})
	}
	return out
}

// unixNano is t in Unix nanoseconds; 0 for times before 1970 (OTLP's
// "unset").
func unixNano(t time.Time) otlpjson.Uint64 {
	return otlpjson.Uint64(max(t.UnixNano(), 0))
}

// otlpStatus maps otel's codes (Error 1, Ok 2) to OTLP's (Ok 1, Error 2).
func otlpStatus(c codes.Code) otlpjson.StatusCode {
	switch c {
	case codes.Ok:
		return otlpjson.StatusOk
	case codes.Error:
		return otlpjson.StatusError
	default:
		return otlpjson.StatusUnset
	}
}

func otlpAttrs(kvs []attribute.KeyValue) []otlpjson.KeyValue {
	if len(kvs) == 0 {
		return nil
	}
	out := make([]otlpjson.KeyValue, len(kvs))
	for i, kv := range kvs {
		out[i] = otlpjson.KeyValue{Key: string(kv.Key), Value: otlpValue(kv.Value)}
	}
	return out
}

func otlpValue(v attribute.Value) otlpjson.AnyValue {
	switch v.Type() {
	case attribute.BOOL:
		return otlpjson.Bool(v.AsBool())
	case attribute.INT64:
		return otlpjson.Int(v.AsInt64())
	case attribute.FLOAT64:
		return otlpjson.Float(v.AsFloat64())
	case attribute.STRING:
		return otlpjson.String(v.AsString())
	case attribute.BOOLSLICE:
		return otlpArray(v.AsBoolSlice(), otlpjson.Bool)
	case attribute.INT64SLICE:
		return otlpArray(v.AsInt64Slice(), otlpjson.Int)
	case attribute.FLOAT64SLICE:
		return otlpArray(v.AsFloat64Slice(), otlpjson.Float)
	case attribute.STRINGSLICE:
		return otlpArray(v.AsStringSlice(), otlpjson.String)
	default: // INVALID: an empty value
		return otlpjson.AnyValue{}
	}
}

func otlpArray[T any](xs []T, conv func(T) otlpjson.AnyValue) otlpjson.AnyValue {
	vs := make([]otlpjson.AnyValue, len(xs))
	for i, x := range xs {
		vs[i] = conv(x)
	}
	return otlpjson.Array(vs...)
}

var _ sdktrace.SpanExporter = (*FileExporter)(nil)
