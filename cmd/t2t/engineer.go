package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

func runEngineer(args []string, stdout, stderr io.Writer) error {
	return subcommands("engineer", []command{
		{"propose", "print the engineer's prompt and its proposal as a config diff, offline", engineerPropose},
	}, args, stdout, stderr)
}

func engineerPropose(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t engineer propose", "t2t engineer propose --config-history FILE.json | --run ID --redis URL [--stage N] [--strategy S] [--modules F,G,H0,T]", stderr)
	histPath := fs.String("config-history", "", "history JSON (engineer.History, as --dump-history writes it)")
	runID := fs.String("run", "", "run id to read from Redis (with --redis)")
	redisURL := fs.String("redis", "", "Redis URL holding the run (redis://host:port/db)")
	totalStages := fs.Int("total-stages", 0, "the run's planned stages, shown by module T (0: unknown)")
	stage := fs.Int("stage", -1, "propose the config of this stage from the stages before it (-1: the next stage)")
	strategy := fs.String("strategy", engineer.NameLLM, "strategy: "+strings.Join(engineer.StrategyNames(), ", "))
	modules := fs.String("modules", "F,G,H0,T", "llm context modules (F, G, H, H0, S, T)")
	tokenBudget := fs.Int("token-budget", 0, "llm: trim the prompt to this many approximate tokens (0: no limit)")
	seed := fs.Uint64("seed", 1, "seed of the random strategy")
	cfgPath := fs.String("config", "", "config used when the history has no stage (default: the embedded local config)")
	llmURL := fs.String("llm-url", "", "llm: OpenAI-compatible API root; without it only the prompt is printed")
	llmModel := fs.String("llm-model", "", "llm: model name")
	llmKeyEnv := fs.String("llm-key-env", "OPENAI_API_KEY", "llm: environment variable holding the API key (may be unset)")
	dump := fs.String("dump-history", "", "also write the history used as JSON to this file (input for --config-history)")
	outPath := fs.String("out", "", "write the proposed config JSON to this file")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if (*histPath == "") == (*runID == "") {
		return badInput("give exactly one of --config-history FILE and --run ID")
	}
	if *runID != "" && *redisURL == "" {
		return badInput("--run needs --redis URL")
	}
	mods, err := engineer.ParseModules(*modules)
	if err != nil {
		return badInput("--modules: %v", err)
	}
	base, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	var h *engineer.History
	if *histPath != "" {
		b, err := os.ReadFile(*histPath)
		if err != nil {
			return badInput("%v", err)
		}
		h = new(engineer.History)
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(h); err != nil {
			return badInput("%s: %v", *histPath, jsonReason(err))
		}
	} else {
		st, err := store.Open(ctx, store.Options{URL: *redisURL, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			return fmt.Errorf("redis: %w", err)
		}
		defer st.Close()
		if h, err = train.History(ctx, st, *runID, *totalStages); err != nil {
			return err
		}
		if len(h.Stages) == 0 {
			return badInput("run %q has no finished stage in %s", *runID, *redisURL)
		}
	}
	if *stage >= 0 {
		var keep []engineer.StageResult
		for _, s := range h.Stages {
			if s.Stage < *stage {
				keep = append(keep, s)
			}
		}
		h.Stages = keep
	}
	if *dump != "" {
		b, err := json.MarshalIndent(h, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileAtomic(*dump, append(b, '\n')); err != nil {
			return err
		}
	}
	prev := base
	if last := h.Last(); last != nil {
		prev = last.Config
	}
	fmt.Fprintf(stdout, "history: run %q, %d finished stages; proposing stage %d with strategy %s\n", h.RunID, len(h.Stages), h.NextStage(), *strategy)
	name := strings.ToLower(strings.TrimSpace(*strategy))
	if name == engineer.NameLLM {
		p, err := engineer.BuildPrompt(h, mods, *tokenBudget)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "\n=== prompt: modules %s, hash %s, ~%d tokens", mods, p.Hash, p.Tokens)
		if p.OmittedExamples+p.OmittedStages > 0 {
			fmt.Fprintf(stdout, " (%d examples and %d stages omitted for the budget)", p.OmittedExamples, p.OmittedStages)
		}
		fmt.Fprintf(stdout, " ===\n--- system ---\n%s\n--- user ---\n%s\n", p.System, p.User)
		if *llmURL == "" {
			fmt.Fprintln(stdout, "\n(no --llm-url: prompt only, no proposal)")
			return nil
		}
	}
	strat, err := engineer.ParseStrategy(name, engineer.Options{
		Seed: *seed, Base: &base, Feasible: env.CheckFeasible,
		LLM: engineer.LLMOptions{BaseURL: *llmURL, Model: *llmModel, APIKey: os.Getenv(*llmKeyEnv), Modules: mods, TokenBudget: *tokenBudget},
	})
	if err != nil {
		return badInput("--strategy: %v", err)
	}
	prop, err := strat.Propose(ctx, h)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\n=== proposal (%s) for stage %d: config %s ===\nrationale: %s\n", strat.Name(), h.NextStage(), prop.Config.Hash(), prop.Rationale)
	if prop.Fallback {
		fmt.Fprintln(stdout, "fallback: the previous config is kept")
	}
	for i, a := range prop.Attempts {
		verdict := "rejected"
		if a.Accepted {
			verdict = "accepted"
		}
		fmt.Fprintf(stdout, "attempt %d: %s: %s\n", i, verdict, a.Reason)
	}
	if d := prop.Config.Diff(prev); d != "" {
		fmt.Fprintf(stdout, "diff from the stage %d config:\n", h.NextStage()-1)
		for _, line := range strings.Split(d, "\n") {
			fmt.Fprintf(stdout, "  %s\n", line)
		}
	} else {
		fmt.Fprintln(stdout, "no change from the previous config")
	}
	b, err := json.MarshalIndent(prop.Config, "", "  ")
	if err != nil {
		return err
	}
	if *outPath != "" {
		return writeFileAtomic(*outPath, append(b, '\n'))
	}
	_, err = fmt.Fprintf(stdout, "config:\n%s\n", b)
	return err
}
