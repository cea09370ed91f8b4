package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/train"
)

const turnsUsage = `t2t engineer turns --histories FILE.jsonl --out TURNS.jsonl [--teacher learnability|rules] [--prompt full|compact]
        [--modules F,G,H0,T] [--held-out 20]   (engineer turns for t2t sft --engineer-turns and t2t engineer score)`

// engineerTurns writes the engineer turns of recorded histories.
func engineerTurns(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t engineer turns", turnsUsage, stderr)
	hist := fs.String("histories", "", "recorded run histories, JSON Lines of engineer.History (scripts/engineer-histories/record.sh; one --dump-history file works too)")
	out := fs.String("out", "", "the turns file to write, JSON Lines (required)")
	teacher := fs.String("teacher", engineer.NameLearnability, "the strategy whose proposals answer the turns: learnability or rules")
	prompt := fs.String("prompt", engineer.PromptCompact, "engineer prompt style: full or compact (what the self engineer then gets with --engineer-prompt)")
	modules := fs.String("modules", engineer.DefaultModules, "context modules of the prompt (F, G, H, H0, S, T)")
	held := fs.Int("held-out", engineer.DefaultHeldOutPercent, "percent of the contexts held out (by a hash of the context): never trained on, scored by t2t engineer score")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *hist == "" || *out == "" {
		return badInput("--histories and --out are required")
	}
	if err := checkOut("out", *out); err != nil {
		return err
	}
	mods, err := engineer.ParseModules(*modules)
	if err != nil {
		return badInput("--modules: %v", err)
	}
	style, err := engineer.ParsePromptStyle(*prompt)
	if err != nil {
		return badInput("--prompt %q: want full or compact", *prompt)
	}
	hists, err := engineer.ReadHistoriesFile(*hist)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	turns, err := engineer.Turns(ctx, hists, engineer.TurnOptions{Teacher: strings.ToLower(*teacher), Modules: mods, Prompt: style,
		HeldOutPercent: *held, Feasible: env.CheckFeasible})
	if err != nil {
		return badInput("%v", err)
	}
	var buf bytes.Buffer
	if err := engineer.WriteTurns(&buf, turns); err != nil {
		return err
	}
	if err := writeOut(*out, nil, buf.Bytes()); err != nil {
		return err
	}
	nHeld, mean := engineer.TurnStats(turns)
	fmt.Fprintf(stdout, "wrote %s: %d turns from %d histories (teacher %s, prompt %s, modules %s, ~%d prompt tokens each); %d held out (%d%% of the hash space), %d for training\n",
		*out, len(turns), len(hists), *teacher, style, mods, mean, nHeld, *held, len(turns)-nHeld)
	return nil
}

const scoreUsage = `t2t engineer score --model CKPT --contexts TURNS.jsonl [--all] [--engine torch] [--max-tokens 512] [--retries N --retry resample] [--json FILE]
        (the checkpoint as the self engineer on the held-out contexts: valid JSON %, accepted %, distance to the teacher)`

// engineerScore scores a checkpoint as the engineer on the held-out turns.
func engineerScore(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t engineer score", scoreUsage, stderr)
	model := fs.String("model", "", "the checkpoint that answers (required): the SFT checkpoint (base) or a GRPO stage's (self)")
	contexts := fs.String("contexts", "", "engineer turns, JSON Lines (t2t engineer turns --out) (required)")
	all := fs.Bool("all", false, "score every turn, not only the held-out ones")
	so := engineer.ScoreOptions{Feasible: env.CheckFeasible}
	fs.IntVar(&so.MaxTokens, "max-tokens", 512, "most tokens per answer")
	fs.Float64Var(&so.Temperature, "temperature", 0, "sampling temperature (0: greedy)")
	fs.IntVar(&so.Retries, "retries", 0, "further attempts after a rejected answer, as a run's engineer makes them (0: the first answer alone)")
	checkRetry := addRetryFlags(fs, &so.Retry, &so.RetryTemperature)
	thinking := fs.Bool("thinking", false, "let the model think (<think>…</think>) before its JSON")
	jsonOut := fs.String("json", "", "also write the summary and every turn's score as JSON to this file")
	verbose := fs.Bool("v", false, "print every turn's verdict")
	device := fs.String("device", "cpu", train.DeviceHelp)
	eng := addEngineFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *model == "" || *contexts == "" {
		return badInput("--model and --contexts are required")
	}
	if so.MaxTokens < 1 || math.IsNaN(so.Temperature) || so.Temperature < 0 || so.Temperature > 2 || so.Retries < 0 {
		return badInput("--max-tokens ≥ 1, --temperature in [0, 2], --retries ≥ 0")
	}
	if err := checkRetry(); err != nil {
		return err
	}
	if *jsonOut != "" {
		if err := checkOut("json", *jsonOut); err != nil {
			return err
		}
	}
	pick, err := engineer.ReadScoredTurns(*contexts, *all)
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	lm, err := openLM(ctx, eng, *device, *model, stderr)
	if err != nil {
		return err
	}
	defer lm.Close()
	so.Chat = &textpolicy.EngineerChat{LM: lm, Label: func() string { return *model }, Thinking: *thinking, Seed: 1}
	sc, per, err := engineer.ScoreTurns(ctx, pick, so)
	if err != nil {
		return badInput("%s: %v", *contexts, err)
	}
	which := "held-out"
	if *all {
		which = "all"
	}
	if *verbose {
		if err := engineer.WriteVerdicts(stdout, per); err != nil {
			return err
		}
	}
	fmt.Fprintf(stdout, "%s: %d %s contexts of %s (teacher %s, prompt %s, modules %s)\n", *model, sc.Turns, which, *contexts, pick[0].Teacher, pick[0].Prompt, pick[0].Modules)
	fmt.Fprintln(stdout, sc.Summary())
	if *jsonOut != "" {
		return writeJSONFile(*jsonOut, nil, engineer.ScoreReport{Model: *model, Contexts: *contexts, Scored: which, Scores: sc, PerTurn: per})
	}
	return nil
}
