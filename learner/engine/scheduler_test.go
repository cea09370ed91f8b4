package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// fakeDecoder is a toy model whose logits depend only on its slot's sequence and adapter: the
// scheduler must give every request the same result whatever else shares its steps.
type fakeDecoder struct {
	vocab, slots, slotLen int
	seqs                  [][]int32
	adapter               string
	onStep                func(n int) error // runs at the start of each Step (n from 1); nil: nothing
	steps                 int
	closed                bool
}

func newFake(vocab, slots, slotLen int) *fakeDecoder {
	return &fakeDecoder{vocab: vocab, slots: slots, slotLen: slotLen, seqs: make([][]int32, slots)}
}

func (d *fakeDecoder) Slots() int   { return d.slots }
func (d *fakeDecoder) SlotLen() int { return d.slotLen }
func (d *fakeDecoder) Close() error { d.closed = true; return nil }

func (d *fakeDecoder) UseAdapter(name string) error {
	if name == "missing" {
		return errors.New("no adapter missing")
	}
	d.adapter = name
	return nil
}

func (d *fakeDecoder) logits(seq []int32, dst []float32) {
	var h uint64 = 1469598103934665603
	for _, t := range seq {
		h = (h ^ uint64(t)) * 1099511628211
	}
	for _, c := range d.adapter {
		h = (h ^ uint64(c)) * 1099511628211
	}
	for v := range dst {
		x := (h ^ uint64(v)*0x9E3779B97F4A7C15) * 0xBF58476D1CE4E5B9
		dst[v] = float32(x>>40) / float32(1<<22)
	}
}

func (d *fakeDecoder) Prefill(slots []int, prompts [][]int32, logits []float32) error {
	for i, k := range slots {
		d.seqs[k] = append(d.seqs[k][:0], prompts[i]...)
		d.logits(d.seqs[k], logits[i*d.vocab:(i+1)*d.vocab])
	}
	return nil
}

func (d *fakeDecoder) Step(slots []int, tokens []int32, logits []float32) error {
	d.steps++
	if d.onStep != nil {
		if err := d.onStep(d.steps); err != nil {
			return err
		}
	}
	for i, k := range slots {
		if len(d.seqs[k]) >= d.slotLen {
			return fmt.Errorf("slot %d full", k)
		}
		d.seqs[k] = append(d.seqs[k], tokens[i])
		d.logits(d.seqs[k], logits[i*d.vocab:(i+1)*d.vocab])
	}
	return nil
}

func fakeConfig(vocab int) hfmodel.Config {
	c, _ := hfmodel.Preset(hfmodel.PresetTiny)
	c.VocabSize = vocab
	return c
}

// waitFor polls cond (a hang guard, not a timing assertion).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

type result struct {
	gen *Generation
	err error
}

func submitAsync(s *Scheduler, ctx context.Context, req Request) chan result {
	ch := make(chan result, 1)
	go func() {
		g, err := s.Submit(ctx, req)
		ch <- result{g, err}
	}()
	return ch
}

func joinLeaveRequests() []Request {
	return []Request{
		{Prompts: [][]int32{{1, 2, 3}, {4}}, Sample: SampleConfig{MaxNewTokens: 12}},
		{Prompts: [][]int32{{5, 6}}, Sample: SampleConfig{MaxNewTokens: 5, Temperature: 1, TopP: 0.9}, Seed: 7},
		{Prompts: [][]int32{{7, 8, 9, 10}, {11, 12}}, Sample: SampleConfig{MaxNewTokens: 8, Temperature: 0.7, TopK: 5}, Seed: 3},
		{Prompts: [][]int32{{13}}, Sample: SampleConfig{MaxNewTokens: 6}, Adapter: "a"},
	}
}

// TestSchedulerJoinLeave: requests that join a running batch at different steps and leave at
// different steps get exactly the ids and log-probs they get alone (greedy and seeded
// sampling, with and without an adapter).
func TestSchedulerJoinLeave(t *testing.T) {
	const vocab = 50
	c := fakeConfig(vocab)
	reqs := joinLeaveRequests()
	alone := make([]*Generation, len(reqs))
	for i, r := range reqs {
		s, err := NewScheduler(c, newFake(vocab, 4, 32), SchedulerConfig{})
		if err != nil {
			t.Fatal(err)
		}
		if alone[i], err = s.Submit(context.Background(), r); err != nil {
			t.Fatal(err)
		}
		_ = s.Close()
	}
	d := newFake(vocab, 4, 32)
	s, err := NewScheduler(c, d, SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	chans := make([]chan result, len(reqs))
	for i := range chans {
		chans[i] = make(chan result, 1)
	}
	// Request i is submitted during step 3·i, while the loop is inside Step: it joins at the
	// next step boundary (or, with another adapter, once the batch has drained).
	d.onStep = func(n int) error {
		if i := n / 3; n%3 == 0 && i < len(reqs) {
			before := s.Stats().Queued
			go func() {
				g, err := s.Submit(context.Background(), reqs[i])
				chans[i] <- result{g, err}
			}()
			for s.Stats().Queued == before {
				time.Sleep(time.Millisecond)
			}
		}
		return nil
	}
	go func() {
		g, err := s.Submit(context.Background(), reqs[0])
		chans[0] <- result{g, err}
	}()
	var got []result
	for _, ch := range chans {
		got = append(got, <-ch)
	}
	for i, r := range got {
		if r.err != nil {
			t.Fatalf("request %d: %v", i, r.err)
		}
		if !reflect.DeepEqual(r.gen, alone[i]) {
			t.Errorf("request %d in a batch:\n%+v\nalone:\n%+v", i, r.gen, alone[i])
		}
	}
	st := s.Stats()
	if st.Steps == 0 || st.StepRows <= st.Steps || st.Requests != int64(len(reqs)) || st.Queued != 0 {
		t.Errorf("stats %+v: want several rows per step on average, %d requests, none queued", st, len(reqs))
	}
}

// TestSchedulerMatchesReference: a greedy request's ids and log-probs are those of a plain
// decode loop over the same logits.
func TestSchedulerMatchesReference(t *testing.T) {
	const vocab = 20
	c := fakeConfig(vocab)
	s, err := NewScheduler(c, newFake(vocab, 2, 16), SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	prompt := []int32{3, 1, 4}
	g, err := s.Submit(context.Background(), Request{Prompts: [][]int32{prompt}, Sample: SampleConfig{MaxNewTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	ref := newFake(vocab, 1, 16)
	seq := append([]int32(nil), prompt...)
	logits := make([]float32, vocab)
	for step := range 6 {
		ref.logits(seq, logits)
		best, lse := 0, math.Inf(-1)
		for v, x := range logits {
			if x > logits[best] {
				best = v
			}
			lse = math.Max(lse, float64(x))
		}
		var sum float64
		for _, x := range logits {
			sum += math.Exp(float64(x) - lse)
		}
		lp := float64(logits[best]) - lse - math.Log(sum)
		if g.Tokens[0][step] != int32(best) || math.Abs(float64(g.LogProbs[0][step])-lp) > 1e-6 {
			t.Fatalf("step %d: got %d (%v), want %d (%v)", step, g.Tokens[0][step], g.LogProbs[0][step], best, lp)
		}
		seq = append(seq, int32(best))
	}
}

// TestSchedulerPoolAndQueue: a full pool makes requests wait; a full queue refuses at once; a
// request larger than the pool is refused with ErrTooLarge; a missing adapter fails only its
// request.
func TestSchedulerPoolAndQueue(t *testing.T) {
	const vocab = 16
	c := fakeConfig(vocab)
	d := newFake(vocab, 2, 10)
	gate := make(chan struct{})
	var once sync.Once
	d.onStep = func(int) error { <-gate; return nil }
	s, err := NewScheduler(c, d, SchedulerConfig{QueueLen: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	defer once.Do(func() { close(gate) })
	ctx := context.Background()
	two := Request{Prompts: [][]int32{{1}, {2}}, Sample: SampleConfig{MaxNewTokens: 3}}
	a := submitAsync(s, ctx, two)
	waitFor(t, "the first request to fill the pool", func() bool { return s.Stats().Admitted == 2 })
	b := submitAsync(s, ctx, two)
	bad := submitAsync(s, ctx, Request{Prompts: [][]int32{{3}}, Sample: SampleConfig{MaxNewTokens: 2}, Adapter: "missing"})
	waitFor(t, "two queued requests", func() bool { return s.Stats().Queued == 2 })
	if _, err := s.Submit(ctx, two); !errors.Is(err, ErrQueueFull) {
		t.Errorf("third waiting request: %v, want ErrQueueFull", err)
	}
	for _, r := range []Request{
		{Prompts: [][]int32{{1}, {2}, {3}}, Sample: SampleConfig{MaxNewTokens: 1}},
		{Prompts: [][]int32{{1, 2, 3}}, Sample: SampleConfig{MaxNewTokens: 8}},
	} {
		if _, err := s.Submit(ctx, r); !errors.Is(err, ErrTooLarge) {
			t.Errorf("%d rows, %d+%d positions: %v, want ErrTooLarge", len(r.Prompts), len(r.Prompts[0]), r.Sample.MaxNewTokens, err)
		}
	}
	once.Do(func() { close(gate) })
	for i, ch := range []chan result{a, b} {
		if r := <-ch; r.err != nil || len(r.gen.Tokens[1]) != 3 {
			t.Errorf("request %d: %+v %v", i, r.gen, r.err)
		}
	}
	if r := <-bad; r.err == nil {
		t.Error("a request for a missing adapter succeeded")
	}
	if st := s.Stats(); st.Queued != 0 || st.Requests != 3 {
		t.Errorf("stats %+v", st)
	}
}

// TestSchedulerCancelFreesSlot: a cancelled request returns its context's error and its slot
// goes to the next request; a decoder error fails the running request only.
func TestSchedulerCancelFreesSlot(t *testing.T) {
	const vocab = 16
	c := fakeConfig(vocab)
	d := newFake(vocab, 1, 64)
	s, err := NewScheduler(c, d, SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithCancel(context.Background())
	seen := 0
	long := Request{Prompts: [][]int32{{1}}, Sample: SampleConfig{MaxNewTokens: 60},
		OnToken: func(TokenEvent) bool {
			if seen++; seen == 3 {
				cancel()
			}
			return false
		}}
	if _, err := s.Submit(ctx, long); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled request: %v", err)
	}
	if seen > 4 {
		t.Errorf("%d tokens after cancelling at the 3rd: the slot was not freed at the next step", seen)
	}
	g, err := s.Submit(context.Background(), Request{Prompts: [][]int32{{2}}, Sample: SampleConfig{MaxNewTokens: 4}})
	if err != nil || len(g.Tokens[0]) != 4 {
		t.Fatalf("next request: %+v %v", g, err)
	}
	boom := errors.New("device lost")
	d.onStep = func(int) error { return boom }
	if _, err := s.Submit(context.Background(), Request{Prompts: [][]int32{{2}}, Sample: SampleConfig{MaxNewTokens: 4}}); !errors.Is(err, boom) {
		t.Errorf("decoder error: %v", err)
	}
	d.onStep = nil
	if _, err := s.Submit(context.Background(), Request{Prompts: [][]int32{{2}}, Sample: SampleConfig{MaxNewTokens: 4}}); err != nil {
		t.Errorf("after a decoder error: %v", err)
	}
}

// TestSchedulerClose: closing fails the running and the waiting requests with
// ErrSchedulerClosed, later submits too, and closes the decoder.
func TestSchedulerClose(t *testing.T) {
	const vocab = 16
	c := fakeConfig(vocab)
	d := newFake(vocab, 1, 64)
	gate := make(chan struct{})
	d.onStep = func(int) error { <-gate; return nil }
	s, err := NewScheduler(c, d, SchedulerConfig{})
	if err != nil {
		t.Fatal(err)
	}
	req := Request{Prompts: [][]int32{{1}}, Sample: SampleConfig{MaxNewTokens: 50}}
	a := submitAsync(s, context.Background(), req)
	waitFor(t, "the first request to run", func() bool { return s.Stats().Admitted == 1 })
	b := submitAsync(s, context.Background(), req)
	waitFor(t, "the second request to queue", func() bool { return s.Stats().Queued == 1 })
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	waitFor(t, "Close to begin", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return s.closed })
	close(gate) // the loop finishes its step and then sees the stop
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	for i, ch := range []chan result{a, b} {
		if r := <-ch; !errors.Is(r.err, ErrSchedulerClosed) {
			t.Errorf("request %d: %v, want ErrSchedulerClosed", i, r.err)
		}
	}
	if _, err := s.Submit(context.Background(), req); !errors.Is(err, ErrSchedulerClosed) {
		t.Errorf("submit after close: %v", err)
	}
	if !d.closed {
		t.Error("decoder not closed")
	}
}

func TestPoolSlots(t *testing.T) {
	c, _ := hfmodel.Preset(hfmodel.PresetTiny)
	const slotLen = 128
	budget := c.GenerateMemory(3, slotLen-1, 1)
	got := PoolSlots(c, slotLen, budget, 64)
	if got < 3 || c.GenerateMemory(got, slotLen-1, 1) > budget || c.GenerateMemory(got+1, slotLen-1, 1) <= budget {
		t.Errorf("PoolSlots(budget of 3) = %d: not the most slots within the budget", got)
	}
	if got := PoolSlots(c, slotLen, 1, 64); got != 0 {
		t.Errorf("PoolSlots(1 byte) = %d", got)
	}
	if got := PoolSlots(c, slotLen, 0, 64); got != 64 {
		t.Errorf("PoolSlots(no budget) = %d", got)
	}
}
