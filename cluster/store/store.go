package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// Store is the Redis-backed store of a t2t cluster. It is safe for
// concurrent use by many goroutines.
type Store struct {
	opt      Options
	log      *slog.Logger
	rdb      *redis.Client
	mini     *miniredis.Miniredis // non-nil in embedded mode; owned
	url      string               // redacted
	retrySeq atomic.Uint64        // PCG stream of the next retry loop
}

// Open connects to Options.URL (or starts an embedded miniredis when it is
// empty) and pings it, retrying transient failures like every operation.
// The returned Store must be closed.
func Open(ctx context.Context, opt Options) (*Store, error) {
	opt, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	s := &Store{opt: opt, log: opt.Logger}
	raw := opt.URL
	if raw == "" {
		s.mini = miniredis.NewMiniRedis()
		if err := s.mini.StartAddr("127.0.0.1:0"); err != nil {
			return nil, fmt.Errorf("store: start embedded miniredis: %w", err)
		}
		raw = "redis://" + s.mini.Addr()
	}
	ro, err := ParseURL(raw)
	if err != nil {
		s.closeMini()
		return nil, err
	}
	// The Store owns retries: one attempt per go-redis call, bounded by
	// OpTimeout, then our backoff loop.
	ro.MaxRetries = -1
	ro.DialerRetries = 1
	ro.DialTimeout = opt.OpTimeout
	ro.ReadTimeout = opt.OpTimeout
	ro.WriteTimeout = opt.OpTimeout
	ro.ContextTimeoutEnabled = true
	ro.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	s.rdb = redis.NewClient(ro)
	if opt.ObserveCommand != nil {
		s.rdb.AddHook(observeHook(opt.ObserveCommand))
	}
	s.url = RedactURL(raw)
	if err := s.do(ctx, "open", func(ctx context.Context) error {
		return s.rdb.Ping(ctx).Err()
	}); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// Observe makes fn see every Redis command sent from now on, as
// Options.ObserveCommand does, for a caller whose metrics exist only after
// the Store opened. Call it before the Store is shared between goroutines.
func (s *Store) Observe(fn func(ctx context.Context, command string, d time.Duration)) {
	s.rdb.AddHook(observeHook(fn))
}

// URL reports the address of the Redis server, password redacted
// (RedactURL: redis://:***@host:port/db). In embedded mode it is the
// miniredis address, which other processes on the same machine can use
// while the Store is open.
func (s *Store) URL() string { return s.url }

// Close closes the connection pool and, in embedded mode, stops miniredis
// (its data is lost).
func (s *Store) Close() error {
	err := s.rdb.Close()
	s.closeMini()
	if err != nil && !errors.Is(err, redis.ErrClosed) {
		return fmt.Errorf("store: close: %w", err)
	}
	return nil
}

func (s *Store) closeMini() {
	if s.mini != nil {
		s.mini.Close()
	}
}

// Key schema; see doc.go. All keys of one run share the hash tag {run}.

func (s *Store) runsKey() string { return s.opt.Prefix + ":runs" }

func (s *Store) runKey(runID, suffix string) string {
	return s.opt.Prefix + ":run:{" + runID + "}:" + suffix
}

func (s *Store) stageKey(runID string, stage int, split, suffix string) string {
	return s.runKey(runID, "stage:"+strconv.Itoa(stage)+":"+split+":"+suffix)
}
