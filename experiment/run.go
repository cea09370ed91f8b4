package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"time"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// RunFile is a finished run saved under DIR/runs/RUNID.json, reused by a
// later experiment with the same fingerprint.
type RunFile struct {
	Fingerprint string     `json:"fingerprint"`
	Run         report.Run `json:"run"`
}

// RunPath is where a run's file lies in dir.
func RunPath(dir, runID string) string { return filepath.Join(dir, "runs", runID+".json") }

// Run trains every arm with every seed (seeds outermost), each run with a
// fresh policy (NewPolicy) in a fresh embedded store, reusing finished
// runs saved under Dir/runs when Resume is set and their fingerprint
// matches. It saves each finished run, writes the report files into Dir
// (WriteReport) and returns the experiment. Progress goes to Out.
func Run(ctx context.Context, opt Options) (*report.Experiment, error) {
	if opt.Dir == "" || opt.NewPolicy == nil || len(opt.Arms) == 0 || len(opt.Seeds) == 0 {
		return nil, ErrOptions
	}
	if opt.Out == nil {
		opt.Out = io.Discard
	}
	if opt.Logger == nil {
		opt.Logger = slog.New(slog.DiscardHandler)
	}
	exp := &report.Experiment{
		Title: opt.Title, Command: opt.Command, Seeds: opt.Seeds,
		Budget: report.Budget{Policy: opt.Policy, Stages: opt.Stages, Instances: opt.Config.Instances, GroupSize: opt.GroupSize,
			ValPerSize: opt.ValPerSize, EvalPerSize: opt.EvalPerSize, Epochs: opt.Epochs, SuiteSeed: uint64(opt.SuiteSeed),
			Agents: env.Config(opt.Config).AgentsText()},
	}
	for _, a := range opt.Arms {
		exp.Strategies = append(exp.Strategies, a.Label)
	}
	if slices.Contains(exp.Strategies, opt.Baseline) {
		exp.Baseline = opt.Baseline
	}
	total := len(opt.Arms) * len(opt.Seeds)
	fmt.Fprintf(opt.Out, "experiment: %d strategies × %d seeds = %d runs of %d stages × %d instances (%s policy) → %s\n",
		len(opt.Arms), len(opt.Seeds), total, opt.Stages, opt.Config.Instances, opt.Policy, opt.Dir)
	start := time.Now()
	k := 0
	for _, seed := range opt.Seeds {
		for _, arm := range opt.Arms {
			k++
			r, err := opt.runArm(ctx, arm, seed, fmt.Sprintf("[%d/%d]", k, total), start)
			if err != nil {
				return nil, err
			}
			exp.Runs = append(exp.Runs, r)
		}
	}
	fmt.Fprintf(opt.Out, "experiment: %d runs done in %s\n", total, time.Since(start).Round(time.Second))
	if err := WriteReport(opt.Dir, exp); err != nil {
		return nil, err
	}
	return exp, nil
}

// runArm returns the run of arm with seed: the saved one when it may be
// reused, else a new one, which it saves.
func (o *Options) runArm(ctx context.Context, arm Arm, seed uint64, counter string, start time.Time) (report.Run, error) {
	runID := RunID(arm.Label, seed)
	fp := o.Fingerprint(arm, seed)
	runPath := RunPath(o.Dir, runID)
	if o.Resume {
		if r, ok := loadRun(runPath, fp); ok {
			fmt.Fprintf(o.Out, "%s %s seed %d: reusing %s\n", counter, arm.Label, seed, runPath)
			return r, nil
		}
	}
	fmt.Fprintf(o.Out, "%s %s seed %d: run %s (%s elapsed)\n", counter, arm.Label, seed, runID, time.Since(start).Round(time.Second))
	pol, release, err := o.NewPolicy(arm, seed)
	if err != nil {
		return report.Run{}, err
	}
	if release != nil {
		defer release()
	}
	base := env.Config(o.Config)
	strat, closeEng, err := o.strategy(ctx, arm, seed, &base, pol)
	if err != nil {
		return report.Run{}, err
	}
	defer closeEng()
	topt := o.trainOptions(seed)
	topt.RunID, topt.Config, topt.Strategy = runID, base, strat
	topt.Out = &prefixWriter{w: o.Out, prefix: fmt.Sprintf("  [%s s%d] ", arm.Label, seed)}
	r, err := trainRun(ctx, topt, pol, arm.Label, o.Logger)
	if err != nil {
		return report.Run{}, fmt.Errorf("%s seed %d: %w", arm.Label, seed, err)
	}
	b, err := json.MarshalIndent(RunFile{Fingerprint: fp, Run: r}, "", "  ")
	if err != nil {
		return report.Run{}, err
	}
	return r, fsutil.WriteBytesAtomic(runPath, append(b, '\n'))
}

// trainOptions are the train options of a run of o with seed; the run id,
// the strategy and the output are the caller's.
func (o *Options) trainOptions(seed uint64) train.Options {
	return train.Options{
		Stages: o.Stages, Epochs: o.Epochs, Seed: seed, Config: env.Config(o.Config), InstancesPerUnit: o.InstancesPerUnit,
		Rollouts: o.Rollouts, GroupSize: o.GroupSize, LearnerBatch: o.LearnerBatch,
		ValPerSize: o.ValPerSize, EvalPerSize: o.EvalPerSize, SuiteSeed: uint64(o.SuiteSeed), Logger: o.Logger,
	}
}

// Validate checks the settings every run trains with as train.Run does
// (train.Options.Validate: ranges, the stage-0 config), so that a bad
// setting fails before the first run rather than at it. Its errors are
// train's *fielderr.Error or wrap train.ErrOptions.
func (o *Options) Validate() error {
	t := o.trainOptions(1)
	t.SetDefaults()
	return t.Validate()
}

// strategy builds arm's engineer for a run of pol with seed: a checkpoint
// (self: pol itself; base: a frozen copy of LLM.Model) through
// train.NewEngineer, the others as engineer.ParseStrategy does.
func (o *Options) strategy(ctx context.Context, arm Arm, seed uint64, base *env.Config, pol train.Policy) (engineer.Strategy, func() error, error) {
	if arm.Engineer != "" {
		strat, closeEng, err := train.NewEngineer(ctx, train.EngineerSpec{
			Strategy: arm.Strategy, Seed: seed, Target: arm.Engineer, Modules: arm.Modules.String(),
			MaxTokens: o.EngineerMaxTokens, Temperature: o.EngineerTemperature, Retries: o.EngineerRetries,
			Retry: o.EngineerRetry, RetryTemperature: o.EngineerRetryTemperature,
			Prompt: o.EngineerPrompt, BaseModel: o.Model, Engine: o.EngineSpec, Logger: o.Logger,
		}, base, pol)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", arm.Label, err)
		}
		return strat, closeEng, nil
	}
	strat, err := engineer.ParseStrategy(arm.Strategy, engineer.Options{
		Seed: seed, Base: base, Feasible: env.CheckFeasible, Logger: o.Logger,
		LLM: engineer.LLMOptions{BaseURL: o.LLMURL, Model: o.LLMModel, APIKey: o.LLMAPIKey, Modules: arm.Modules},
	})
	if err != nil {
		return nil, nil, &fielderr.Error{Flag: "strategies", Reason: err.Error()}
	}
	return strat, func() error { return nil }, nil
}

// loadRun reads a saved run (at most limits.Text bytes); ok only when
// its fingerprint is fp.
func loadRun(path, fp string) (report.Run, bool) {
	b, err := limits.ReadFile(path, limits.Text)
	if err != nil || fp == "" {
		return report.Run{}, false
	}
	var f RunFile
	if json.Unmarshal(b, &f) != nil || f.Fingerprint != fp {
		return report.Run{}, false
	}
	return f.Run, true
}

// WriteReport writes the experiment's renderings into dir, each file
// atomically: experiment.html, experiment.md, experiment.csv, summary.csv
// and experiment.json.
func WriteReport(dir string, exp *report.Experiment) error {
	js, err := report.ExperimentJSON(exp)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{
		{"experiment.html", []byte(report.ExperimentHTML(exp))}, {"experiment.md", []byte(report.ExperimentMarkdown(exp))},
		{"experiment.csv", []byte(report.ExperimentCSV(exp))}, {"summary.csv", []byte(report.SummaryCSV(exp))}, {"runs.csv", []byte(report.RunsCSV(exp))}, {"experiment.json", js},
	} {
		if err := fsutil.WriteBytesAtomic(filepath.Join(dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}
