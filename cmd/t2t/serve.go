package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

// serveConfig is what `t2t serve` runs with.
type serveConfig struct {
	dir, addr, name string
	spec            engine.Spec
	seed            uint64
	maxTokens       int
	logger          *slog.Logger
}

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t serve", "t2t serve --model DIR [--addr 127.0.0.1:8000] [flags]   (SIGHUP reloads DIR)", stderr)
	dir := fs.String("model", "", "Hugging Face Qwen3 checkpoint directory (config.json, model.safetensors, tokenizer.json); required")
	addr := fs.String("addr", "127.0.0.1:8000", "listen address")
	name := fs.String("name", "", "model id clients send (default: the directory's base name)")
	device := fs.String("device", "cpu", deviceFlagHelp)
	ef := addEngineFlags(fs)
	seed := fs.Uint64("seed", 1, "sampling seed for requests without a seed")
	maxTokens := fs.Int("max-tokens", 512, "default max_tokens of a chat completion")
	verbose := fs.Bool("v", false, "log requests to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return badInput("--model is required")
	}
	spec, err := ef.spec(*device, stderr)
	if err != nil {
		return err
	}
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serveModel(ctx, serveConfig{dir: *dir, addr: *addr, name: *name, spec: spec, seed: *seed, maxTokens: *maxTokens, logger: logger}, hup, stdout, serveHooks{})
}

// serveHooks let tests follow a server: ready gets the address once the listener is up,
// reloaded the outcome of each reload. Nil hooks are skipped.
type serveHooks struct {
	ready    func(addr string)
	reloaded func(revision int64, err error)
}

// serveModel loads the model, serves it on cfg.addr until ctx ends, and reloads the directory
// on every value from hup (a new model on the same engine; the previous one is closed once its
// running requests end).
func serveModel(ctx context.Context, cfg serveConfig, hup <-chan os.Signal, stdout io.Writer, hooks serveHooks) error {
	lm, err := textpolicy.OpenLM(ctx, cfg.spec, cfg.dir)
	if err != nil {
		return engineErr("--model", err)
	}
	srv, err := serve.New(lm, serve.Options{ModelName: cfg.name, DefaultMaxTokens: cfg.maxTokens, Seed: cfg.seed, Logger: cfg.logger})
	if err != nil {
		_ = lm.Close()
		return badInput("%v", err)
	}
	defer func() {
		cur, _ := srv.Current()
		_ = cur.Close()
	}()
	ln, err := net.Listen("tcp", cfg.addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	addr := ln.Addr().String()
	fmt.Fprintf(stdout, "serving %s (%d parameters, context %d, engine %s on %s) at http://%s/v1 — SIGHUP reloads %s\n",
		srv.ModelName(), lm.Model.Config().NumParams(), lm.MaxContext(), lm.Model.Engine(), lm.Model.Device(), addr, cfg.dir)
	if hooks.ready != nil {
		hooks.ready(addr)
	}
	for {
		select {
		case <-hup:
			rev, err := reloadModel(ctx, srv, cfg)
			if hooks.reloaded != nil {
				hooks.reloaded(rev, err)
			}
			if err != nil {
				fmt.Fprintf(stdout, "reload failed, still serving the previous model: %v\n", err)
				continue
			}
			fmt.Fprintf(stdout, "reloaded %s: revision %d\n", cfg.dir, rev)
		case err := <-errc:
			return fmt.Errorf("serve: %w", err)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		}
	}
}

// reloadModel loads cfg.dir on the same engine and swaps it in; the previous model is closed
// (a torch worker stopped) once the requests running on it end.
func reloadModel(ctx context.Context, srv *serve.Server, cfg serveConfig) (int64, error) {
	lm, err := textpolicy.OpenLM(ctx, cfg.spec, cfg.dir)
	if err != nil {
		return 0, fmt.Errorf("reload %s: %w", cfg.dir, err)
	}
	old, _ := srv.Current()
	rev := srv.Swap(lm)
	go func() { _ = old.Close() }()
	return rev, nil
}
