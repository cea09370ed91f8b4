// Package telemetry is t2t's tracing and metrics setup: one OpenTelemetry
// TracerProvider per node with the exporters asked for, a span file exporter
// writing OTLP JSON (the schema is package otlpjson; `t2t traces`, package
// traces, analyses the files), W3C tracecontext
// propagation through message headers, the span, attribute and metric names
// every actor uses (names.go), and a node's /metrics: a
// prometheus/client_golang registry with t2t's counters, gauges and latency
// histograms (exemplars link an observation to its trace), the Go runtime
// and the process collectors (Metrics).
//
// # Use
//
//	tel, err := telemetry.Setup(ctx, telemetry.Options{
//		NodeID:       "rollout-1",
//		TraceFile:    "traces/rollout-1.jsonl", // one file per node
//		OTLPEndpoint: "localhost:4318",         // OTLP/HTTP collector (optional)
//	})
//	defer tel.Shutdown(ctx)                     // flushes the file
//	tr := tel.Tracer("t2t/actors")
//
//	// node A (coordinator)
//	ctx, stage := tr.Start(ctx, telemetry.SpanStage,
//		trace.WithAttributes(attribute.Int(telemetry.AttrStage, 3)))
//	unit.TraceHeaders = telemetry.Inject(ctx)
//
//	// node B (rollout), on receiving unit
//	ctx = telemetry.Extract(ctx, unit.TraceHeaders)
//	ctx, span := tr.Start(ctx, telemetry.SpanWorkUnit, trace.WithSpanKind(trace.SpanKindConsumer))
//	defer span.End()                           // a child of A's stage span
//
//	http.Handle("/metrics", tel.MetricsHandler())
//	tel.Metrics().Episodes.Add(n)
//	tel.Metrics().ObserveUnit(time.Since(t0), span.SpanContext())
//
// With neither TraceFile nor OTLPEndpoint, Setup returns a no-op provider:
// starting a span costs a context lookup, no goroutine runs and no file is
// created. Context received from another node still passes through
// (Extract then Inject forwards it unchanged). Sampling is parent-based:
// the coordinator's decision (Options.SampleRatio) holds on every node.
//
// OTLP goes over HTTP/protobuf (collector port 4318) to keep the
// dependency set small: OTLPEndpoint "host:port" is plain HTTP, an
// "https://host:port" URL uses TLS.
//
// # No hidden state
//
// Setup does not touch otel's globals; pass Tracer or TracerProvider to
// whoever needs it, or call SetGlobal explicitly. Inject and Extract use the
// tracecontext propagator directly, not the global one.
//
// # Concurrency
//
// Telemetry, FileExporter and Metrics (client_golang's metrics) are safe for
// concurrent use. The file exporter sits behind a blocking batch span
// processor (no span is silently dropped; encoding into memory is cheap);
// the OTLP exporter behind a non-blocking one (a slow collector drops spans
// rather than stalling actors). Setup starts the batch processors'
// goroutines; Shutdown stops them.
//
// # Errors
//
// Sentinels ErrInvalidOptions, ErrExporterClosed and ErrMetric, matched
// with errors.Is; *fielderr.Error and *MetricError carry
// the details (errors.As). Export errors inside the SDK's batch processors
// go to otel's error handler.
package telemetry
