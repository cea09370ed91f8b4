package traces

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"
)

// Span is one finished span as written by telemetry.FileExporter (one JSON
// object per line; see that type for the format).
type Span struct {
	TraceID       string         `json:"trace_id"`
	SpanID        string         `json:"span_id"`
	ParentSpanID  string         `json:"parent_span_id,omitempty"`
	Name          string         `json:"name"`
	Kind          string         `json:"kind"` // internal, server, client, producer, consumer
	StartUnixNano int64          `json:"start_unix_nano"`
	EndUnixNano   int64          `json:"end_unix_nano"`
	Status        string         `json:"status"` // unset, ok, error
	StatusMessage string         `json:"status_message,omitempty"`
	Attributes    map[string]any `json:"attributes,omitempty"` // numbers as json.Number
	Node          string         `json:"node"`
	Service       string         `json:"service"`
	Events        []Event        `json:"events,omitempty"`
	Links         []Link         `json:"links,omitempty"`
}

// Event is a timed annotation on a span.
type Event struct {
	Name         string         `json:"name"`
	TimeUnixNano int64          `json:"time_unix_nano"`
	Attributes   map[string]any `json:"attributes,omitempty"`
}

// Link points at another span (e.g. a learner update at the work units whose
// samples it used).
type Link struct {
	TraceID string `json:"trace_id"`
	SpanID  string `json:"span_id"`
}

// Duration is End - Start.
func (s *Span) Duration() time.Duration { return time.Duration(s.EndUnixNano - s.StartUnixNano) }

// Attr returns attribute key as text (numbers as written, e.g. "3"; other
// values in Go's %v form) and whether it is present.
func (s *Span) Attr(key string) (string, bool) {
	v, ok := s.Attributes[key]
	if !ok {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	case int64:
		return strconv.FormatInt(x, 10), true
	case int:
		return strconv.Itoa(x), true
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), true
	default:
		return fmt.Sprint(x), true
	}
}

// ParseError is a line of a span file that does not hold a valid span.
type ParseError struct {
	File string // the path given to ReadSpans, or the name given to DecodeSpans
	Line int    // 1-based
	Err  error  // the JSON error, or ErrInvalidSpan
}

func (e *ParseError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

// Unwrap returns the underlying error.
func (e *ParseError) Unwrap() error { return e.Err }

// ErrInvalidSpan is wrapped (inside a *ParseError) for a line that is valid
// JSON but not a valid span: missing trace_id, span_id or name, or an end
// before the start.
var ErrInvalidSpan = errors.New("traces: invalid span")

// ReadSpans reads span files (JSONL, as written by telemetry.FileExporter)
// and returns all their spans in file order. Blank lines are skipped; any
// other line that is not a valid span fails with a *ParseError naming
// file:line. Files of several nodes may be given in any order.
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

// DecodeSpans reads spans from r; name is used in errors (e.g. "stdin").
func DecodeSpans(r io.Reader, name string) ([]Span, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var spans []Span
	for line := 1; ; line++ {
		b, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(b)) > 0 {
			s, perr := parseSpan(b)
			if perr != nil {
				return nil, &ParseError{File: name, Line: line, Err: perr}
			}
			spans = append(spans, s)
		}
		if err == io.EOF {
			return spans, nil
		}
		if err != nil {
			return nil, fmt.Errorf("traces: read %s: %w", name, err)
		}
	}
}

func parseSpan(b []byte) (Span, error) {
	var s Span
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&s); err != nil {
		return Span{}, err
	}
	if dec.More() {
		return Span{}, errors.New("more than one JSON value on the line")
	}
	switch {
	case s.TraceID == "":
		return Span{}, fmt.Errorf("%w: no trace_id", ErrInvalidSpan)
	case s.SpanID == "":
		return Span{}, fmt.Errorf("%w: no span_id", ErrInvalidSpan)
	case s.Name == "":
		return Span{}, fmt.Errorf("%w: no name", ErrInvalidSpan)
	case s.EndUnixNano < s.StartUnixNano:
		return Span{}, fmt.Errorf("%w: end_unix_nano %d before start_unix_nano %d", ErrInvalidSpan, s.EndUnixNano, s.StartUnixNano)
	}
	return s, nil
}
