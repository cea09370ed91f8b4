package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"syscall"
	"testing"
	"testing/synctest"
	"time"

	"github.com/redis/go-redis/v9"
)

// storeRetryOnly builds a Store with no connection, to drive do directly.
func storeRetryOnly(t *testing.T, opt Options) (*Store, *storeLogs) {
	t.Helper()
	logs := newStoreLogs(t)
	opt.Logger = storeSlog(logs)
	opt, err := opt.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	return &Store{opt: opt, log: opt.Logger}, logs
}

var errStoreRefused = &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}

// TestRetrySchedule checks, in virtual time, that transient failures are
// retried with jittered exponential backoff, capped, logged once per
// retry, and end in ErrUnavailable exactly at MaxRetryElapsed.
func TestRetrySchedule(t *testing.T) {
	schedule := func(seed uint64) []time.Duration {
		var gaps []time.Duration
		synctest.Test(t, func(t *testing.T) {
			opt := Options{MaxRetryElapsed: 2 * time.Second, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 400 * time.Millisecond, JitterSeed: seed}
			s, logs := storeRetryOnly(t, opt)
			start := time.Now()
			last := start
			attempts := 0
			err := s.do(context.Background(), "test", func(context.Context) error {
				if attempts > 0 {
					gaps = append(gaps, time.Since(last))
				}
				attempts++
				last = time.Now()
				return fmt.Errorf("wrapped: %w", errStoreRefused)
			})
			if !errors.Is(err, ErrUnavailable) || !errors.Is(err, syscall.ECONNREFUSED) {
				t.Fatalf("err = %v, want ErrUnavailable wrapping ECONNREFUSED", err)
			}
			if got := time.Since(start); got != opt.MaxRetryElapsed {
				t.Fatalf("gave up after %v, want exactly %v", got, opt.MaxRetryElapsed)
			}
			if w := logs.warnings(); len(w) != attempts-1 {
				t.Fatalf("%d warnings for %d attempts", len(w), attempts)
			}
			backoff := opt.InitialBackoff
			for i, g := range gaps {
				if i == len(gaps)-1 {
					if g > backoff {
						t.Fatalf("last gap %v > backoff %v", g, backoff)
					}
					break
				}
				if g < backoff/2 || g >= backoff {
					t.Fatalf("gap %d = %v, want in [%v, %v)", i, g, backoff/2, backoff)
				}
				backoff = min(2*backoff, opt.MaxBackoff)
			}
		})
		return gaps
	}
	a, b, c := schedule(1), schedule(1), schedule(2)
	if !slices.Equal(a, b) {
		t.Fatalf("same JitterSeed, different schedules:\n%v\n%v", a, b)
	}
	if slices.Equal(a, c) {
		t.Fatalf("different JitterSeeds, same schedule: %v", a)
	}
	t.Logf("schedule: %v", a)
}

func TestRetryRecovers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, logs := storeRetryOnly(t, Options{MaxRetryElapsed: time.Minute})
		n := 0
		err := s.do(context.Background(), "test", func(context.Context) error {
			n++
			switch n {
			case 1:
				return io.EOF
			case 2:
				return redis.ErrPoolTimeout
			case 3:
				return storeRedisErr("LOADING Redis is loading the dataset in memory")
			}
			return nil
		})
		if err != nil || n != 4 || len(logs.warnings()) != 3 {
			t.Fatalf("err %v after %d attempts and %d warnings; want success on the 4th", err, n, len(logs.warnings()))
		}
	})
}

func TestRetryPermanent(t *testing.T) {
	s, logs := storeRetryOnly(t, Options{})
	n := 0
	perm := storeRedisErr("ERR Error running script")
	err := s.do(context.Background(), "test", func(context.Context) error { n++; return perm })
	if n != 1 || !errors.Is(err, perm) || errors.Is(err, ErrUnavailable) || len(logs.warnings()) != 0 {
		t.Fatalf("permanent error: %d attempts, err %v", n, err)
	}
}

func TestRetryCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s, _ := storeRetryOnly(t, Options{MaxRetryElapsed: time.Hour, InitialBackoff: time.Second, MaxBackoff: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		start := time.Now()
		time.AfterFunc(10*time.Second, cancel)
		err := s.do(ctx, "test", func(context.Context) error { return io.ErrUnexpectedEOF })
		if !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("err = %v, want context.Canceled", err)
		}
		if got := time.Since(start); got != 10*time.Second {
			t.Fatalf("returned %v after start, want at the cancel (10s)", got)
		}
	})
}

// storeRedisErr is a server error reply as go-redis returns it.
type storeRedisErr string

func (e storeRedisErr) Error() string { return string(e) }
func (storeRedisErr) RedisError()     {}

func TestIsTransient(t *testing.T) {
	timeout := &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{io.EOF, true},
		{fmt.Errorf("x: %w", io.ErrUnexpectedEOF), true},
		{errStoreRefused, true},
		{syscall.ECONNRESET, true},
		{syscall.EPIPE, true},
		{timeout, true},
		{redis.ErrPoolTimeout, true},
		{context.DeadlineExceeded, true},
		{storeRedisErr("LOADING Redis is loading the dataset in memory"), true},
		{storeRedisErr("TRYAGAIN Multiple keys request during rehashing of slot"), true},
		{storeRedisErr("MASTERDOWN Link with MASTER is down"), true},
		{storeRedisErr("BUSY Redis is busy running a script"), true},
		{storeRedisErr("EXECABORT Transaction discarded because of previous errors."), true},
		{storeRedisErr("ERR wrong number of arguments"), false},
		{storeRedisErr("WRONGTYPE Operation against a key holding the wrong kind of value"), false},
		{storeRedisErr("BUSYKEY Target key name already exists"), false},
		{redis.ErrClosed, false},
		{context.Canceled, false},
		{ErrInvalid, false},
		{fmt.Errorf("%w: x", ErrConflict), false},
		{errors.New("something else"), false},
		{nil, false},
	} {
		if got := isTransient(c.err); got != c.want {
			t.Errorf("isTransient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// Retry, for Redis work outside a Store (a policy publish), retries a transaction the server
// aborted (EXECABORT, as while it loads its AOF) and returns once it commits.
func TestRetryExportedRetriesExecAbort(t *testing.T) {
	calls := 0
	err := Retry(context.Background(), Options{InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Logger: storeSlog(newStoreLogs(t))},
		"publish", func(context.Context) error {
			if calls++; calls < 3 {
				return storeRedisErr("EXECABORT Transaction discarded because of previous errors.")
			}
			return nil
		})
	if err != nil || calls != 3 {
		t.Fatalf("Retry: %v after %d calls, want success on the third", err, calls)
	}
	calls = 0
	err = Retry(context.Background(), Options{}, "publish", func(context.Context) error {
		calls++
		return storeRedisErr("WRONGTYPE Operation against a key holding the wrong kind of value")
	})
	if err == nil || calls != 1 {
		t.Fatalf("a permanent error: %v after %d calls", err, calls)
	}
	if err := Retry(context.Background(), Options{MaxRetryElapsed: -1}, "x", func(context.Context) error { return nil }); !errors.Is(err, ErrInvalid) {
		t.Fatalf("bad options: %v", err)
	}
}
