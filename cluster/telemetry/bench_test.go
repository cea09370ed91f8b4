package telemetry_test

import (
	"context"
	"io"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

// BenchmarkFileExporter: encoding cost per span (batches of 512).
func BenchmarkFileExporter(b *testing.B) {
	stubs := make(tracetest.SpanStubs, 512)
	for i := range stubs {
		stubs[i] = tracetest.SpanStub{
			Name: telemetry.SpanSample,
			SpanContext: trace.NewSpanContext(trace.SpanContextConfig{
				TraceID: trace.TraceID{1}, SpanID: trace.SpanID{byte(i >> 8), byte(i), 1},
			}),
			Parent: trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{1}, SpanID: trace.SpanID{9}}),
			Attributes: []attribute.KeyValue{attribute.Int(telemetry.AttrStage, 3), attribute.String(telemetry.AttrInstance, "inst-0001"),
				attribute.Int(telemetry.AttrPolicyVersion, 12)},
		}
	}
	snaps := stubs.Snapshots()
	exp := telemetry.NewFileExporter(io.Discard)
	b.ReportAllocs()
	for b.Loop() {
		if err := exp.ExportSpans(context.Background(), snaps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(snaps)), "ns/span")
}

// BenchmarkNoopSpan: the cost of a span when tracing is off.
func BenchmarkNoopSpan(b *testing.B) {
	tel, err := telemetry.Setup(context.Background(), telemetry.Options{NodeID: "b"})
	if err != nil {
		b.Fatal(err)
	}
	tr := tel.Tracer("bench")
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_, sp := tr.Start(ctx, telemetry.SpanSample)
		sp.End()
	}
}
