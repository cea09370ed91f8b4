package main

import (
	"context"
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
	var opt serve.Options
	fs.IntVar(&opt.DefaultMaxTokens, "max-tokens", 512, "default max_tokens of a chat completion")
	fs.BoolVar(&opt.NoThinking, "no-thinking", false, "render chat prompts without thinking (enable_thinking=false) unless a request's chat_template_kwargs says otherwise:\n"+
		"for checkpoints fine-tuned without it, as t2t sft's are unless --thinking (default: with thinking, as Qwen3's template and vLLM)")
	serve.RegisterFlags(fs, &opt)
	fs.IntVar(&opt.GenSlots, "gen-slots", 0, "sample through one continuous-batching scheduler with a KV pool of N sequences: up to N requests\n"+
		"run at once and share decode steps (the pool's memory comes out of --max-memory); 0: one generation at a time")
	fs.IntVar(&opt.GenSlotLen, "gen-slot-len", 0, "--gen-slots: positions per sequence (prompt + max_tokens; a longer request runs alone); default: the context, at most 4096")
	verbose := fs.Bool("v", false, "log every request to stderr (failed generations and model swaps that lose the scheduler are logged without it)")
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
	level := slog.LevelWarn
	if *verbose {
		level = slog.LevelInfo
	}
	opt.ModelName, opt.Seed = *name, *seed
	opt.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	return serve.Run(ctx, serve.RunConfig{Dir: *dir, Addr: *addr, Engine: spec, Options: opt}, hup, stdout)
}
