package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// do runs fn until it succeeds, fails with a permanent error, ctx is done,
// or transient failures have lasted Options.MaxRetryElapsed. Each retry
// waits an exponentially growing, jittered delay and logs one Warn record.
// Every operation passed to do is idempotent, so retrying after an
// ambiguous failure (the command may have run, the reply was lost) is safe.
func (s *Store) do(ctx context.Context, op string, fn func(context.Context) error) error {
	err := fn(ctx)
	if err == nil {
		return nil
	}
	start := time.Now()
	backoff := s.opt.InitialBackoff
	var rng *rand.Rand
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return fmt.Errorf("store: %s: %w (last error: %v)", op, ctx.Err(), err)
		}
		if !isTransient(err) {
			return fmt.Errorf("store: %s: %w", op, err)
		}
		elapsed := time.Since(start)
		remaining := s.opt.MaxRetryElapsed - elapsed
		if remaining <= 0 {
			return fmt.Errorf("store: %s: %w after %d attempts in %v: %w", op, ErrUnavailable, attempt, elapsed.Round(time.Millisecond), err)
		}
		if rng == nil {
			rng = rand.New(rand.NewPCG(s.opt.JitterSeed, s.retrySeq.Add(1)))
		}
		d := jitter(rng, backoff)
		if d > remaining {
			d = remaining
		}
		s.log.Warn("store: transient redis error, retrying",
			"op", op, "attempt", attempt, "backoff", d, "elapsed", elapsed, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("store: %s: %w (last error: %v)", op, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, s.opt.MaxBackoff)
		err = fn(ctx)
		if err == nil {
			return nil
		}
	}
}

// jitter returns a delay in [d/2, d).
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	half := d / 2
	if half <= 0 {
		return d
	}
	return half + time.Duration(rng.Int64N(int64(half)))
}

// isTransient reports whether err is worth retrying: the connection was
// refused, reset or closed, an attempt timed out, or the server said it is
// temporarily unable to serve (LOADING, TRYAGAIN, MASTERDOWN, CLUSTERDOWN,
// BUSY). Anything else (a script error, a wrong type, our own sentinels)
// is permanent.
func isTransient(err error) bool {
	switch {
	case err == nil:
		return false
	case errors.Is(err, ErrInvalid), errors.Is(err, ErrConflict), errors.Is(err, ErrNotFound),
		errors.Is(err, redis.ErrClosed), errors.Is(err, context.Canceled):
		return false
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.ECONNABORTED), errors.Is(err, syscall.EPIPE),
		errors.Is(err, net.ErrClosed), errors.Is(err, os.ErrDeadlineExceeded),
		errors.Is(err, redis.ErrPoolTimeout),
		// A dial or read that hit go-redis's own per-attempt timeout; the
		// caller's context is checked before isTransient is consulted.
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	var opErr *net.OpError
	if errors.As(err, &opErr) {
		return true
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return true
	}
	for _, p := range []string{"LOADING ", "TRYAGAIN ", "MASTERDOWN ", "CLUSTERDOWN ", "BUSY "} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
