package telemetry

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// fileFlushBytes is the buffer size above which ExportSpans writes the
// buffered lines out; it always writes whole lines in one Write call.
const fileFlushBytes = 64 << 10

// FileExporter is an sdktrace.SpanExporter that writes one JSON object per
// finished span, one per line (JSONL):
//
//	{"trace_id":"…32 hex…","span_id":"…16 hex…","parent_span_id":"…16 hex…",
//	 "name":"work_unit","kind":"consumer","start_unix_nano":…,"end_unix_nano":…,
//	 "status":"unset|ok|error","status_message":"…","attributes":{"t2t.stage":3,…},
//	 "node":"rollout-1","service":"t2t","events":[{"name":…,"time_unix_nano":…,
//	 "attributes":{…}}],"links":[{"trace_id":…,"span_id":…}]}
//
// parent_span_id, status_message, events and links are omitted when empty.
// node and service come from the span's resource (AttrNode and service.name).
// Float attributes that JSON cannot hold are written as the strings "NaN",
// "+Inf" and "-Inf". traces.ReadSpans reads these files back.
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
	// provider, so node and service are looked up once per provider.
	lastRes               *resource.Resource
	lastNode, lastService string
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

// ExportSpans encodes spans into the buffer, writing the buffer out when it
// is full. It returns ErrExporterClosed after Shutdown.
func (e *FileExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return ErrExporterClosed
	}
	for _, s := range spans {
		line, err := json.Marshal(e.record(s))
		if err != nil { // unreachable: every value is JSON-safe
			return fmt.Errorf("telemetry: encode span %q: %w", s.Name(), err)
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

// spanRecord is the JSON form of one span; traces.Span reads it back.
type spanRecord struct {
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentSpanID  string         `json:"parent_span_id,omitempty"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind"`
	StartUnixNano int64          `json:"start_unix_nano"`
	EndUnixNano   int64          `json:"end_unix_nano"`
	Status        string         `json:"status"`
	StatusMessage string         `json:"status_message,omitempty"`
	Attributes    map[string]any `json:"attributes"`
	Node          string         `json:"node"`
	Service       string         `json:"service"`
	Events        []eventRecord  `json:"events,omitempty"`
	Links         []linkRecord   `json:"links,omitempty"`
}

type eventRecord struct {
	Name         string         `json:"name"`
	TimeUnixNano int64          `json:"time_unix_nano"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

type linkRecord struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

func (e *FileExporter) record(s sdktrace.ReadOnlySpan) spanRecord {
	sc := s.SpanContext()
	r := spanRecord{
		TraceID:       sc.TraceID().String(),
		SpanID:        sc.SpanID().String(),
		Name:          s.Name(),
		Kind:          s.SpanKind().String(),
		StartUnixNano: s.StartTime().UnixNano(),
		EndUnixNano:   s.EndTime().UnixNano(),
		Status:        statusString(s.Status().Code),
		StatusMessage: s.Status().Description,
		Attributes:    attrMap(s.Attributes()),
	}
	if r.Attributes == nil {
		r.Attributes = map[string]any{}
	}
	if p := s.Parent(); p.IsValid() {
		r.ParentSpanID = p.SpanID().String()
	}
	if res := s.Resource(); res != e.lastRes {
		e.lastRes = res
		e.lastNode, e.lastService = "", ""
		if res != nil {
			if v, ok := res.Set().Value(AttrNode); ok {
				e.lastNode = v.Emit()
			}
			if v, ok := res.Set().Value(attrServiceName); ok {
				e.lastService = v.Emit()
			}
		}
	}
	r.Node, r.Service = e.lastNode, e.lastService
	for _, ev := range s.Events() {
		r.Events = append(r.Events, eventRecord{
			Name:         ev.Name,
			TimeUnixNano: ev.Time.UnixNano(),
			Attributes:   attrMap(ev.Attributes),
		})
	}
	for _, l := range s.Links() {
		r.Links = append(r.Links, linkRecord{
			TraceID: l.SpanContext.TraceID().String(),
			SpanID:  l.SpanContext.SpanID().String(),
		})
	}
	return r
}

func statusString(c codes.Code) string {
	switch c {
	case codes.Ok:
		return "ok"
	case codes.Error:
		return "error"
	default:
		return "unset"
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]any {
	if len(kvs) == 0 {
		return nil
	}
	m := make(map[string]any, len(kvs))
	for _, kv := range kvs {
		m[string(kv.Key)] = attrValue(kv.Value)
	}
	return m
}

func attrValue(v attribute.Value) any {
	switch v.Type() {
	case attribute.FLOAT64:
		return jsonFloat(v.AsFloat64())
	case attribute.FLOAT64SLICE:
		fs := v.AsFloat64Slice()
		out := make([]any, len(fs))
		for i, f := range fs {
			out[i] = jsonFloat(f)
		}
		return out
	default:
		return v.AsInterface()
	}
}

// jsonFloat returns f, or a string for the values JSON cannot represent.
func jsonFloat(f float64) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	}
	return f
}

var _ sdktrace.SpanExporter = (*FileExporter)(nil)
