package train

import (
	"fmt"
	"io"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
)

// SamplingReporter is a policy that samples through a generation scheduler (a qwen3 policy
// with --gen-slots): its counters, and false while it has none.
type SamplingReporter interface {
	SamplingStats() (engine.SchedulerStats, bool)
}

// SamplingStats is what a policy's generation scheduler did during a stage, from its start
// (after the previous stage's close) to its close: the training units, the stage's evaluation
// units (they run as work units of the stage), and the engineer's generations when it is the
// policy itself.
type SamplingStats struct {
	Steps     int64         // decode steps
	StepRows  int64         // rows over those steps
	Tokens    int64         // tokens sampled
	Requests  int64         // generations finished
	Admitted  int64         // rows prefilled
	QueueWait time.Duration // rows' total wait for a slot
	Slots     int           // the KV pool's size
	Duration  time.Duration // the stage's wall time the counters cover
}

// RowsPerStep is the mean batch of a decode step.
func (s *SamplingStats) RowsPerStep() float64 { return ratio(float64(s.StepRows), float64(s.Steps)) }

// TokensPerSec is the tokens sampled per second of the stage.
func (s *SamplingStats) TokensPerSec() float64 {
	return ratio(float64(s.Tokens), s.Duration.Seconds())
}

// MeanWait is a row's mean wait for a slot.
func (s *SamplingStats) MeanWait() time.Duration {
	if s.Admitted == 0 {
		return 0
	}
	return s.QueueWait / time.Duration(s.Admitted)
}

// samplingSince is the counters of now less those of before, over d.
func samplingSince(now, before engine.SchedulerStats, d time.Duration) *SamplingStats {
	return &SamplingStats{Steps: now.Steps - before.Steps, StepRows: now.StepRows - before.StepRows,
		Tokens: now.Tokens - before.Tokens, Requests: now.Requests - before.Requests,
		Admitted: now.Admitted - before.Admitted, QueueWait: now.QueueWait - before.QueueWait,
		Slots: now.Slots, Duration: d}
}

// printSampling writes the stage's sampling line under its learner line (nothing for a
// policy without a scheduler).
func printSampling(w io.Writer, s *SamplingStats) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "      sampling: %.1f rows/step of %d slots  %.0f tokens/s  wait %s  (%d steps, %d tokens, %d generations)\n",
		s.RowsPerStep(), s.Slots, s.TokensPerSec(), s.MeanWait().Round(time.Millisecond), s.Steps, s.Tokens, s.Requests)
}
