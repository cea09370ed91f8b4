package store

import (
	"context"
	"fmt"
	"log/slog"
	"time"
)

// Options configures a Store. The zero value is usable: it embeds a
// miniredis server with the defaults below.
type Options struct {
	// URL of the Redis server, as accepted by go-redis ParseURL
	// ("redis://[user:pass@]host:port/db", "rediss://..." for TLS; Flags.URL
	// adds a password from a file or the environment). Errors and
	// Store.URL show it redacted.
	// Empty: start an embedded miniredis on 127.0.0.1 and own it (Close
	// stops it; its data lives in memory only).
	URL string
	// Prefix of every key. Default "t2t". Letters, digits and ".-_:" only.
	Prefix string
	// MaxRetryElapsed bounds how long one operation keeps retrying
	// transient failures before it returns ErrUnavailable. Default 2m.
	MaxRetryElapsed time.Duration
	// InitialBackoff is the first retry delay; it doubles each retry up to
	// MaxBackoff and is jittered to [d/2, d). Defaults 50ms and 2s.
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// OpTimeout bounds each attempt's dial, read and write. Default 5s.
	OpTimeout time.Duration
	// MaxExamples caps the failure-example stream of each (run, stage,
	// split); older examples are trimmed. Default 200.
	MaxExamples int
	// JitterSeed seeds the retry jitter (math/rand/v2 PCG), so retry
	// schedules are reproducible. Default 0.
	JitterSeed uint64
	// Logger receives one Warn record per retry. Default slog.Default().
	Logger *slog.Logger
	// ObserveCommand, when set, sees every Redis command the Store sends
	// (each attempt of a retried operation, and a new connection's HELLO
	// and setup), with the caller's context and how long the round trip
	// took; a pipeline or transaction is one call named PipelineCommand.
	// Commands are named in lower case ("get", "evalsha"). It is called on
	// the caller's goroutine and must be quick (telemetry.Metrics.ObserveRedis
	// is). Default: none.
	ObserveCommand func(ctx context.Context, command string, d time.Duration)
}

// Defaults of Options.
const (
	DefaultPrefix          = "t2t"
	DefaultMaxRetryElapsed = 2 * time.Minute
	DefaultInitialBackoff  = 50 * time.Millisecond
	DefaultMaxBackoff      = 2 * time.Second
	DefaultOpTimeout       = 5 * time.Second
	DefaultMaxExamples     = 200
)

// withDefaults validates opt and fills in the defaults.
func (opt Options) withDefaults() (Options, error) {
	if opt.Prefix == "" {
		opt.Prefix = DefaultPrefix
	}
	for i := 0; i < len(opt.Prefix); i++ {
		c := opt.Prefix[i]
		if !isIDByte(c) && c != ':' {
			return opt, fmt.Errorf("%w: Options.Prefix = %q: only letters, digits and \".-_:\" allowed", ErrInvalid, opt.Prefix)
		}
	}
	durs := []struct {
		name string
		p    *time.Duration
		def  time.Duration
	}{
		{"MaxRetryElapsed", &opt.MaxRetryElapsed, DefaultMaxRetryElapsed},
		{"InitialBackoff", &opt.InitialBackoff, DefaultInitialBackoff},
		{"MaxBackoff", &opt.MaxBackoff, DefaultMaxBackoff},
		{"OpTimeout", &opt.OpTimeout, DefaultOpTimeout},
	}
	for _, d := range durs {
		if *d.p < 0 {
			return opt, fmt.Errorf("%w: Options.%s = %v: must be >= 0", ErrInvalid, d.name, *d.p)
		}
		if *d.p == 0 {
			*d.p = d.def
		}
	}
	if opt.MaxBackoff < opt.InitialBackoff {
		return opt, fmt.Errorf("%w: Options.MaxBackoff = %v: must be >= InitialBackoff (%v)", ErrInvalid, opt.MaxBackoff, opt.InitialBackoff)
	}
	if opt.MaxExamples < 0 {
		return opt, fmt.Errorf("%w: Options.MaxExamples = %d: must be >= 0", ErrInvalid, opt.MaxExamples)
	}
	if opt.MaxExamples == 0 {
		opt.MaxExamples = DefaultMaxExamples
	}
	if opt.Logger == nil {
		opt.Logger = slog.Default()
	}
	return opt, nil
}
