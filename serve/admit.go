package serve

import (
	"container/list"
	"context"
	"errors"
	"sync"
)

// Admission errors (gate.acquire).
var (
	// errNeverFits: the request's memory estimate exceeds the whole budget.
	errNeverFits = errors.New("serve: the request needs more memory than the server's budget")
	// errQueueFull: MaxQueue requests are already waiting.
	errQueueFull = errors.New("serve: the request queue is full")
)

// gate admits generations: at most slots run at once (1 without a generation scheduler:
// generations run one after another on the model anyway, and a request that waited for the
// model lock would wait outside any bound), only while the memory estimates of those running
// fit the budget, and only requests of one key together (the LoRA adapter they run with: the
// model has one attached at a time). Requests that cannot start at once wait in a FIFO queue
// of at most maxQueue; a request whose context ends while it waits leaves the queue.
type gate struct {
	budget   int64
	slots    int
	maxQueue int

	mu      sync.Mutex
	used    int64
	running int
	key     any       // the key of the running requests
	queue   list.List // of *waiter, oldest first
}

// waiter is a queued request; ready is closed once it is admitted.
type waiter struct {
	need  int64
	key   any
	ready chan struct{}
}

func newGate(budget int64, slots, maxQueue int) *gate {
	return &gate{budget: budget, slots: slots, maxQueue: maxQueue}
}

// acquire admits a request that needs need bytes, waiting in the queue if it must; release
// gives its place back. It fails at once with errNeverFits or errQueueFull, or with ctx's
// error once ctx ends while it waits.
func (g *gate) acquire(ctx context.Context, need int64, key any) (release func(), err error) {
	g.mu.Lock()
	if need > g.budget {
		g.mu.Unlock()
		return nil, errNeverFits
	}
	if g.queue.Len() == 0 && g.fits(need, key) {
		g.take(need, key)
		g.mu.Unlock()
		return g.releaser(need), nil
	}
	if g.queue.Len() >= g.maxQueue {
		g.mu.Unlock()
		return nil, errQueueFull
	}
	w := &waiter{need: need, key: key, ready: make(chan struct{})}
	e := g.queue.PushBack(w)
	g.mu.Unlock()
	select {
	case <-w.ready:
		return g.releaser(need), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	select {
	case <-w.ready: // admitted meanwhile: give the place back
		g.put(need)
	default:
		g.queue.Remove(e)
		g.admit() // the requests behind it may fit now
	}
	return nil, ctx.Err()
}

// stats returns the requests waiting and running.
func (g *gate) stats() (queued, running int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.queue.Len(), g.running
}

func (g *gate) fits(need int64, key any) bool {
	return g.running < g.slots && g.used+need <= g.budget && (g.running == 0 || key == g.key)
}

func (g *gate) take(need int64, key any) {
	g.used += need
	g.running++
	g.key = key
}

// put returns a place and admits who fits now; g.mu is held.
func (g *gate) put(need int64) {
	g.used -= need
	g.running--
	g.admit()
}

// admit starts the queued requests from the front while they fit (in order: a large request
// at the front is not overtaken); g.mu is held.
func (g *gate) admit() {
	for e := g.queue.Front(); e != nil; e = g.queue.Front() {
		w := e.Value.(*waiter)
		if !g.fits(w.need, w.key) {
			return
		}
		g.queue.Remove(e)
		g.take(w.need, w.key)
		close(w.ready)
	}
}

func (g *gate) releaser(need int64) func() {
	var once sync.Once
	return func() {
		once.Do(func() {
			g.mu.Lock()
			defer g.mu.Unlock()
			g.put(need)
		})
	}
}
