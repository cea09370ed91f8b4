package telemetry

import (
	"errors"
	"fmt"
)

// Sentinel errors of package telemetry. Match them with errors.Is; the typed
// errors below wrap them and carry the details (errors.As).
var (
	// ErrInvalidOptions: Options that fail Validate. Wrapped by *OptionsError.
	ErrInvalidOptions = errors.New("telemetry: invalid options")
	// ErrExporterClosed: a FileExporter used after Shutdown.
	ErrExporterClosed = errors.New("telemetry: file exporter closed")
	// ErrMetricName: a metric or label name outside [a-zA-Z_:][a-zA-Z0-9_:]*.
	// Wrapped by *MetricError.
	ErrMetricName = errors.New("telemetry: invalid metric name")
	// ErrMetricKind: a metric name already registered as another kind
	// (counter vs gauge). Wrapped by *MetricError.
	ErrMetricKind = errors.New("telemetry: metric registered with another kind")
)

// OptionsError names the Options field that failed validation.
type OptionsError struct {
	Field  string // e.g. "SampleRatio"
	Value  any    // the offending value
	Reason string // what is wrong, e.g. "must be in [0, 1]"
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("telemetry: invalid options: %s=%v: %s", e.Field, e.Value, e.Reason)
}

// Unwrap returns ErrInvalidOptions.
func (e *OptionsError) Unwrap() error { return ErrInvalidOptions }

// MetricError names a metric registration that failed.
type MetricError struct {
	Name string // the metric (or label) name
	Err  error  // ErrMetricName or ErrMetricKind
}

func (e *MetricError) Error() string { return fmt.Sprintf("%v: %q", e.Err, e.Name) }

// Unwrap returns ErrMetricName or ErrMetricKind.
func (e *MetricError) Unwrap() error { return e.Err }
