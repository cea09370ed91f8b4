package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/train"
)

// engineerCommands are the subcommands of "t2t engineer".
func engineerCommands() []command {
	return []command{
		{"propose", "print the engineer's prompt and its proposal as a config diff, offline", engineerPropose},
		{"turns", "engineer turns (context + a teacher's proposal) from recorded run histories, for t2t sft --engineer-turns", engineerTurns},
		{"score", "score a checkpoint as the engineer on held-out turns: valid JSON %, accepted %, distance to the teacher", engineerScore},
	}
}

func runEngineer(args []string, stdout, stderr io.Writer) error {
	return subcommands("engineer", engineerCommands(), args, stdout, stderr)
}

const proposeUsage = `t2t engineer propose --config-history FILE.json | --run ID --redis URL [--stage N] [--strategy S] [--modules F,G,H0,T] [--prompt full|compact]
        [--engineer self|base|URL [--model DIR] [--engineer-model NAME]]`

// proposeFlags are the flags of t2t engineer propose; spec holds the engineer's.
type proposeFlags struct {
	histPath, runID, cfgPath, dump, outPath, device, keyEnv string
	totalStages, stage, tokenBudget                         int
	spec                                                    train.EngineerSpec
	eng                                                     *engine.Flags
	checkRetry                                              func() error
	redis                                                   store.Flags
}

func addProposeFlags(fs *flag.FlagSet) *proposeFlags {
	f := &proposeFlags{}
	e := &f.spec
	fs.StringVar(&f.histPath, "config-history", "", "history JSON (engineer.History, as --dump-history writes it)")
	fs.StringVar(&f.runID, "run", "", "run id to read from Redis (with --redis)")
	f.redis.Register(fs, "Redis URL holding the run (redis://host:port/db)")
	fs.IntVar(&f.totalStages, "total-stages", 0, "the run's planned stages, shown by module T (0: unknown)")
	fs.IntVar(&f.stage, "stage", -1, "propose the config of this stage from the stages before it (-1: the next stage)")
	fs.StringVar(&e.Strategy, "strategy", engineer.NameLLM, "strategy: "+strings.Join(engineer.StrategyNames(), ", "))
	fs.StringVar(&e.Modules, "modules", engineer.DefaultModules, "llm context modules (F, G, H, H0, S, T)")
	fs.StringVar(&e.Prompt, "prompt", engineer.PromptFull, "llm: engineer prompt style, full or compact (for a checkpoint fine-tuned with t2t sft --engineer-turns on compact turns)")
	fs.IntVar(&f.tokenBudget, "token-budget", 0, "llm: trim the prompt to this many approximate tokens (0: no limit)")
	fs.Uint64Var(&e.Seed, "seed", 1, "seed of the random strategy and of the engineer's sampling")
	fs.StringVar(&f.cfgPath, "config", "", "config used when the history has no stage (default: the embedded local config)")
	fs.StringVar(&e.Target, "engineer", "", "llm: who answers: self (the checkpoint --model, as the policy being trained would), base (a frozen\n"+
		"copy of --model), or an OpenAI-compatible API root; without it only the prompt is printed")
	fs.StringVar(&e.Target, "llm-url", "", "alias of --engineer URL")
	fs.StringVar(&e.BaseModel, "model", "", "llm with --engineer self or base: the Hugging Face checkpoint directory")
	fs.StringVar(&e.Model, "engineer-model", "", "llm with an --engineer URL: the model name")
	fs.StringVar(&e.Model, "llm-model", "", "alias of --engineer-model")
	fs.StringVar(&f.keyEnv, "llm-key-env", "OPENAI_API_KEY", "llm: environment variable holding the API key (may be unset)")
	fs.IntVar(&e.MaxTokens, "max-tokens", engineer.DefaultMaxTokens, "llm: most tokens per answer")
	fs.Float64Var(&e.Temperature, "temperature", engineer.DefaultTemperature, "llm: sampling temperature (0: greedy)")
	fs.IntVar(&e.Retries, "retries", engineer.DefaultRetries, "llm: further attempts after a rejected answer (--retry says how)")
	f.checkRetry = addRetryFlags(fs, &e.Retry, &e.RetryTemperature)
	fs.BoolVar(&e.Thinking, "thinking", false, "llm with self or base: let the model think (<think>…</think>) before its JSON")
	fs.StringVar(&f.dump, "dump-history", "", "also write the history used as JSON to this file (input for --config-history)")
	fs.StringVar(&f.outPath, "out", "", "write the proposed config JSON to this file")
	fs.StringVar(&f.device, "device", "cpu", train.DeviceHelp)
	f.eng = addEngineFlags(fs)
	return f
}

// addRetryFlags binds engineer propose's and score's --retry and --retry-temperature; the
// function it returns checks and normalises them after parsing (train.ParseRetry).
func addRetryFlags(fs *flag.FlagSet, mode *string, temp *float64) func() error {
	fs.StringVar(mode, "retry", engineer.RetryConversation, engineer.RetryHelp("--retry-temperature"))
	fs.Float64Var(temp, "retry-temperature", engineer.DefaultTemperature, "with --retry resample: the retries' sampling temperature, in (0, 2]")
	return func() (err error) {
		*mode, *temp, err = train.ParseRetry(*mode, *temp, "retry")
		return err
	}
}

func engineerPropose(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t engineer propose", proposeUsage, stderr)
	f := addProposeFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	f.spec.Strategy = strings.ToLower(strings.TrimSpace(f.spec.Strategy))
	if err := f.checkRetry(); err != nil {
		return err
	}
	if (f.histPath == "") == (f.runID == "") {
		return badInput("give exactly one of --config-history FILE and --run ID")
	}
	if f.runID != "" && f.redis.URL() == "" {
		return badInput("--run needs --redis URL")
	}
	mods, err := engineer.ParseModules(f.spec.Modules)
	if err != nil {
		return badInput("--modules: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	h, err := train.ProposeHistory(ctx, f.histPath, f.runID, f.redis.URL(), f.totalStages)
	if err != nil {
		return err
	}
	if f.stage >= 0 {
		h.Before(f.stage)
	}
	if f.dump != "" {
		if err := writeJSONFile(f.dump, nil, h); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "history: run %q, %d finished stages; proposing stage %d with strategy %s\n", h.RunID, len(h.Stages), h.NextStage(), f.spec.Strategy)
	style, err := engineer.ParsePromptStyle(f.spec.Prompt)
	if err != nil {
		return badInput("--prompt %q: want full or compact", f.spec.Prompt)
	}
	if f.spec.Strategy == engineer.NameLLM {
		p, err := engineer.BuildStyledPrompt(h, mods, style, f.tokenBudget)
		if err != nil {
			return err
		}
		if err := engineer.WritePrompt(stdout, p, mods); err != nil {
			return err
		}
		if f.spec.Target == "" {
			fmt.Fprintln(stdout, "\n(no --engineer: prompt only, no proposal)")
			return nil
		}
	}
	return f.propose(ctx, h, stdout)
}

// propose asks the flags' strategy for h's next config and prints it.
func (f *proposeFlags) propose(ctx context.Context, h *engineer.History, stdout io.Writer) error {
	base, err := loadConfig(f.cfgPath)
	if err != nil {
		return err
	}
	spec := f.spec
	spec.APIKey, spec.Logger = os.Getenv(f.keyEnv), slog.New(slog.DiscardHandler)
	if spec.Engine, err = engineSpec(f.eng, f.device, io.Discard); err != nil {
		return err
	}
	prop, err := train.ProposeNext(ctx, spec, base, h, stdout)
	if err != nil {
		return err
	}
	if f.outPath != "" {
		return writeJSONFile(f.outPath, nil, prop.Config)
	}
	b, err := json.MarshalIndent(prop.Config, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "config:\n%s\n", b)
	return err
}

// writeJSONFile writes v as indented JSON and a newline to path, as writeOut does.
func writeJSONFile(path string, stdout io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return writeOut(path, stdout, append(b, '\n'))
}
