package store

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
)

// observeHook is the go-redis hook of Options.ObserveCommand: it times
// each command and each pipeline (a transaction is one) as sent, retries
// being the Store's own loop around them.
type observeHook func(ctx context.Context, command string, d time.Duration)

// PipelineCommand is the command name ObserveCommand sees for a pipeline
// or transaction (MULTI ... EXEC).
const PipelineCommand = "pipeline"

// DialHook implements redis.Hook: dials are not timed.
func (h observeHook) DialHook(next redis.DialHook) redis.DialHook { return next }

// ProcessHook implements redis.Hook.
func (h observeHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		t0 := time.Now()
		err := next(ctx, cmd)
		h(ctx, cmd.Name(), time.Since(t0))
		return err
	}
}

// ProcessPipelineHook implements redis.Hook.
func (h observeHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		t0 := time.Now()
		err := next(ctx, cmds)
		h(ctx, PipelineCommand, time.Since(t0))
		return err
	}
}
