package store

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

type hookCtxKey struct{}

// TestObserveCommand: Options.ObserveCommand sees each command the Store
// sends (a new connection's HELLO and setup pipeline too), by its
// lower-case name, a pipeline as one "pipeline", with the caller's context.
func TestObserveCommand(t *testing.T) {
	var (
		mu     sync.Mutex
		seen   []string // every command
		caller []string // those sent with the caller's context
	)
	s := storeOpenMini(t, Options{ObserveCommand: func(ctx context.Context, command string, d time.Duration) {
		mu.Lock()
		defer mu.Unlock()
		if d < 0 {
			t.Errorf("%s took %v", command, d)
		}
		seen = append(seen, command)
		if ctx.Value(hookCtxKey{}) == "caller" {
			caller = append(caller, command)
		}
	}})
	mu.Lock()
	if !slices.Contains(seen, "ping") {
		t.Errorf("Open's ping not observed: %v", seen)
	}
	mu.Unlock()
	ctx := context.WithValue(context.Background(), hookCtxKey{}, "caller")
	if err := s.PutRunState(ctx, RunState{RunID: "r", Phase: "p"}); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := s.RunState(ctx, "r"); !ok || err != nil {
		t.Fatalf("RunState: %v %v", ok, err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, want := range []string{PipelineCommand, "get"} {
		if !slices.Contains(caller, want) {
			t.Errorf("ObserveCommand saw %v with the caller's context, not %q", caller, want)
		}
	}
	if slices.Contains(seen, "set") || slices.Contains(seen, "sadd") {
		t.Errorf("a pipeline's commands were observed one by one: %v", seen)
	}
}
