package traces_test

import (
	"fmt"

	"github.com/t2t-lab/t2t/traces"
)

func ExampleAnalyze() {
	ms := int64(1_000_000)
	stage := map[string]any{"t2t.stage": 0}
	spans := []traces.Span{
		{TraceID: "t", SpanID: "s", Name: "stage", Node: "coord", StartUnixNano: 0, EndUnixNano: 100 * ms, Attributes: stage},
		{TraceID: "t", SpanID: "u1", ParentSpanID: "s", Name: "work_unit", Node: "r1", StartUnixNano: 0, EndUnixNano: 40 * ms},
		{TraceID: "t", SpanID: "v1", ParentSpanID: "u1", Name: "verify", Node: "r1", StartUnixNano: 30 * ms, EndUnixNano: 40 * ms},
		{TraceID: "t", SpanID: "l", ParentSpanID: "s", Name: "learner.update", Node: "gpu", StartUnixNano: 50 * ms, EndUnixNano: 80 * ms},
	}
	rep := traces.Analyze(spans)
	st := rep.Stages[0]
	for c := range traces.NumCategories {
		fmt.Printf("%s %v\n", c, st.Parts[c])
	}
	fmt.Printf("r1 utilisation %.0f%%\n", 100*rep.Nodes[2].Utilisation)
	// Output:
	// generation 30ms
	// verify 10ms
	// learner 30ms
	// engineer 0s
	// eval 0s
	// waiting 30ms
	// waiting for the learner 0s
	// r1 utilisation 40%
}
