package bench

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
)

// SchedulerReport is what t2t bench decode --concurrency measures: C requests of B rows each
// submitted at once to one engine.Scheduler.
type SchedulerReport struct {
	Slots       int     `json:"kv_slots"`           // the KV pool (C·B slots)
	WallSec     float64 `json:"wall_s"`             // first submit to last result
	TotalTokPS  float64 `json:"total_tokens_per_s"` // every generated token / wall_s (prefills included)
	Steps       int64   `json:"decode_steps"`
	RowsPerStep float64 `json:"rows_per_decode_step"` // mean rows of a decode step
	QueueWaitMS float64 `json:"queue_wait_ms"`        // mean wait of a row for its slot
	PoolUse     float64 `json:"kv_pool_use"`          // rows_per_decode_step / kv_slots
}

// decodeConcurrent runs o.Concurrency requests of o.Batch rows through one Scheduler, after a
// warm-up round of two tokens per row (compiling or capturing the step shapes).
func decodeConcurrent(m engine.Model, o DecodeOptions, rng *rand.Rand, rep *DecodeReport) (*DecodeReport, error) {
	op, ok := m.(engine.DecoderOpener)
	if !ok {
		return nil, fmt.Errorf("%w (engine %s)", engine.ErrNoDecoder, m.Engine())
	}
	cfg := m.Config()
	slots := o.Concurrency * o.Batch
	dec, err := op.OpenDecoder(slots, o.PromptLen+o.NewTokens)
	if err != nil {
		return nil, err
	}
	s, err := engine.NewScheduler(cfg, dec, engine.SchedulerConfig{})
	if err != nil {
		_ = dec.Close()
		return nil, err
	}
	defer s.Close()
	reqs := randomRequests(o, cfg.VocabSize, rng)
	warm := make([]engine.Request, len(reqs))
	for i, r := range reqs {
		warm[i] = r
		warm[i].Sample.MaxNewTokens = 2
	}
	var mem memSampler
	t0 := time.Now()
	if _, err := submitAll(s, warm); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	rep.WarmupSec = time.Since(t0).Seconds()
	mem.sample()
	before := s.Stats()
	t0 = time.Now()
	n, err := submitAll(s, reqs)
	if err != nil {
		return nil, err
	}
	wall := time.Since(t0).Seconds()
	mem.sample()
	rep.Memory = mem.report(m)
	st := s.Stats()
	rep.Generated = n
	if n != slots*o.NewTokens {
		return nil, fmt.Errorf("generated %d tokens, want %d × %d", n, slots, o.NewTokens)
	}
	sr := schedulerReport(slots, n, wall, before, st)
	rep.Sched, rep.TotalSec = sr, wall
	return rep, nil
}

// randomRequests builds o.Concurrency requests of o.Batch prompts of
// o.PromptLen random tokens below vocab, each with its own seed.
func randomRequests(o DecodeOptions, vocab int, rng *rand.Rand) []engine.Request {
	reqs := make([]engine.Request, o.Concurrency)
	for i := range reqs {
		prompts := make([][]int32, o.Batch)
		for r := range prompts {
			prompts[r] = make([]int32, o.PromptLen)
			for j := range prompts[r] {
				prompts[r][j] = int32(rng.IntN(vocab))
			}
		}
		reqs[i] = engine.Request{Prompts: prompts, Seed: rng.Uint64(),
			Sample: engine.SampleConfig{MaxNewTokens: o.NewTokens, Temperature: o.Temperature}}
	}
	return reqs
}

// schedulerReport summarises a measured round of n tokens in wall seconds
// on slots KV slots from the scheduler's stats before and after it.
func schedulerReport(slots, n int, wall float64, before, st engine.SchedulerStats) *SchedulerReport {
	steps := st.Steps - before.Steps
	sr := &SchedulerReport{Slots: slots, WallSec: wall, TotalTokPS: float64(n) / wall, Steps: steps}
	if steps > 0 {
		sr.RowsPerStep = float64(st.StepRows-before.StepRows) / float64(steps)
		sr.PoolUse = sr.RowsPerStep / float64(slots)
	}
	if adm := st.Admitted - before.Admitted; adm > 0 {
		sr.QueueWaitMS = float64((st.QueueWait - before.QueueWait).Milliseconds()) / float64(adm)
	}
	return sr
}

// submitAll submits every request at once and returns the tokens generated.
func submitAll(s *engine.Scheduler, reqs []engine.Request) (int, error) {
	var wg sync.WaitGroup
	gens := make([]*engine.Generation, len(reqs))
	errs := make([]error, len(reqs))
	for i := range reqs {
		wg.Go(func() { gens[i], errs[i] = s.Submit(context.Background(), reqs[i]) })
	}
	wg.Wait()
	n := 0
	for i, g := range gens {
		if errs[i] != nil {
			return 0, fmt.Errorf("request %d: %w", i, errs[i])
		}
		for _, t := range g.Tokens {
			n += len(t)
		}
	}
	return n, nil
}

func (r *DecodeReport) writeConcurrent(w io.Writer, title string) error {
	s := r.Sched
	rows := [][2]string{
		modelRow(r.Model, r.Config),
		{"device", fmt.Sprintf("%s (backend %s)", r.Device, r.Backend)},
		{"requests", fmt.Sprintf("%d at once × %d rows × %d prompt tokens, %d new tokens each, temperature %g, no stop token", r.Concurrency, r.Batch, r.PromptLen, r.NewTokens, r.Temperature)},
		{"build / warm-up", fmt.Sprintf("%.2f s / %.2f s", r.BuildSec, r.WarmupSec)},
		{"wall", fmt.Sprintf("%.4f s (prefills included), %d decode steps", s.WallSec, s.Steps)},
		{"total tokens/s", fmt.Sprintf("%.1f (all generated tokens / wall)", s.TotalTokPS)},
		{"rows per decode step", fmt.Sprintf("%.2f of %d KV slots (pool use %.0f %%)", s.RowsPerStep, s.Slots, 100*s.PoolUse)},
		{"queue wait", fmt.Sprintf("%.2f ms per row (mean)", s.QueueWaitMS)},
	}
	rows = append(rows, memRows(r.Memory, r.EstimateB)...)
	return printRows(w, title, rows)
}
