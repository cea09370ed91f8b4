package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// Scheduler errors.
var (
	// ErrQueueFull: QueueLen requests are already waiting; try again later.
	ErrQueueFull = errors.New("engine: generation queue full")
	// ErrTooLarge: a request needs more than the slot pool can ever hold (more rows than
	// slots, or a prompt plus MaxNewTokens longer than a slot); waiting would not help.
	ErrTooLarge = errors.New("engine: request larger than the KV pool")
	// ErrSchedulerClosed: the scheduler was closed before the request finished.
	ErrSchedulerClosed = errors.New("engine: scheduler closed")
	// ErrNoAdapter: the request names an adapter and the decoder cannot switch adapters.
	ErrNoAdapter = errors.New("engine: the decoder serves no adapters")
)

// SchedulerConfig sizes a Scheduler.
type SchedulerConfig struct {
	// QueueLen bounds the requests waiting for their first slot; a Submit beyond it fails with
	// ErrQueueFull at once. Default 256: enough for every rollout actor and server client of a
	// node, small enough that a runaway client sees errors instead of growing memory.
	QueueLen int
}

// Request is one generation: its rows (prompts) sample independently with the request's own
// settings, each row from its own random stream (Seed, row index), so the result does not
// depend on which other requests share the decode steps.
type Request struct {
	Prompts     [][]int32
	Sample      SampleConfig
	TopLogProbs int    // alternatives per token in TokenEvent.Top (0: none)
	Seed        uint64 // with the row index, seeds each row's PCG stream (Temperature > 0)
	Adapter     string // LoRA adapter name; "" is the base model
	// OnToken, when not nil, sees each sampled token (Row is the prompt's index) on the
	// scheduler's goroutine and may end its row by returning true; it must not block.
	OnToken func(TokenEvent) bool
}

// SchedulerStats are cumulative counters and current levels of a Scheduler.
type SchedulerStats struct {
	Steps      int64         // decode steps run
	StepRows   int64         // rows over all decode steps (StepRows/Steps: mean rows per step)
	Tokens     int64         // tokens sampled (prefill's first tokens included)
	Requests   int64         // requests finished (successfully or not)
	QueueWait  time.Duration // total wait of rows between Submit and their prefill
	Admitted   int64         // rows prefilled (QueueWait/Admitted: mean wait)
	Slots      int           // the pool's size
	SlotsInUse int           // slots holding a running row now
	Queued     int           // requests waiting for their first slot now
}

// Scheduler owns a model's decode loop: every caller submits requests, new rows join the
// running batch at step boundaries (one prefill per free slot) and finished rows leave at
// once. Safe for concurrent use; Close stops it and fails what is still pending.
type Scheduler struct {
	dec    Decoder
	model  hfmodel.Config
	cfg    SchedulerConfig
	submit chan *job
	stop   chan struct{}
	done   chan struct{}

	mu     sync.Mutex
	closed bool
	stats  SchedulerStats
}

type job struct {
	ctx   context.Context
	req   Request
	gen   *Generation
	err   error
	start time.Time
	smp   *Sampler
	next  int  // next row to admit
	fin   int  // rows finished
	ended bool // done is closed
	done  chan struct{}
}

// row is a running sequence in a slot.
type row struct {
	j    *job
	i    int // the prompt's index
	rng  *rand.Rand
	last int32
}

// NewScheduler starts the decode loop of dec for a model of architecture c; the Scheduler
// owns dec and closes it on Close.
func NewScheduler(c hfmodel.Config, dec Decoder, cfg SchedulerConfig) (*Scheduler, error) {
	if cfg.QueueLen == 0 {
		cfg.QueueLen = 256
	}
	if cfg.QueueLen < 0 {
		return nil, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "QueueLen", Value: cfg.QueueLen, Reason: "must be ≥ 0"}
	}
	if dec.Slots() < 1 || dec.SlotLen() < 2 {
		return nil, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "Decoder", Value: fmt.Sprintf("%d slots of %d", dec.Slots(), dec.SlotLen()), Reason: "need ≥ 1 slot of ≥ 2 positions"}
	}
	s := &Scheduler{dec: dec, model: c, cfg: cfg,
		submit: make(chan *job, cfg.QueueLen), stop: make(chan struct{}), done: make(chan struct{})}
	s.stats.Slots = dec.Slots()
	go s.loop()
	return s, nil
}

// Slots is the pool's size; SlotLen the positions per slot.
func (s *Scheduler) Slots() int   { return s.dec.Slots() }
func (s *Scheduler) SlotLen() int { return s.dec.SlotLen() }

// Stats returns a snapshot of the counters.
func (s *Scheduler) Stats() SchedulerStats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stats
}

// Submit runs req and waits for its result. A request whose ctx ends frees its slots at the
// next step and returns ctx's error; errors: ErrQueueFull, ErrTooLarge, ErrNoAdapter,
// ErrSchedulerClosed, CheckGenerate's, or the decoder's (which fails every running row).
func (s *Scheduler) Submit(ctx context.Context, req Request) (*Generation, error) {
	if err := CheckGenerate(s.model, req.Prompts, req.Sample, req.TopLogProbs, true); err != nil {
		return nil, err
	}
	if n := len(req.Prompts); n > s.dec.Slots() {
		return nil, fmt.Errorf("%w: %d rows, the pool has %d slots", ErrTooLarge, n, s.dec.Slots())
	}
	for i, p := range req.Prompts {
		if len(p)+req.Sample.MaxNewTokens > s.dec.SlotLen() {
			return nil, fmt.Errorf("%w: row %d needs %d positions, a slot holds %d", ErrTooLarge, i, len(p)+req.Sample.MaxNewTokens, s.dec.SlotLen())
		}
	}
	if _, ok := s.dec.(AdapterDecoder); req.Adapter != "" && !ok {
		return nil, fmt.Errorf("%w (adapter %q)", ErrNoAdapter, req.Adapter)
	}
	n := len(req.Prompts)
	j := &job{ctx: ctx, req: req, start: time.Now(), done: make(chan struct{}),
		gen: &Generation{Tokens: make([][]int32, n), LogProbs: make([][]float32, n), Stopped: make([]bool, n)}}
	s.mu.Lock()
	switch {
	case s.closed:
		s.mu.Unlock()
		return nil, ErrSchedulerClosed
	case s.stats.Queued >= s.cfg.QueueLen:
		s.mu.Unlock()
		return nil, fmt.Errorf("%w (%d waiting)", ErrQueueFull, s.cfg.QueueLen)
	}
	s.stats.Queued++
	s.submit <- j // never blocks: Queued < QueueLen = cap
	s.mu.Unlock()
	<-j.done
	return j.gen, j.err
}

// Close stops the loop, fails pending and running requests with ErrSchedulerClosed and
// closes the decoder.
func (s *Scheduler) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	close(s.stop)
	s.mu.Unlock()
	<-s.done
	return s.dec.Close()
}
