package telemetry

import (
	"context"

	"go.opentelemetry.io/otel/propagation"
)

// propagator is W3C tracecontext (headers "traceparent" and "tracestate").
// A value with no state, shared read-only.
var propagator = propagation.TraceContext{}

// Inject returns the W3C tracecontext headers of the span in ctx, to carry
// in a message (WorkUnit.TraceHeaders). It returns nil when ctx holds no
// valid span context (tracing off and no remote parent), so untraced
// messages carry nothing.
func Inject(ctx context.Context) map[string]string {
	carrier := propagation.MapCarrier{}
	propagator.Inject(ctx, carrier)
	if len(carrier) == 0 {
		return nil
	}
	return carrier
}

// Extract returns ctx with the remote span context found in headers (as
// written by Inject on another node), so that a span started from it is a
// child of the sender's span. Missing or malformed headers leave ctx as it
// is: the next span starts a new trace.
func Extract(ctx context.Context, headers map[string]string) context.Context {
	if len(headers) == 0 {
		return ctx
	}
	return propagator.Extract(ctx, propagation.MapCarrier(headers))
}
