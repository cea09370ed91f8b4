package serve

import (
	"context"
	"errors"
	"runtime"
	"testing"
)

// The gate runs one request at a time within the budget, queues the rest in order up to its
// bound, refuses a request over the whole budget, and lets a cancelled waiter leave the queue.
func TestGate(t *testing.T) {
	g := newGate(100, 1, 2)
	ctx := context.Background()
	if _, err := g.acquire(ctx, 101, nil); !errors.Is(err, errNeverFits) {
		t.Fatalf("need 101 of 100: %v, want errNeverFits", err)
	}
	first, err := g.acquire(ctx, 60, nil)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		name    string
		release func()
		err     error
	}
	done := make(chan result, 3)
	cctx, cancel := context.WithCancel(ctx)
	start := func(name string, ctx context.Context, need int64) {
		go func() {
			r, err := g.acquire(ctx, need, nil)
			done <- result{name, r, err}
		}()
	}
	waitQueued := func(n int) {
		for q, _ := g.stats(); q != n; q, _ = g.stats() {
			runtime.Gosched()
			select {
			case r := <-done:
				t.Fatalf("%s returned while it should wait: %v", r.name, r.err)
			default:
			}
		}
	}
	start("second", ctx, 10)
	waitQueued(1)
	start("cancelled", cctx, 10)
	waitQueued(2)
	if _, err := g.acquire(ctx, 1, nil); !errors.Is(err, errQueueFull) {
		t.Fatalf("a third waiter with a queue of 2: %v, want errQueueFull", err)
	}
	cancel()
	if r := <-done; r.name != "cancelled" || !errors.Is(r.err, context.Canceled) {
		t.Fatalf("%s: %v, want the cancelled waiter with context.Canceled", r.name, r.err)
	}
	if q, running := g.stats(); q != 1 || running != 1 {
		t.Fatalf("after the cancel: %d queued, %d running; want 1, 1", q, running)
	}
	first()
	first() // a second release is a no-op
	r := <-done
	if r.name != "second" || r.err != nil {
		t.Fatalf("%s: %v, want second admitted", r.name, r.err)
	}
	if q, running := g.stats(); q != 0 || running != 1 || g.used != 10 {
		t.Fatalf("second running: %d queued, %d running, %d used", q, running, g.used)
	}
	r.release()
	if q, running := g.stats(); q != 0 || running != 0 || g.used != 0 {
		t.Fatalf("all released: %d queued, %d running, %d used", q, running, g.used)
	}
}
