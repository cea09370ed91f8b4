package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"os/signal"
	"strings"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/limits"
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
	modules := fs.String("modules", "F,G,H0,T", "context modules of the prompt (F, G, H, H0, S, T)")
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
	b, err := limits.ReadFile(*hist, limits.Text)
	if err != nil {
		return badInput("%v", err)
	}
	hists, err := engineer.ReadHistories(bytes.NewReader(b))
	if err != nil {
		return badInput("%s: %v", *hist, err)
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
	nHeld, tokens := 0, 0
	for _, t := range turns {
		if t.HeldOut {
			nHeld++
		}
		tokens += engineer.ApproxTokens(t.System) + engineer.ApproxTokens(t.User)
	}
	mean := 0
	if len(turns) > 0 {
		mean = tokens / len(turns)
	}
	fmt.Fprintf(stdout, "wrote %s: %d turns from %d histories (teacher %s, prompt %s, modules %s, ~%d prompt tokens each); %d held out (%d%% of the hash space), %d for training\n",
		*out, len(turns), len(hists), *teacher, style, mods, mean, nHeld, *held, len(turns)-nHeld)
	return nil
}

const scoreUsage = `t2t engineer score --model CKPT --contexts TURNS.jsonl [--all] [--engine torch] [--max-tokens 512] [--json FILE]
        (the checkpoint as the self engineer on the held-out contexts: valid JSON %, accepted %, distance to the teacher)`

// engineerScore scores a checkpoint as the engineer on the held-out turns.
func engineerScore(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t engineer score", scoreUsage, stderr)
	model := fs.String("model", "", "the checkpoint that answers (required): the SFT checkpoint (base) or a GRPO stage's (self)")
	contexts := fs.String("contexts", "", "engineer turns, JSON Lines (t2t engineer turns --out) (required)")
	all := fs.Bool("all", false, "score every turn, not only the held-out ones")
	maxTokens := fs.Int("max-tokens", 512, "most tokens per answer")
	temp := fs.Float64("temperature", 0, "sampling temperature (0: greedy)")
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
	if *maxTokens < 1 || math.IsNaN(*temp) || *temp < 0 || *temp > 2 {
		return badInput("--max-tokens ≥ 1, --temperature in [0, 2]")
	}
	if *jsonOut != "" {
		if err := checkOut("json", *jsonOut); err != nil {
			return err
		}
	}
	turns, err := readTurnsFile(*contexts)
	if err != nil {
		return err
	}
	var pick []engineer.Turn
	for _, t := range turns {
		if *all || t.HeldOut {
			pick = append(pick, t)
		}
	}
	if len(pick) == 0 {
		return badInput("%s: no held-out turn to score (--all scores every turn)", *contexts)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	lm, err := openLM(ctx, eng, *device, *model, stderr)
	if err != nil {
		return err
	}
	defer lm.Close()
	chat := &textpolicy.EngineerChat{LM: lm, Label: func() string { return *model }, Thinking: *thinking, Seed: 1}
	sc, per, err := engineer.ScoreTurns(ctx, pick, engineer.ScoreOptions{Chat: chat, Temperature: *temp, MaxTokens: *maxTokens, Feasible: env.CheckFeasible})
	if err != nil {
		return badInput("%s: %v", *contexts, err)
	}
	which := "held-out"
	if *all {
		which = "all"
	}
	if *verbose {
		for _, p := range per {
			verdict := "rejected"
			if p.Accepted {
				verdict = fmt.Sprintf("accepted, distance %.3f", p.Distance)
			}
			fmt.Fprintf(stdout, "run %s stage %d: %s (%s)\n", p.RunID, p.Stage, verdict, oneLine(p.Reason, 160))
		}
	}
	fmt.Fprintf(stdout, "%s: %d %s contexts of %s (teacher %s, prompt %s, modules %s)\n", *model, sc.Turns, which, *contexts, pick[0].Teacher, pick[0].Prompt, pick[0].Modules)
	fmt.Fprintf(stdout, "valid JSON %.1f%% (%d/%d), accepted by the guardrails %.1f%% (%d/%d), distance to the teacher's config %s (accepted proposals; keeping the previous config: %.3f)\n",
		100*sc.JSONRate(), sc.JSON, sc.Turns, 100*sc.AcceptedRate(), sc.Accepted, sc.Turns, fmtDistance(sc.Distance), sc.Keep)
	if *jsonOut != "" {
		return writeScoreJSON(*jsonOut, *model, *contexts, which, sc, per)
	}
	return nil
}

// writeScoreJSON writes t2t engineer score's summary and every turn's score to path.
func writeScoreJSON(path, model, contexts, which string, sc engineer.Scores, per []engineer.TurnScore) error {
	type turnJSON struct {
		RunID    string   `json:"run_id"`
		Stage    int      `json:"stage"`
		Context  string   `json:"context"`
		JSON     bool     `json:"json"`
		Accepted bool     `json:"accepted"`
		Distance *float64 `json:"distance"`
		Keep     float64  `json:"keep"`
		Reason   string   `json:"reason"`
		Raw      string   `json:"raw"`
	}
	rows := make([]turnJSON, len(per))
	for i, p := range per {
		rows[i] = turnJSON{RunID: p.RunID, Stage: p.Stage, Context: p.Context, JSON: p.JSON, Accepted: p.Accepted, Keep: p.Keep, Reason: p.Reason, Raw: p.Raw}
		if !math.IsNaN(p.Distance) {
			d := p.Distance
			rows[i].Distance = &d
		}
	}
	var dist *float64
	if !math.IsNaN(sc.Distance) {
		dist = &sc.Distance
	}
	doc := map[string]any{"model": model, "contexts": contexts, "scored": which, "turns": sc.Turns, "json": sc.JSON, "accepted": sc.Accepted,
		"json_rate": sc.JSONRate(), "accepted_rate": sc.AcceptedRate(), "distance": dist, "keep_distance": sc.Keep, "per_turn": rows}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	return writeOut(path, nil, append(b, '\n'))
}

func fmtDistance(d float64) string {
	if math.IsNaN(d) {
		return "n/a"
	}
	return fmt.Sprintf("%.3f", d)
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n]) + "…"
	}
	return s
}

// readTurnsFile reads a turns file (t2t engineer turns --out); a bad one is bad input.
func readTurnsFile(path string) ([]engineer.Turn, error) {
	b, err := limits.ReadFile(path, limits.Text)
	if err != nil {
		return nil, badInput("%v", err)
	}
	turns, err := engineer.ReadTurns(bytes.NewReader(b))
	if err != nil {
		return nil, badInput("%s: %v", path, err)
	}
	return turns, nil
}
