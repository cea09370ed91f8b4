package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
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
	return retry(ctx, s.opt, s.log, func() *rand.Rand { return rand.New(rand.NewPCG(s.opt.JitterSeed, s.retrySeq.Add(1))) }, op, fn)
}

// Retry runs fn as the store runs its own operations: again after each transient Redis
// failure (a lost connection, LOADING, TRYAGAIN, …, EXECABORT), with jittered exponential
// backoff, until it succeeds, fails otherwise, ctx ends or opt.MaxRetryElapsed has passed
// (zero fields take the defaults). fn must be idempotent. For Redis work outside a Store, such
// as publishing a policy.
func Retry(ctx context.Context, opt Options, op string, fn func(context.Context) error) error {
	opt, err := opt.withDefaults()
	if err != nil {
		return err
	}
	return retry(ctx, opt, opt.Logger, func() *rand.Rand { return rand.New(rand.NewPCG(opt.JitterSeed, 1)) }, op, fn)
}

// retry is do's loop; newRNG gives the jitter source on the first retry.
func retry(ctx context.Context, opt Options, log *slog.Logger, newRNG func() *rand.Rand, op string, fn func(context.Context) error) error {
	err := fn(ctx)
	if err == nil {
		return nil
	}
	start := time.Now()
	backoff := opt.InitialBackoff
	var rng *rand.Rand
	for attempt := 1; ; attempt++ {
		if ctx.Err() != nil {
			return fmt.Errorf("store: %s: %w (last error: %v)", op, ctx.Err(), err)
		}
		if !isTransient(err) {
			return fmt.Errorf("store: %s: %w", op, err)
		}
		elapsed := time.Since(start)
		remaining := opt.MaxRetryElapsed - elapsed
		if remaining <= 0 {
			return fmt.Errorf("store: %s: %w after %d attempts in %v: %w", op, ErrUnavailable, attempt, elapsed.Round(time.Millisecond), err)
		}
		if rng == nil {
			rng = newRNG()
		}
		d := jitter(rng, backoff)
		if d > remaining {
			d = remaining
		}
		log.Warn("store: transient redis error, retrying",
			"op", op, "attempt", attempt, "backoff", d, "elapsed", elapsed, "err", err)
		t := time.NewTimer(d)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("store: %s: %w (last error: %v)", op, ctx.Err(), err)
		case <-t.C:
		}
		backoff = min(2*backoff, opt.MaxBackoff)
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
	// EXECABORT: a MULTI/EXEC whose queued commands a loading server refused (seen while Redis
	// loaded its AOF); the whole transaction is retried.
	for _, p := range []string{"LOADING ", "TRYAGAIN ", "MASTERDOWN ", "CLUSTERDOWN ", "BUSY ", "EXECABORT "} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}
