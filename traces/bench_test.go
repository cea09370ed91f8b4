package traces

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

// trBenchSpans: 10 stages × 200 work units × 4 instances × (sample, verify)
// on 16 nodes, plus learner and engineer spans: 26,030 spans.
func trBenchSpans() []Span {
	r := rand.New(rand.NewPCG(1, 2))
	var b trBuilder
	for k := range 10 {
		tr := fmt.Sprint("t", k)
		t0 := int64(k) * 1e9
		st := b.add(tr, "", telemetry.SpanStage, "coord", t0, t0+9e8, trStage(k))
		for u := range 200 {
			a := t0 + r.Int64N(7e8)
			wu := b.add(tr, st, telemetry.SpanWorkUnit, fmt.Sprint("r", u%16), a, a+r.Int64N(1e8), nil)
			for range 4 {
				ia := a + r.Int64N(5e7)
				inst := b.add(tr, wu, telemetry.SpanInstance, "r", ia, ia+2e7, nil)
				b.add(tr, inst, telemetry.SpanSample, "r", ia, ia+1.5e7, nil)
				b.add(tr, inst, telemetry.SpanVerify, "r", ia+1.5e7, ia+2e7, nil)
			}
		}
		b.add(tr, st, telemetry.SpanLearnerUpdate, "gpu", t0+7e8, t0+8e8, nil)
		b.add(tr, st, telemetry.SpanEngineerPropose, "gpu", t0+8e8, t0+9e8, nil)
	}
	return b.spans
}

func BenchmarkAnalyze(b *testing.B) {
	spans := trBenchSpans()
	b.ReportAllocs()
	for b.Loop() {
		_ = Analyze(spans)
	}
}

func BenchmarkTimelineSVG(b *testing.B) {
	spans := trBenchSpans()
	b.ReportAllocs()
	for b.Loop() {
		_ = TimelineSVG(spans)
	}
}
