package telemetry_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/traces"
)

// Two nodes, one trace: the coordinator's stage span travels to a rollout
// node in a message's headers, and the unit recorded there is its child.
func Example() {
	dir, _ := os.MkdirTemp("", "t2t-traces")
	defer os.RemoveAll(dir)
	ctx := context.Background()

	coord, _ := telemetry.Setup(ctx, telemetry.Options{NodeID: "coordinator", TraceFile: filepath.Join(dir, "coordinator.jsonl")})
	rollout, _ := telemetry.Setup(ctx, telemetry.Options{NodeID: "rollout-1", TraceFile: filepath.Join(dir, "rollout-1.jsonl")})

	sctx, stage := coord.Tracer("t2t/actors").Start(ctx, telemetry.SpanStage,
		trace.WithAttributes(attribute.Int(telemetry.AttrStage, 0)))
	headers := telemetry.Inject(sctx) // → WorkUnit.TraceHeaders

	uctx := telemetry.Extract(ctx, headers) // on the rollout node
	_, unit := rollout.Tracer("t2t/actors").Start(uctx, telemetry.SpanWorkUnit,
		trace.WithSpanKind(trace.SpanKindConsumer))
	unit.End()
	stage.End()

	_ = rollout.Shutdown(ctx)
	_ = coord.Shutdown(ctx)

	spans, err := traces.ReadSpans(filepath.Join(dir, "coordinator.jsonl"), filepath.Join(dir, "rollout-1.jsonl"))
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(spans[0].Name, "on", spans[0].Node)
	fmt.Println(spans[1].Name, "on", spans[1].Node, "child of the stage:", spans[1].ParentSpanID == spans[0].SpanID)
	// Output:
	// stage on coordinator
	// work_unit on rollout-1 child of the stage: true
}
