package telemetry

import (
	"errors"
	"fmt"
)

// Sentinel errors of package telemetry. Match them with errors.Is; the typed
// errors below wrap them and carry the details (errors.As).
var (
	// ErrInvalidOptions: Options that fail Validate. Wrapped by a
	// *fielderr.Error naming the field.
	ErrInvalidOptions = errors.New("telemetry: invalid options")
	// ErrExporterClosed: a FileExporter used after Shutdown.
	ErrExporterClosed = errors.New("telemetry: file exporter closed")
	// ErrMetric: the metrics registry refused a metric (a name taken, an
	// invalid metric or label name, a label value that is not UTF-8).
	// Wrapped by *MetricError.
	ErrMetric = errors.New("telemetry: metric refused")
)

// MetricError names a metric registration that failed.
type MetricError struct {
	Name string // what was registered: a metric's description, or "go" or "process"
	Err  error  // client_golang's error, e.g. a prometheus.AlreadyRegisteredError
}

func (e *MetricError) Error() string { return fmt.Sprintf("%v: %s: %v", ErrMetric, e.Name, e.Err) }

// Unwrap returns ErrMetric and client_golang's error.
func (e *MetricError) Unwrap() []error { return []error{ErrMetric, e.Err} }
