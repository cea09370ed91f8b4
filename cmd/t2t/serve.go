package main

import (
	"cmp"
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/t2t-lab/t2t/serve"
	"github.com/t2t-lab/t2t/train"
)

func runServe(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t serve", "t2t serve --model DIR [--addr 127.0.0.1:8000] [flags]   (SIGHUP reloads DIR)", stderr)
	dir := fs.String("model", "", "Hugging Face Qwen3 checkpoint directory (config.json, model.safetensors, tokenizer.json); required")
	addr := fs.String("addr", "127.0.0.1:8000", "listen address")
	name := fs.String("name", "", "model id clients send (default: the directory's base name)")
	device := fs.String("device", "cpu", train.DeviceHelp)
	ef := addEngineFlags(fs)
	seed := fs.Uint64("seed", 1, "sampling seed for requests without a seed")
	maxTokens := fs.Int("max-tokens", 512, "default max_tokens of a chat completion")
	limit := fs.Int("max-tokens-limit", 8192, "the most max_tokens a request may ask for (more is answered 422)")
	apiKey := fs.String("api-key", "", "bearer token every request must send (default $T2T_API_KEY; empty: none, with a warning off loopback)")
	verbose := fs.Bool("v", false, "log requests to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return badInput("--model is required")
	}
	spec, err := engineSpec(ef, *device, stderr)
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
	err = serve.Run(ctx, serve.RunConfig{Dir: *dir, Addr: *addr, Engine: spec,
		Options: serve.Options{ModelName: *name, DefaultMaxTokens: *maxTokens, MaxTokens: *limit, APIKey: cmp.Or(*apiKey, os.Getenv("T2T_API_KEY")), Seed: *seed, Logger: logger}}, hup, stdout)
	var le *serve.LoadError
	switch {
	case errors.As(err, &le):
		return engineErr("--model", le.Err)
	case errors.Is(err, serve.ErrOptions):
		return badInput("%v", err)
	}
	return err
}
