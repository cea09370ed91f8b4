package engine

import (
	"math/rand/v2"
	"slices"
	"time"
)

// loopState is the decode loop's own state (touched by its goroutine only).
type loopState struct {
	s       *Scheduler
	slots   []*row // nil: free
	pending []*job // FIFO; the head may have rows running already
	adapter string
	logits  []float32
	ids     []int
	toks    []int32
	prompts [][]int32
	top     []TokenLogProb
}

func (s *Scheduler) loop() {
	defer close(s.done)
	n := s.dec.Slots()
	st := &loopState{s: s, slots: make([]*row, n), logits: make([]float32, n*s.model.VocabSize)}
	for {
		if st.inUse() == 0 && len(st.pending) == 0 {
			select {
			case j := <-s.submit:
				st.pending = append(st.pending, j)
			case <-s.stop:
				st.shutdown()
				return
			}
		}
		select {
		case <-s.stop:
			st.shutdown()
			return
		default:
		}
		st.drain()
		st.dropCancelled()
		st.admit()
		st.step()
	}
}

func (st *loopState) inUse() int {
	n := 0
	for _, r := range st.slots {
		if r != nil {
			n++
		}
	}
	return n
}

func (st *loopState) drain() {
	for {
		select {
		case j := <-st.s.submit:
			st.pending = append(st.pending, j)
		default:
			return
		}
	}
}

func (st *loopState) shutdown() {
	st.drain()
	for _, j := range st.pending {
		st.fail(j, ErrSchedulerClosed)
	}
	for _, r := range st.slots {
		if r != nil {
			st.fail(r.j, ErrSchedulerClosed)
		}
	}
}

// dropCancelled fails the requests whose context ended, freeing their slots.
func (st *loopState) dropCancelled() {
	for _, j := range st.pending {
		if err := j.ctx.Err(); err != nil {
			st.fail(j, err)
		}
	}
	for _, r := range st.slots {
		if r != nil {
			if err := r.j.ctx.Err(); err != nil {
				st.fail(r.j, err)
			}
		}
	}
}

// fail ends j with err: its slots are freed and it leaves the queue.
func (st *loopState) fail(j *job, err error) {
	if j.ended {
		return
	}
	for k, r := range st.slots {
		if r != nil && r.j == j {
			st.slots[k] = nil
		}
	}
	st.pending = slices.DeleteFunc(st.pending, func(p *job) bool { return p == j })
	j.gen, j.err = nil, err
	st.complete(j)
}

func (st *loopState) complete(j *job) {
	j.ended = true
	st.s.mu.Lock()
	if j.next == 0 {
		st.s.stats.Queued--
	}
	st.s.stats.Requests++
	st.s.stats.SlotsInUse = st.inUse()
	st.s.mu.Unlock()
	close(j.done)
}

// admit prefills free slots with the next rows of the queue, in order, in one Prefill call. A
// request for another adapter waits until the running rows have finished (rows of one step
// share an adapter).
func (st *loopState) admit() {
	st.ids, st.prompts = st.ids[:0], st.prompts[:0]
	var rows []*row
	free := 0
	for len(st.pending) > 0 {
		j := st.pending[0]
		if j.req.Adapter != st.adapter {
			if st.inUse() > 0 || len(rows) > 0 {
				break
			}
			if err := st.s.dec.(AdapterDecoder).UseAdapter(j.req.Adapter); err != nil {
				st.fail(j, err)
				continue
			}
			st.adapter = j.req.Adapter
		}
		k := slices.Index(st.slots[free:], nil)
		if k < 0 {
			break
		}
		k += free
		free = k + 1
		i := j.next
		j.next++
		if j.next == len(j.req.Prompts) {
			st.pending = st.pending[1:]
		}
		st.s.mu.Lock()
		if i == 0 {
			st.s.stats.Queued--
			j.smp = NewSampler(j.req.Sample, st.s.model.VocabSize)
		}
		st.s.stats.Admitted++
		st.s.stats.QueueWait += time.Since(j.start)
		st.s.mu.Unlock()
		st.ids = append(st.ids, k)
		st.prompts = append(st.prompts, j.req.Prompts[i])
		rows = append(rows, &row{j: j, i: i, rng: rand.New(rand.NewPCG(j.req.Seed, uint64(i)))})
	}
	if len(rows) == 0 {
		return
	}
	v := st.s.model.VocabSize
	for x, k := range st.ids {
		st.slots[k] = rows[x]
	}
	if err := st.s.dec.Prefill(st.ids, st.prompts, st.logits[:len(st.ids)*v]); err != nil {
		for _, r := range rows {
			st.fail(r.j, err)
		}
		return
	}
	for x, k := range st.ids {
		if st.slots[k] == rows[x] { // an earlier row's callback may not end another request
			st.sample(k, st.logits[x*v:(x+1)*v])
		}
	}
}

// step runs one decode step over every running row and samples their next tokens.
func (st *loopState) step() {
	st.ids, st.toks = st.ids[:0], st.toks[:0]
	for k, r := range st.slots {
		if r != nil {
			st.ids = append(st.ids, k)
			st.toks = append(st.toks, r.last)
		}
	}
	if len(st.ids) == 0 {
		return
	}
	v := st.s.model.VocabSize
	if err := st.s.dec.Step(st.ids, st.toks, st.logits[:len(st.ids)*v]); err != nil {
		for _, k := range st.ids {
			if r := st.slots[k]; r != nil {
				st.fail(r.j, err)
			}
		}
		return
	}
	st.s.mu.Lock()
	st.s.stats.Steps++
	st.s.stats.StepRows += int64(len(st.ids))
	st.s.stats.SlotsInUse = len(st.ids)
	st.s.mu.Unlock()
	for x, k := range st.ids {
		if st.slots[k] != nil { // an earlier row's callback may not end another request
			st.sample(k, st.logits[x*v:(x+1)*v])
		}
	}
}

// sample draws slot k's next token from logits, reports it and retires the row when it ends.
func (st *loopState) sample(k int, logits []float32) {
	r := st.slots[k]
	j := r.j
	t, lp := j.smp.Sample(logits, r.rng)
	r.last = t
	g := j.gen
	g.Tokens[r.i] = append(g.Tokens[r.i], t)
	g.LogProbs[r.i] = append(g.LogProbs[r.i], lp)
	stop := slices.Contains(j.req.Sample.StopTokens, t)
	if j.req.OnToken != nil {
		var top []TokenLogProb
		if j.req.TopLogProbs > 0 {
			st.top = j.smp.Top(j.req.TopLogProbs, st.top)
			top = st.top
		}
		if j.req.OnToken(TokenEvent{Row: r.i, Step: len(g.Tokens[r.i]) - 1, Token: t, LogProb: lp, Top: top}) {
			stop = true
		}
	}
	st.s.mu.Lock()
	st.s.stats.Tokens++
	st.s.mu.Unlock()
	if !stop && len(g.Tokens[r.i]) < j.req.Sample.MaxNewTokens {
		return
	}
	g.Stopped[r.i] = stop
	st.slots[k] = nil
	j.fin++
	if j.fin == len(j.req.Prompts) {
		st.complete(j)
	}
}
