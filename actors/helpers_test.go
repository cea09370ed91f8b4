package actors

import (
	"context"
	"flag"
	"log/slog"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

var actorsSeed = flag.Uint64("actors.seed", 0, "seed for randomised actors tests (0: derive from time)")

// testSeed returns the seed to use and logs it so a failure can be replayed
// with -actors.seed.
func testSeed(t testing.TB) uint64 {
	t.Helper()
	s := *actorsSeed
	if s == 0 {
		s = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -actors.seed=%d)", s, s)
	return s
}

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x7432)) }

// testLogger logs through t.Log while the test runs and drops records after
// it ends (actor goroutines may still log while stopping).
func testLogger(t testing.TB) *slog.Logger {
	l, _ := testLoggerHook(t, "")
	return l
}

// testLoggerHook is testLogger that also closes the returned channel the
// first time a record containing substr is logged.
func testLoggerHook(t testing.TB, substr string) (*slog.Logger, <-chan struct{}) {
	w := &testWriter{t: t, substr: substr, hit: make(chan struct{})}
	t.Cleanup(func() { w.mu.Lock(); w.done = true; w.mu.Unlock() })
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})), w.hit
}

type testWriter struct {
	mu     sync.Mutex
	t      testing.TB
	done   bool
	substr string
	hit    chan struct{}
	closed bool
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.substr != "" && !w.closed && strings.Contains(string(p), w.substr) {
		w.closed = true
		close(w.hit)
	}
	if !w.done {
		w.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// testWait receives from ch or fails the test after a generous timeout (a
// timeout is a failure, never a synchronisation).
func testWait[T any](t testing.TB, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(20 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// testCtx is a context that ends with the test (or after a generous
// timeout).
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}
