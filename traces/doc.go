// Package traces reads span files in OTLP JSON (package otlpjson), as
// telemetry.FileExporter writes them (one per node) and as the OpenTelemetry
// Collector's file exporter does, and analyses them: latency
// percentiles per span name, each stage's wall time broken down into where
// it went (generation, verification, learner update, engineer proposal,
// evaluation, waiting), per-node utilisation, straggling work units, and an
// SVG timeline. It backs `t2t traces FILE...`. Files of the custom JSONL
// format t2t wrote before OTLP JSON (one {"trace_id":…} object per line) are
// not read: they fail with ErrNotOTLP.
//
//	spans, err := traces.ReadSpans("coordinator.jsonl", "rollout-1.jsonl", "learner.jsonl")
//	rep := traces.Analyze(spans)
//	fmt.Print(rep.Text())
//	os.WriteFile("timeline.svg", traces.TimelineSVG(spans), 0o644)
//
// Spans are linked by trace and parent span IDs across files, so a work
// unit recorded on a rollout node finds the stage span recorded by the
// coordinator, as long as both files are given. Analyze documents the
// attribution rule of the stage breakdown; its parts are integer
// nanoseconds that sum to the stage's wall time exactly.
//
// The package is pure: Analyze, Report.Text and TimelineSVG do no I/O and
// keep no state; ReadSpans and DecodeSpans only read. All are safe for
// concurrent use on distinct inputs (Analyze does not modify spans).
//
// # Errors
//
// ReadSpans and DecodeSpans fail with a *ParseError naming file:line for a
// line that does not hold spans: bad JSON, ErrNotOTLP (a JSON value without
// resourceSpans), or ErrInvalidSpan (missing traceId, spanId or name, or end
// before start). Blank lines are skipped.
package traces
