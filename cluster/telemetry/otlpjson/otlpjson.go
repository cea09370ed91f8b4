package otlpjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
)

// TracesData is one ExportTraceServiceRequest (the same message as
// opentelemetry.proto.trace.v1.TracesData): the spans of one export, grouped
// by the resource (process) and instrumentation scope (tracer) that made
// them. The collector's file exporter writes one per line.
type TracesData struct {
	ResourceSpans []ResourceSpans `json:"resourceSpans"`
}

// ResourceSpans holds the spans of one resource.
type ResourceSpans struct {
	Resource   Resource     `json:"resource"`
	ScopeSpans []ScopeSpans `json:"scopeSpans,omitempty"`
	SchemaURL  string       `json:"schemaUrl,omitempty"`
}

// Resource describes the process that recorded the spans (service.name,
// t2t.node, …).
type Resource struct {
	Attributes             []KeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
}

// ScopeSpans holds the spans of one instrumentation scope (tracer name).
type ScopeSpans struct {
	Scope     Scope  `json:"scope"`
	Spans     []Span `json:"spans,omitempty"`
	SchemaURL string `json:"schemaUrl,omitempty"`
}

// Scope is an instrumentation scope: the name (and version) given to
// TracerProvider.Tracer.
type Scope struct {
	Name       string     `json:"name,omitempty"`
	Version    string     `json:"version,omitempty"`
	Attributes []KeyValue `json:"attributes,omitempty"`
}

// Span is one finished span. TraceID (32) and SpanID, ParentSpanID (16) are
// lowercase hex; ParentSpanID is empty for a root span.
type Span struct {
	TraceID                string     `json:"traceId"`
	SpanID                 string     `json:"spanId"`
	TraceState             string     `json:"traceState,omitempty"`
	ParentSpanID           string     `json:"parentSpanId,omitempty"`
	Name                   string     `json:"name"`
	Kind                   SpanKind   `json:"kind,omitempty"`
	StartTimeUnixNano      Uint64     `json:"startTimeUnixNano"`
	EndTimeUnixNano        Uint64     `json:"endTimeUnixNano"`
	Attributes             []KeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
	Events                 []Event    `json:"events,omitempty"`
	DroppedEventsCount     uint32     `json:"droppedEventsCount,omitempty"`
	Links                  []Link     `json:"links,omitempty"`
	DroppedLinksCount      uint32     `json:"droppedLinksCount,omitempty"`
	Status                 Status     `json:"status"`
}

// Event is a timed annotation on a span.
type Event struct {
	TimeUnixNano           Uint64     `json:"timeUnixNano"`
	Name                   string     `json:"name"`
	Attributes             []KeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
}

// Link points from a span at another span, possibly of another trace.
type Link struct {
	TraceID                string     `json:"traceId"`
	SpanID                 string     `json:"spanId"`
	TraceState             string     `json:"traceState,omitempty"`
	Attributes             []KeyValue `json:"attributes,omitempty"`
	DroppedAttributesCount uint32     `json:"droppedAttributesCount,omitempty"`
}

// Status is a span's outcome; the zero value is unset.
type Status struct {
	Message string     `json:"message,omitempty"`
	Code    StatusCode `json:"code,omitempty"`
}

// KeyValue is one attribute.
type KeyValue struct {
	Key   string   `json:"key"`
	Value AnyValue `json:"value"`
}

// AnyValue is an attribute value: exactly one field is set (none for an
// empty value).
type AnyValue struct {
	StringValue *string       `json:"stringValue,omitempty"`
	BoolValue   *bool         `json:"boolValue,omitempty"`
	IntValue    *Int64        `json:"intValue,omitempty"`
	DoubleValue *Double       `json:"doubleValue,omitempty"`
	ArrayValue  *ArrayValue   `json:"arrayValue,omitempty"`
	KvlistValue *KeyValueList `json:"kvlistValue,omitempty"`
	BytesValue  *[]byte       `json:"bytesValue,omitempty"` // base64 in JSON
}

// ArrayValue is a list of values.
type ArrayValue struct {
	Values []AnyValue `json:"values,omitempty"`
}

// KeyValueList is a nested map of values.
type KeyValueList struct {
	Values []KeyValue `json:"values,omitempty"`
}

// String returns a string value.
func String(s string) AnyValue { return AnyValue{StringValue: &s} }

// Bool returns a boolean value.
func Bool(b bool) AnyValue { return AnyValue{BoolValue: &b} }

// Int returns an integer value.
func Int(i int64) AnyValue {
	v := Int64(i)
	return AnyValue{IntValue: &v}
}

// Float returns a floating-point value (NaN and ±Inf included).
func Float(f float64) AnyValue {
	v := Double(f)
	return AnyValue{DoubleValue: &v}
}

// Array returns a list value.
func Array(vs ...AnyValue) AnyValue { return AnyValue{ArrayValue: &ArrayValue{Values: vs}} }

// SpanKind is the OTLP span kind enum. It is written as its number and read
// from a number or its name (SPAN_KIND_SERVER).
type SpanKind int32

// The span kinds; their numbers match go.opentelemetry.io/otel/trace.SpanKind.
const (
	SpanKindUnspecified SpanKind = iota
	SpanKindInternal
	SpanKindServer
	SpanKindClient
	SpanKindProducer
	SpanKindConsumer
)

var spanKindNames = [...]string{"SPAN_KIND_UNSPECIFIED", "SPAN_KIND_INTERNAL", "SPAN_KIND_SERVER",
	"SPAN_KIND_CLIENT", "SPAN_KIND_PRODUCER", "SPAN_KIND_CONSUMER"}

var spanKindText = [...]string{"unspecified", "internal", "server", "client", "producer", "consumer"}

// String returns the kind in lower case ("internal", "consumer", …), as
// go.opentelemetry.io/otel/trace.SpanKind does; "unspecified" for unknown
// numbers.
func (k SpanKind) String() string {
	if k < 0 || int(k) >= len(spanKindText) {
		return spanKindText[0]
	}
	return spanKindText[k]
}

// UnmarshalJSON reads a number or an enum name.
func (k *SpanKind) UnmarshalJSON(b []byte) error {
	n, err := enumJSON(b, spanKindNames[:])
	if err != nil {
		return fmt.Errorf("otlpjson: span kind: %w", err)
	}
	*k = SpanKind(n)
	return nil
}

// StatusCode is the OTLP status code enum. It is written as its number and
// read from a number or its name (STATUS_CODE_ERROR). Its numbers differ from
// go.opentelemetry.io/otel/codes.Code (there Error is 1 and Ok 2).
type StatusCode int32

// The status codes.
const (
	StatusUnset StatusCode = iota
	StatusOk
	StatusError
)

var statusNames = [...]string{"STATUS_CODE_UNSET", "STATUS_CODE_OK", "STATUS_CODE_ERROR"}

var statusText = [...]string{"unset", "ok", "error"}

// String returns "unset", "ok" or "error" ("unset" for unknown numbers).
func (c StatusCode) String() string {
	if c < 0 || int(c) >= len(statusText) {
		return statusText[0]
	}
	return statusText[c]
}

// UnmarshalJSON reads a number or an enum name.
func (c *StatusCode) UnmarshalJSON(b []byte) error {
	n, err := enumJSON(b, statusNames[:])
	if err != nil {
		return fmt.Errorf("otlpjson: status code: %w", err)
	}
	*c = StatusCode(n)
	return nil
}

// enumJSON reads an enum: a JSON number, or a string holding a number or
// one of names (whose index is its number). null reads as 0.
func enumJSON(b []byte, names []string) (int32, error) {
	s, quoted, err := scalarJSON(b)
	if err != nil || s == "" {
		return 0, err
	}
	if quoted {
		for i, n := range names {
			if s == n {
				return int32(i), nil
			}
		}
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("%s is neither a number nor a known name", b)
	}
	return int32(n), nil
}

// Uint64 is a fixed64 field (span times in Unix nanoseconds). ProtoJSON
// writes 64-bit integers as decimal strings; it is read from a string or a
// number.
type Uint64 uint64

// MarshalJSON writes a decimal string.
func (u Uint64) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, strconv.FormatUint(uint64(u), 10)), nil
}

// UnmarshalJSON reads a decimal string or number.
func (u *Uint64) UnmarshalJSON(b []byte) error {
	s, _, err := scalarJSON(b)
	if err != nil || s == "" {
		return err
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return fmt.Errorf("otlpjson: %s is not an unsigned 64-bit integer", b)
	}
	*u = Uint64(n)
	return nil
}

// Int64 is an int64 field (intValue), written as a decimal string and read
// from a string or a number.
type Int64 int64

// MarshalJSON writes a decimal string.
func (i Int64) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, strconv.FormatInt(int64(i), 10)), nil
}

// UnmarshalJSON reads a decimal string or number.
func (i *Int64) UnmarshalJSON(b []byte) error {
	s, _, err := scalarJSON(b)
	if err != nil || s == "" {
		return err
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return fmt.Errorf("otlpjson: %s is not a 64-bit integer", b)
	}
	*i = Int64(n)
	return nil
}

// Double is a double field (doubleValue): a JSON number, or the strings
// "NaN", "Infinity" and "-Infinity" that ProtoJSON uses for values JSON
// cannot hold.
type Double float64

// MarshalJSON writes a number, or "NaN", "Infinity", "-Infinity".
func (d Double) MarshalJSON() ([]byte, error) {
	f := float64(d)
	switch {
	case math.IsNaN(f):
		return []byte(`"NaN"`), nil
	case math.IsInf(f, 1):
		return []byte(`"Infinity"`), nil
	case math.IsInf(f, -1):
		return []byte(`"-Infinity"`), nil
	}
	return json.Marshal(f)
}

// UnmarshalJSON reads a number, a string holding one, or "NaN",
// "Infinity", "-Infinity".
func (d *Double) UnmarshalJSON(b []byte) error {
	s, quoted, err := scalarJSON(b)
	if err != nil || s == "" {
		return err
	}
	if quoted {
		switch s {
		case "NaN":
			*d = Double(math.NaN())
			return nil
		case "Infinity":
			*d = Double(math.Inf(1))
			return nil
		case "-Infinity":
			*d = Double(math.Inf(-1))
			return nil
		}
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) {
		return fmt.Errorf("otlpjson: %s is not a double", b)
	}
	*d = Double(f)
	return nil
}

// scalarJSON returns the text of a JSON scalar: a string's contents (quoted
// true) or a number's digits; "" for null.
func scalarJSON(b []byte) (s string, quoted bool, err error) {
	b = bytes.TrimSpace(b)
	switch {
	case string(b) == "null":
		return "", false, nil
	case len(b) > 0 && b[0] == '"':
		if err := json.Unmarshal(b, &s); err != nil {
			return "", false, err
		}
		return s, true, nil
	case len(b) > 0 && (b[0] == '-' || b[0] >= '0' && b[0] <= '9'):
		return string(b), false, nil
	}
	return "", false, fmt.Errorf("otlpjson: %s is not a number or a string", b)
}
