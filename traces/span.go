package traces

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// Span is one finished span, flattened from the OTLP JSON that
// telemetry.FileExporter writes (see ReadSpans): the resource's node and
// service are copied onto each span, enums become lower-case words.
type Span struct {
	TraceID       string
	SpanID        string
	ParentSpanID  string // "" for a root span
	Name          string
	Kind          string // unspecified, internal, server, client, producer, consumer
	StartUnixNano int64
	EndUnixNano   int64
	Status        string // unset, ok, error
	StatusMessage string
	// Attributes maps each key to a string, a bool, a json.Number (integers
	// and finite doubles, as written), a float64 (NaN, ±Inf), a []any
	// (arrays), a map[string]any (key-value lists) or a []byte.
	Attributes map[string]any
	Node       string // resource attribute t2t.node
	Service    string // resource attribute service.name
	Events     []Event
	Links      []Link
}

// Event is a timed annotation on a span.
type Event struct {
	Name         string
	TimeUnixNano int64
	Attributes   map[string]any // as Span.Attributes; nil when none
}

// Link points at another span (e.g. a learner update at the work units whose
// samples it used).
type Link struct {
	TraceID string
	SpanID  string
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
