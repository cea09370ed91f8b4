package store

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

func storeOpenMini(t *testing.T, opt Options) *Store {
	t.Helper()
	opt.Logger = storeSlog(newStoreLogs(t))
	s, err := Open(context.Background(), opt)
	if err != nil {
		t.Fatalf("Open embedded: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformanceMiniredis(t *testing.T) {
	runConformance(t, storeOpenMini)
}

func TestConformanceRedis(t *testing.T) {
	srv := storeStartRedis(t)
	var n atomic.Int64
	runConformance(t, func(t *testing.T, opt Options) *Store {
		t.Helper()
		opt.URL = srv.url()
		opt.Prefix = fmt.Sprintf("t2ttest%d", n.Add(1)) // a fresh key space per subtest
		opt.Logger = storeSlog(newStoreLogs(t))
		s, err := Open(context.Background(), opt)
		if err != nil {
			t.Fatalf("Open %s: %v", opt.URL, err)
		}
		t.Cleanup(func() { _ = s.Close() })
		return s
	})
}

func TestOpenEmbedded(t *testing.T) {
	s := storeOpenMini(t, Options{})
	if s.URL() == "" || s.mini == nil {
		t.Fatalf("embedded store: URL %q, mini %v", s.URL(), s.mini)
	}
	// A second client can use the embedded server while the Store is open.
	other, err := Open(context.Background(), Options{URL: s.URL()})
	if err != nil {
		t.Fatalf("Open %s: %v", s.URL(), err)
	}
	defer other.Close()
	if err := other.PutRunState(context.Background(), RunState{RunID: "r", Phase: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.RunState(context.Background(), "r"); !ok || err != nil {
		t.Fatalf("RunState through the embedded store: %v %v", ok, err)
	}
}

func TestOpenInvalidOptions(t *testing.T) {
	for _, opt := range []Options{
		{URL: "http://x"},
		{Prefix: "a b"},
		{Prefix: "{x}"},
		{MaxRetryElapsed: -1},
		{InitialBackoff: time.Second, MaxBackoff: time.Millisecond},
		{MaxExamples: -1},
	} {
		s, err := Open(context.Background(), opt)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("Open(%+v) = %v, want ErrInvalid", opt, err)
		}
		if s != nil {
			_ = s.Close()
		}
	}
}

// storeCheckStaysDown checks that with the server gone every operation
// keeps retrying, logs each retry, and gives up with ErrUnavailable once
// MaxRetryElapsed has passed.
func storeCheckStaysDown(t *testing.T, s *Store, logs *storeLogs) {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	_, err := s.RecordUnit(ctx, UnitResult{RunID: "r", Stage: 0, Split: "train", UnitID: "u"})
	elapsed := time.Since(start)
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("RecordUnit with redis down: %v, want ErrUnavailable", err)
	}
	if elapsed < s.opt.MaxRetryElapsed {
		t.Fatalf("gave up after %v, before MaxRetryElapsed %v", elapsed, s.opt.MaxRetryElapsed)
	}
	w := logs.warnings()
	if len(w) < 2 {
		t.Fatalf("%d retry warnings, want several", len(w))
	}
	for _, r := range w {
		if r.Message != "store: transient redis error, retrying" {
			t.Fatalf("retry log message %q is not the constant one", r.Message)
		}
	}
	t.Logf("ErrUnavailable after %v and %d retries: %v", elapsed, len(w), err)
	// Reads too.
	if _, err := s.Runs(ctx); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Runs with redis down: %v, want ErrUnavailable", err)
	}
	// A cancelled context stops retrying at once and is not ErrUnavailable.
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Aggregates(cctx, "r", 0, "train"); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Aggregates with a cancelled context: %v", err)
	}
}

func storeDownOptions(logs *storeLogs) Options {
	return Options{MaxRetryElapsed: 300 * time.Millisecond, InitialBackoff: 10 * time.Millisecond,
		MaxBackoff: 50 * time.Millisecond, OpTimeout: time.Second, Logger: storeSlog(logs)}
}

func TestStaysDownMiniredis(t *testing.T) {
	logs := newStoreLogs(t)
	s, err := Open(context.Background(), storeDownOptions(logs))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.mini.Close()
	storeCheckStaysDown(t, s, logs)
}

func TestStaysDownRedis(t *testing.T) {
	srv := storeStartRedis(t)
	logs := newStoreLogs(t)
	opt := storeDownOptions(logs)
	opt.URL = srv.url()
	s, err := Open(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.PutRunState(context.Background(), RunState{RunID: "r", Phase: "p"}); err != nil {
		t.Fatal(err)
	}
	srv.kill()
	storeCheckStaysDown(t, s, logs)
	// Open against a dead server fails the same way.
	if _, err := Open(context.Background(), opt); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open with redis down: %v, want ErrUnavailable", err)
	}
}

// TestRedisRestart kills redis-server (SIGKILL) under a running store: a
// RecordUnit started while it is down blocks retrying, succeeds once the
// server is back on the same port and dir, and the acknowledged counts
// survive (AOF, appendfsync always) without double counting.
func TestRedisRestart(t *testing.T) {
	srv := storeStartRedis(t)
	logs := newStoreLogs(t)
	ctx := context.Background()
	s, err := Open(ctx, Options{URL: srv.url(), MaxRetryElapsed: time.Minute,
		InitialBackoff: 10 * time.Millisecond, MaxBackoff: 200 * time.Millisecond, Logger: storeSlog(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng, _ := storeRNG(t)
	sum := map[Key]*storeSum{}
	var units []UnitResult
	for i := range 20 {
		u := storeRandUnit(rng, "run-restart", 1, "train", fmt.Sprintf("u%d", i))
		if ok, err := s.RecordUnit(ctx, u); !ok || err != nil {
			t.Fatalf("RecordUnit %d: %v %v", i, ok, err)
		}
		storeAdd(sum, u)
		units = append(units, u)
	}
	if err := s.PutConfig(ctx, "run-restart", ConfigRecord{Stage: 1, Version: "v1", JSON: []byte(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}

	srv.kill()
	late := storeRandUnit(rng, "run-restart", 1, "train", "u-late")
	type result struct {
		applied bool
		err     error
	}
	done := make(chan result, 1)
	go func() {
		ok, err := s.RecordUnit(ctx, late)
		done <- result{ok, err}
	}()
	select {
	case <-logs.retried:
	case r := <-done:
		t.Fatalf("RecordUnit returned while redis was down: %+v", r)
	case <-time.After(30 * time.Second):
		t.Fatal("no retry logged within 30s of killing redis")
	}
	select {
	case r := <-done:
		t.Fatalf("RecordUnit returned while redis was down: %+v", r)
	default:
	}
	srv.start()
	select {
	case r := <-done:
		if r.err != nil || !r.applied {
			t.Fatalf("RecordUnit after restart: %+v", r)
		}
	case <-time.After(45 * time.Second):
		t.Fatal("RecordUnit still blocked 45s after redis came back")
	}
	storeAdd(sum, late)
	units = append(units, late)
	t.Logf("%d retries while redis was down", len(logs.warnings()))

	// Every unit again: nothing applies, nothing changes.
	for _, u := range units {
		if ok, err := s.RecordUnit(ctx, u); ok || err != nil {
			t.Fatalf("re-RecordUnit %s after restart: applied=%v err=%v", u.UnitID, ok, err)
		}
	}
	storeCheckAgg(t, s, "run-restart", 1, "train", storeExpected(sum), int64(len(units)))
	if c, err := s.Config(ctx, "run-restart", 1); err != nil || c.Version != "v1" {
		t.Fatalf("config after restart: %+v %v", c, err)
	}
}
