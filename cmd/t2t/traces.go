package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/traces"
)

func runTraces(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t traces", "t2t traces [--svg FILE] SPANS.jsonl... | --otlp-json DIR", stderr)
	svg := fs.String("svg", "", "also write an SVG timeline (one row per node) to this file")
	otlpDir := fs.String("otlp-json", "", "read OTLP JSON (an OpenTelemetry Collector file exporter's *.json / *.jsonl) from this folder instead of span files")
	if err := fs.Parse(args); err != nil {
		if err.Error() == "flag: help requested" {
			return err
		}
		return &usageError{err}
	}
	var (
		spans []traces.Span
		err   error
	)
	switch {
	case *otlpDir != "" && fs.NArg() > 0:
		return badInput("give span files or --otlp-json, not both")
	case *otlpDir != "":
		spans, err = traces.ReadOTLPJSON(*otlpDir)
	case fs.NArg() == 0:
		return badInput("name at least one span file (written by --trace-file), or --otlp-json DIR")
	default:
		spans, err = traces.ReadSpans(fs.Args()...)
	}
	if err != nil {
		return badInput("%v", err)
	}
	rep := traces.Analyze(spans)
	if _, err := io.WriteString(stdout, rep.Text()); err != nil {
		return err
	}
	if *svg != "" {
		if err := writeFileAtomic(*svg, traces.TimelineSVG(spans)); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "timeline → %s\n", *svg)
	}
	return nil
}

// telemetryFlags are the tracing flags shared by train and node.
type telemetryFlags struct {
	traceFile, otlp, node *string
}

func addTelemetryFlags(fs interface {
	String(name, value, usage string) *string
}) telemetryFlags {
	host, _ := os.Hostname()
	return telemetryFlags{
		traceFile: fs.String("trace-file", "", "write OpenTelemetry spans to this JSONL file (read it with 't2t traces')"),
		otlp:      fs.String("otlp", "", "export spans over OTLP/HTTP to host:port (an OpenTelemetry collector, Jaeger)"),
		node:      fs.String("node-name", host, "this node's name in traces and metrics"),
	}
}

// setup starts tracing; the returned stop flushes it.
func (f telemetryFlags) setup(ctx context.Context) (*telemetry.Telemetry, func(), error) {
	t, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "t2t", NodeID: *f.node, TraceFile: *f.traceFile, OTLPEndpoint: *f.otlp})
	if err != nil {
		return nil, nil, badInput("tracing: %v", err)
	}
	return t, func() {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		t.Shutdown(sctx)
	}, nil
}
