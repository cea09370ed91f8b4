package genmetrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/t2t-lab/t2t/learner/engine"
)

func TestCollectorReportsStats(t *testing.T) {
	st := engine.SchedulerStats{Steps: 10, StepRows: 35, Tokens: 42, Requests: 3, Admitted: 7,
		QueueWait: 1500 * time.Millisecond, Slots: 8, SlotsInUse: 2, Queued: 1}
	on := true
	reg := prometheus.NewRegistry()
	reg.MustRegister(New(func() (engine.SchedulerStats, bool) { return st, on }))
	want := `
# HELP t2t_gen_decode_steps_total Decode steps the generation scheduler ran.
# TYPE t2t_gen_decode_steps_total counter
t2t_gen_decode_steps_total 10
# HELP t2t_gen_queue_wait_seconds_total Total wait of rows between submission and their prefill (divided by admitted rows: mean wait).
# TYPE t2t_gen_queue_wait_seconds_total counter
t2t_gen_queue_wait_seconds_total 1.5
# HELP t2t_gen_slots_in_use KV-pool slots holding a running row.
# TYPE t2t_gen_slots_in_use gauge
t2t_gen_slots_in_use 2
# HELP t2t_gen_step_rows_total Rows over all decode steps (divided by decode steps: mean rows per step).
# TYPE t2t_gen_step_rows_total counter
t2t_gen_step_rows_total 35
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), Steps, QueueWait, InUse, StepRows); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 9 {
		t.Fatalf("%d metrics, %v; want 9", n, err)
	}
	on = false // no scheduler (yet): none of the metrics
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 0 {
		t.Fatalf("without a scheduler: %d metrics, %v; want 0", n, err)
	}
}
