package train

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

// stageTraces holds the open "stage" span of each running stage. The
// coordinator asks for a stage's trace headers when it builds the stage's
// units (actors.SystemConfig.StageHeaders); that starts the span, and every
// work unit of the stage carries its context to whichever node runs it.
type stageTraces struct {
	tracer trace.Tracer
	runID  string

	mu     sync.Mutex
	ctxs   map[int]context.Context
	spans  map[int]trace.Span
	latest int
}

func newStageTraces(t trace.Tracer, runID string) *stageTraces {
	if t == nil {
		t = noopTracer
	}
	return &stageTraces{tracer: t, runID: runID, ctxs: map[int]context.Context{}, spans: map[int]trace.Span{}}
}

// ctx returns the context of stage's span, starting the span on first use.
func (s *stageTraces) ctx(stage int) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c, ok := s.ctxs[stage]; ok {
		return c
	}
	c, sp := s.tracer.Start(context.Background(), telemetry.SpanStage,
		trace.WithAttributes(attribute.Int(telemetry.AttrStage, stage), attribute.String(telemetry.AttrRun, s.runID)))
	s.ctxs[stage], s.spans[stage] = c, sp
	s.latest = max(s.latest, stage)
	return c
}

// current is the context of the latest started stage.
func (s *stageTraces) current() context.Context {
	s.mu.Lock()
	st := s.latest
	s.mu.Unlock()
	return s.ctx(st)
}

// headers implements actors.SystemConfig.StageHeaders.
func (s *stageTraces) headers(_ string, stage int) map[string]string {
	return telemetry.Inject(s.ctx(stage))
}

// end ends stage's span.
func (s *stageTraces) end(stage int) {
	s.mu.Lock()
	sp, ok := s.spans[stage]
	delete(s.spans, stage)
	s.mu.Unlock()
	if ok {
		sp.End()
	}
}

var noopTracer = noop.NewTracerProvider().Tracer("t2t")

// start starts a child span of ctx (a no-op span on a nil stageTraces).
func (s *stageTraces) start(ctx context.Context, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	if s == nil {
		return noopTracer.Start(ctx, name)
	}
	return s.tracer.Start(ctx, name, trace.WithAttributes(attrs...))
}

// learnerWait implements actors.SystemConfig.OnLearnerWait: a span, under
// the stage's, over an interval in which queued units waited for the
// learner while rollouts had free slots.
func (s *stageTraces) learnerWait(stage int, from, to time.Time) {
	_, sp := s.tracer.Start(s.ctx(stage), telemetry.SpanLearnerWait, trace.WithTimestamp(from),
		trace.WithAttributes(attribute.Int(telemetry.AttrStage, stage)))
	sp.End(trace.WithTimestamp(to))
}
