// Package genmetrics exposes a generation scheduler's counters (engine.SchedulerStats) as
// Prometheus metrics, for the /metrics of t2t train, t2t node and t2t serve:
//
//	t2t_gen_decode_steps_total      decode steps run
//	t2t_gen_step_rows_total         rows over all decode steps (÷ steps: rows per step)
//	t2t_gen_tokens_total            tokens sampled
//	t2t_gen_requests_total          requests finished
//	t2t_gen_admitted_rows_total     rows prefilled into a slot
//	t2t_gen_queue_wait_seconds_total  rows' total wait between submission and prefill
//	                                (÷ admitted rows: mean queue wait)
//	t2t_gen_slots                   the KV pool's slots
//	t2t_gen_slots_in_use            slots holding a running row
//	t2t_gen_queued_requests         requests waiting for their first slot
//
// The counters restart at 0 when the model is replaced (a reload), which Prometheus's rate()
// reads as a counter reset.
package genmetrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/t2t-lab/t2t/learner/engine"
)

// Metric names.
const (
	Steps     = "t2t_gen_decode_steps_total"
	StepRows  = "t2t_gen_step_rows_total"
	Tokens    = "t2t_gen_tokens_total"
	Requests  = "t2t_gen_requests_total"
	Admitted  = "t2t_gen_admitted_rows_total"
	QueueWait = "t2t_gen_queue_wait_seconds_total"
	Slots     = "t2t_gen_slots"
	InUse     = "t2t_gen_slots_in_use"
	Queued    = "t2t_gen_queued_requests"
)

// collector reads stats at each scrape.
type collector struct {
	stats func() (engine.SchedulerStats, bool)
	descs []*prometheus.Desc
}

// New returns a collector of the scheduler counters stats reads (false: no scheduler now,
// and the scrape shows none of these metrics).
func New(stats func() (engine.SchedulerStats, bool)) prometheus.Collector {
	c := &collector{stats: stats}
	for _, d := range []struct{ name, help string }{
		{Steps, "Decode steps the generation scheduler ran."},
		{StepRows, "Rows over all decode steps (divided by decode steps: mean rows per step)."},
		{Tokens, "Tokens the generation scheduler sampled."},
		{Requests, "Generation requests finished (successfully or not)."},
		{Admitted, "Rows prefilled into a KV-pool slot."},
		{QueueWait, "Total wait of rows between submission and their prefill (divided by admitted rows: mean wait)."},
		{Slots, "Sequences the KV pool holds."},
		{InUse, "KV-pool slots holding a running row."},
		{Queued, "Generation requests waiting for their first slot."},
	} {
		c.descs = append(c.descs, prometheus.NewDesc(d.name, d.help, nil, nil))
	}
	return c
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	st, ok := c.stats()
	if !ok {
		return
	}
	counter, gauge := prometheus.CounterValue, prometheus.GaugeValue
	for i, v := range []struct {
		t prometheus.ValueType
		x float64
	}{
		{counter, float64(st.Steps)}, {counter, float64(st.StepRows)}, {counter, float64(st.Tokens)},
		{counter, float64(st.Requests)}, {counter, float64(st.Admitted)}, {counter, st.QueueWait.Seconds()},
		{gauge, float64(st.Slots)}, {gauge, float64(st.SlotsInUse)}, {gauge, float64(st.Queued)},
	} {
		ch <- prometheus.MustNewConstMetric(c.descs[i], v.t, v.x)
	}
}
