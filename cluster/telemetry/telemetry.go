package telemetry

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// DefaultServiceName is the service.name used when Options.ServiceName is empty.
const DefaultServiceName = "t2t"

// Options selects what a node records and where it goes. The zero value is
// valid and records nothing (a no-op provider).
type Options struct {
	// ServiceName is the resource attribute service.name. Default "t2t".
	ServiceName string
	// NodeID names the node (resource attribute t2t.node); `t2t traces`
	// groups work by it. Default: the host name.
	NodeID string
	// OTLPEndpoint, when set, exports spans with OTLP over HTTP/protobuf
	// (the collector's port 4318, path /v1/traces). Forms: "host:port"
	// (plain HTTP, meant for a collector on the same host or pod network),
	// "http://host:port[/path]" and "https://host:port[/path]" (TLS with the
	// system roots). Default: off.
	OTLPEndpoint string
	// TraceFile, when set, appends the finished spans to this file as OTLP
	// JSON, one line per exported batch (see FileExporter). Use one file per
	// node. Default: off.
	TraceFile string
	// SampleRatio is the fraction of new traces recorded, in [0, 1]; 0 means
	// the default, 1 (record everything). Spans with a remote parent follow
	// the parent's decision, so a trace is recorded on every node or none.
	SampleRatio float64
}

// Validate reports the first invalid field as a *fielderr.Error.
func (o Options) Validate() error {
	if math.IsNaN(o.SampleRatio) || o.SampleRatio < 0 || o.SampleRatio > 1 {
		return &fielderr.Error{Kind: ErrInvalidOptions, Field: "SampleRatio", Value: o.SampleRatio, Reason: "must be in [0, 1] (0 means 1)"}
	}
	if o.OTLPEndpoint != "" {
		if _, err := parseOTLPEndpoint(o.OTLPEndpoint); err != nil {
			return &fielderr.Error{Kind: ErrInvalidOptions, Field: "OTLPEndpoint", Value: o.OTLPEndpoint, Reason: err.Error()}
		}
	}
	return nil
}

// otlpTarget is a parsed OTLPEndpoint.
type otlpTarget struct {
	hostPort string
	path     string // "" for the exporter's default /v1/traces
	insecure bool
}

func parseOTLPEndpoint(s string) (otlpTarget, error) {
	if !strings.Contains(s, "://") {
		host, port, err := net.SplitHostPort(s)
		if err != nil || port == "" {
			return otlpTarget{}, errors.New("want host:port or an http(s) URL")
		}
		return otlpTarget{hostPort: net.JoinHostPort(host, port), insecure: true}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return otlpTarget{}, errors.New("not a URL")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return otlpTarget{}, errors.New("scheme must be http or https")
	}
	if u.Host == "" {
		return otlpTarget{}, errors.New("URL has no host")
	}
	t := otlpTarget{hostPort: u.Host, insecure: u.Scheme == "http"}
	if u.Path != "" && u.Path != "/" {
		t.path = u.Path
	}
	return t, nil
}

// Telemetry is one node's tracing and metrics. Build it with Setup, hand
// Tracer to the actors, and Shutdown it when the node stops. Nothing is
// global: call SetGlobal only if a library needs otel's global provider.
// Its methods are safe for concurrent use.
type Telemetry struct {
	opt      Options
	provider trace.TracerProvider     // *sdktrace.TracerProvider or noop
	sdk      *sdktrace.TracerProvider // nil when no exporter is on
	file     *FileExporter            // nil without TraceFile
	metrics  *Metrics
}

// Setup builds the tracer provider with the exporters opt asks for (file,
// OTLP, both or none) and a metrics registry whose samples carry the label
// node=NodeID. With no exporter the provider is otel's no-op one: spans cost
// a context lookup and nothing is written. Setup opens the trace file; the
// OTLP exporter connects lazily, so an unreachable collector is not an error
// here (export failures go to otel's error handler).
func Setup(ctx context.Context, opt Options) (*Telemetry, error) {
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	metrics, err := NewMetrics(map[string]string{"node": opt.NodeID})
	if err != nil {
		return nil, err
	}
	t := &Telemetry{opt: opt, metrics: metrics, provider: noop.NewTracerProvider()}
	if opt.TraceFile == "" && opt.OTLPEndpoint == "" {
		return t, nil
	}

	res := resource.NewSchemaless(
		attribute.String(AttrServiceName, opt.ServiceName),
		attribute.String(AttrNode, opt.NodeID),
	)
	var sampler sdktrace.Sampler = sdktrace.AlwaysSample()
	if opt.SampleRatio < 1 {
		sampler = sdktrace.TraceIDRatioBased(opt.SampleRatio)
	}
	popts := []sdktrace.TracerProviderOption{
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sampler)),
	}
	if opt.TraceFile != "" {
		fe, err := OpenFileExporter(opt.TraceFile)
		if err != nil {
			return nil, err
		}
		t.file = fe
		// Blocking: the file exporter only encodes into memory, so waiting
		// for it is cheap, and analysis needs every span (no silent drops).
		popts = append(popts, sdktrace.WithBatcher(fe, sdktrace.WithBlocking()))
	}
	if opt.OTLPEndpoint != "" {
		oe, err := newOTLPExporter(ctx, opt.OTLPEndpoint)
		if err != nil {
			if t.file != nil {
				_ = t.file.Shutdown(ctx)
			}
			return nil, fmt.Errorf("telemetry: OTLP exporter: %w", err)
		}
		// Non-blocking: a slow collector drops spans (counted by the SDK)
		// rather than stalling the actors.
		popts = append(popts, sdktrace.WithBatcher(oe))
	}
	t.sdk = sdktrace.NewTracerProvider(popts...)
	t.provider = t.sdk
	return t, nil
}

// withDefaults fills in the service name, the node ID (the host name) and
// the sample ratio where opt leaves them zero.
func (opt Options) withDefaults() (Options, error) {
	if opt.ServiceName == "" {
		opt.ServiceName = DefaultServiceName
	}
	if opt.NodeID == "" {
		host, err := os.Hostname()
		if err != nil {
			return opt, fmt.Errorf("telemetry: default NodeID: %w", err)
		}
		opt.NodeID = host
	}
	if opt.SampleRatio == 0 {
		opt.SampleRatio = 1
	}
	return opt, nil
}

// newOTLPExporter builds the OTLP/HTTP span exporter for a validated
// endpoint.
func newOTLPExporter(ctx context.Context, endpoint string) (sdktrace.SpanExporter, error) {
	tgt, _ := parseOTLPEndpoint(endpoint) // validated by Options.Validate
	hopts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(tgt.hostPort)}
	if tgt.insecure {
		hopts = append(hopts, otlptracehttp.WithInsecure())
	}
	if tgt.path != "" {
		hopts = append(hopts, otlptracehttp.WithURLPath(tgt.path))
	}
	return otlptracehttp.New(ctx, hopts...)
}

// Options returns the options in effect, defaults filled in.
func (t *Telemetry) Options() Options { return t.opt }

// Enabled reports whether spans are recorded (some exporter is on).
func (t *Telemetry) Enabled() bool { return t.sdk != nil }

// Tracer returns a tracer of this node's provider (instrumentation scope name).
func (t *Telemetry) Tracer(name string) trace.Tracer { return t.provider.Tracer(name) }

// TracerProvider returns this node's provider (no-op without exporters).
func (t *Telemetry) TracerProvider() trace.TracerProvider { return t.provider }

// Metrics returns this node's metrics.
func (t *Telemetry) Metrics() *Metrics { return t.metrics }

// MetricsHandler serves this node's metrics (Metrics.Handler).
func (t *Telemetry) MetricsHandler() http.Handler { return t.metrics.Handler() }

// SetGlobal installs this node's provider and the W3C tracecontext
// propagator as otel's globals, for libraries that only use those. t2t's own
// code never needs it.
func (t *Telemetry) SetGlobal() {
	otel.SetTracerProvider(t.provider)
	otel.SetTextMapPropagator(propagator)
}

// ForceFlush exports every ended span and writes the trace file's buffer.
func (t *Telemetry) ForceFlush(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	err := t.sdk.ForceFlush(ctx)
	if t.file != nil {
		err = errors.Join(err, t.file.ForceFlush(ctx))
	}
	if err != nil {
		return fmt.Errorf("telemetry: flush: %w", err)
	}
	return nil
}

// Shutdown exports the spans still queued, flushes and closes the trace file
// and stops the exporters. Spans ended later are dropped. The trace file is
// flushed and closed even when ctx expires first.
func (t *Telemetry) Shutdown(ctx context.Context) error {
	if t.sdk == nil {
		return nil
	}
	err := t.sdk.Shutdown(ctx)
	if t.file != nil {
		// The provider shuts the file exporter down first (it is registered
		// first); this is a no-op then, and the safety net when ctx ran out.
		err = errors.Join(err, t.file.Shutdown(context.WithoutCancel(ctx)))
	}
	if err != nil {
		return fmt.Errorf("telemetry: shutdown: %w", err)
	}
	return nil
}
