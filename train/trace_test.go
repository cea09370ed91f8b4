package train

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/traces"
)

// TestRunTraceTree runs a traced scripted run and checks the span tree in
// the trace file: one stage span per stage, every work_unit span a child of
// its stage's span (through the unit's trace headers), every sample span a
// child of a work unit, and the critical path of each stage summing to its
// wall time.
func TestRunTraceTree(t *testing.T) {
	seed := testSeed(t)
	file := filepath.Join(t.TempDir(), "spans.jsonl")
	ctx := context.Background()
	tel, err := telemetry.Setup(ctx, telemetry.Options{NodeID: "test-node", TraceFile: file})
	if err != nil {
		t.Fatal(err)
	}
	st := openStore(t)
	opt := Options{RunID: "traced", Stages: 3, Seed: seed, Config: smallConfig(), InstancesPerUnit: 10, GroupSize: 2,
		ValPerSize: 1, EvalPerSize: 1, Tracer: tel.Tracer("test")}
	if _, err := Run(ctx, opt, &ScriptedPolicy{MistakeRate: 0.05}, st); err != nil {
		t.Fatal(err)
	}
	if err := tel.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	spans, err := traces.ReadSpans(file)
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]traces.Span{}
	stageOf := map[string]string{}
	for _, s := range spans {
		byID[s.SpanID] = s
		if s.Name == telemetry.SpanStage {
			v, _ := s.Attr(telemetry.AttrStage)
			stageOf[s.SpanID] = v
		}
	}
	if len(stageOf) != 3 {
		t.Fatalf("%d stage spans, want 3", len(stageOf))
	}
	units, evalUnits := 0, map[string]int{}
	for _, s := range spans {
		switch s.Name {
		case telemetry.SpanWorkUnit:
			if split, ok := s.Attr(telemetry.AttrSplit); ok {
				evalUnits[split]++
			} else {
				units++
			}
			want, _ := s.Attr(telemetry.AttrStage)
			got, ok := stageOf[s.ParentSpanID]
			if !ok || got != want || byID[s.ParentSpanID].TraceID != s.TraceID {
				t.Fatalf("work unit %v: parent %q is not the span of stage %s", s.Attributes, s.ParentSpanID, want)
			}
			if s.Node != "test-node" {
				t.Fatalf("work unit on node %q", s.Node)
			}
		case telemetry.SpanSample:
			if byID[s.ParentSpanID].Name != telemetry.SpanWorkUnit {
				t.Fatalf("sample span's parent is %q", byID[s.ParentSpanID].Name)
			}
		case telemetry.SpanEngineerPropose:
			if _, ok := stageOf[s.ParentSpanID]; !ok {
				t.Fatalf("%s span outside a stage", s.Name)
			}
		case telemetry.SpanEval: // in an evaluation unit, on the unit's split
			p := byID[s.ParentSpanID]
			want, _ := p.Attr(telemetry.AttrSplit)
			if got, _ := s.Attr(telemetry.AttrSplit); p.Name != telemetry.SpanWorkUnit || want == "" || got != want {
				t.Fatalf("eval span (split %q) in %q (split %q), want an evaluation unit's", got, p.Name, want)
			}
		}
	}
	if units != 3*4 { // 40 instances / 10 per unit, 3 stages
		t.Fatalf("%d training unit spans, want 12", units)
	}
	// Validation: 8 instances (sizes 3..10, 1 each) in one unit per stage;
	// the benchmark: one unit of 10 at least.
	if evalUnits[store.SplitVal] != 3 || evalUnits[store.SplitEvalPaper] < 3 || len(evalUnits) != 2 {
		t.Fatalf("evaluation unit spans %v, want 3 val and 3+ eval_paper (3 stages)", evalUnits)
	}
	rep := traces.Analyze(spans)
	if len(rep.Stages) != 3 {
		t.Fatalf("analysis found %d stages", len(rep.Stages))
	}
	for _, s := range rep.Stages {
		var sum int64
		for _, p := range s.Parts {
			sum += int64(p)
		}
		if sum != int64(s.Wall) {
			t.Fatalf("stage %v: parts sum to %d ns, wall %d ns", s.Stage, sum, s.Wall)
		}
	}
}
