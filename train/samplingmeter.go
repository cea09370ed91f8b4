package train

import (
	"sync"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
)

// SamplingMinSpan is the shortest span a SamplingMeter measures tokens/s
// over: readings closer together keep the last rate, so a page polled
// every 2 s shows a rate over at least this long, not the noise of one
// poll interval.
const SamplingMinSpan = 5 * time.Second

// SamplingMeter reads an LLM policy's generation scheduler
// (engine.SchedulerStats) as the live page and `t2t status` text show it:
// rows per decode step, and tokens/s between readings at least
// SamplingMinSpan apart. Safe for concurrent use.
type SamplingMeter struct {
	read func() (engine.SchedulerStats, bool)

	mu         sync.Mutex
	prevAt     time.Time
	prevTokens int64
	rate       float64
	over       time.Duration
}

// NewSamplingMeter returns the meter of pol's scheduler, started at now;
// nil when pol samples without one (not a qwen3 policy, or no
// --gen-slots).
func NewSamplingMeter(pol Policy, now time.Time) *SamplingMeter {
	sr, ok := pol.(SamplingReporter)
	if !ok {
		return nil
	}
	return newSamplingMeter(sr.SamplingStats, now)
}

func newSamplingMeter(read func() (engine.SchedulerStats, bool), now time.Time) *SamplingMeter {
	st, ok := read()
	if !ok {
		return nil
	}
	return &SamplingMeter{read: read, prevAt: now, prevTokens: st.Tokens}
}

// Status reads the scheduler at now.
func (m *SamplingMeter) Status(now time.Time) *SamplingStatus {
	st, ok := m.read()
	if !ok {
		return nil
	}
	m.mu.Lock()
	if d := now.Sub(m.prevAt); d >= SamplingMinSpan {
		m.rate, m.over = float64(st.Tokens-m.prevTokens)/d.Seconds(), d
		m.prevAt, m.prevTokens = now, st.Tokens
	}
	out := &SamplingStatus{TokensPerSecond: m.rate, TokensPerSecondOver: m.over}
	m.mu.Unlock()
	out.Tokens, out.Steps, out.Requests = st.Tokens, st.Steps, st.Requests
	out.Slots, out.SlotsInUse, out.Queued = st.Slots, st.SlotsInUse, st.Queued
	if st.Steps > 0 {
		out.RowsPerDecodeStep = float64(st.StepRows) / float64(st.Steps)
	}
	if st.Admitted > 0 {
		out.MeanQueueWait = st.QueueWait / time.Duration(st.Admitted)
	}
	return out
}
