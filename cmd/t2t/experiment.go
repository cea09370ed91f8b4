package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// expArm is one strategy of an experiment: a strategy name and, for llm,
// its context modules.
type expArm struct {
	label    string
	strategy string
	modules  engineer.Modules
}

// expRunFile is a finished run saved under OUT/runs, reused by a later
// invocation with the same fingerprint.
type expRunFile struct {
	Fingerprint string     `json:"fingerprint"`
	Run         report.Run `json:"run"`
}

func runExperiment(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t experiment", "t2t experiment --strategies fixed,rules,learnability[,llm] --seeds 3 --stages N [--modules 'F;F,G;F,G,H0,T'] --out DIR", stderr)
	strategies := fs.String("strategies", "fixed,learnability,rules", "comma-separated engineer strategies: "+strings.Join(engineer.StrategyNames(), ", "))
	seeds := fs.Int("seeds", 3, "seeds per strategy (the same seeds for every strategy)")
	seed0 := fs.Uint64("seed0", 1, "first seed; seeds are seed0, seed0+1, ...")
	stages := fs.Int("stages", 8, "training stages per run")
	cfgPath := fs.String("config", "", "stage-0 generator config JSON (default: the embedded local config)")
	instances := fs.Int("instances", 0, "training instances per stage (0: the config's)")
	evalPer := fs.Int("eval-per-size", 10, "benchmark suite: instances per (agents, size, wait subset) for 3/4/5 agents")
	valPer := fs.Int("val-per-size", 20, "validation set: instances per map size (2 agents)")
	suiteSeed := fs.Uint64("suite-seed", 2026, "seed of the validation set and the benchmark suite (another value gives a held-out pair for developing strategies)")
	policy := fs.String("policy", "gridnet", "policy: gridnet (CPU network) or scripted (optimal plans with injected mistakes; learns nothing)")
	mistake := fs.Float64("mistake-rate", 0.05, "scripted policy: chance per agent and step of a random move")
	hidden := fs.String("hidden", "128,128", "gridnet hidden layer widths")
	lr := fs.Float64("lr", 1e-3, "learning rate (AdamW)")
	group := fs.Int("group", 8, "GRPO group size: episodes per instance")
	batch := fs.Int("learner-batch", 32, "groups per policy update")
	rollouts := fs.Int("rollouts", 2, "rollout actors per run")
	perUnit := fs.Int("instances-per-unit", 16, "instances per work unit")
	device := fs.String("device", "cpu", "compute device: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds)")
	modules := fs.String("modules", "F,G,H0,T", "llm context-module variants separated by ';' (each like F,G,H0,T): one llm arm per variant")
	llmURL := fs.String("llm-url", "", "llm strategy: OpenAI-compatible API root, e.g. http://localhost:8000/v1")
	llmModel := fs.String("llm-model", "", "llm strategy: model name")
	llmKeyEnv := fs.String("llm-key-env", "OPENAI_API_KEY", "llm strategy: environment variable holding the API key (may be unset)")
	baseline := fs.String("baseline", engineer.NameFixed, "strategy the others are compared with, paired by seed ('' for none)")
	title := fs.String("title", "Engineer strategies on MAPF-FrozenLake", "report title")
	out := fs.String("out", "", "output folder: experiment.html/.md/.csv/.json, summary.csv, runs/*.json")
	resume := fs.Bool("resume", true, "reuse finished runs saved under OUT/runs with the same settings")
	verbose := fs.Bool("v", false, "log the actor runtime to stderr")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return badInput("--out is required")
	}
	if *seeds < 1 || *seeds > 100 {
		return badInput("--seeds %d out of range [1,100]", *seeds)
	}
	if *policy != "gridnet" && *policy != "scripted" {
		return badInput("--policy %q: want gridnet or scripted", *policy)
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *instances > 0 {
		cfg.Instances = *instances
	}
	widths, err := parseWidths(*hidden)
	if err != nil {
		return badInput("--hidden: %v", err)
	}
	arms, err := parseArms(*strategies, *modules)
	if err != nil {
		return err
	}
	hasLLM := slices.ContainsFunc(arms, func(a expArm) bool { return a.strategy == engineer.NameLLM })
	if hasLLM && (*llmURL == "" || *llmModel == "") {
		return badInput("the llm strategy needs --llm-url and --llm-model")
	}
	var labels []string
	for _, a := range arms {
		labels = append(labels, a.label)
	}
	if !slices.Contains(labels, *baseline) {
		*baseline = ""
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	exp := &report.Experiment{
		Title: *title, Command: commandLine("t2t experiment", args), Strategies: labels, Baseline: *baseline,
		Budget: report.Budget{Policy: *policy, Stages: *stages, Instances: cfg.Instances, GroupSize: *group, ValPerSize: *valPer, EvalPerSize: *evalPer, SuiteSeed: *suiteSeed},
	}
	for i := range *seeds {
		exp.Seeds = append(exp.Seeds, *seed0+uint64(i))
	}
	settings := struct {
		Config                                   string
		Stages, EvalPer, ValPer, Group, Batch    int
		Rollouts, PerUnit                        int
		Policy, Hidden, Device, LLMURL, LLMModel string
		Mistake, LR                              float64
		SuiteSeed                                uint64 `json:",omitempty"`
	}{cfg.Hash(), *stages, *evalPer, *valPer, *group, *batch, *rollouts, *perUnit, *policy, *hidden, *device, *llmURL, *llmModel, *mistake, *lr, 0}
	if *suiteSeed != 2026 {
		settings.SuiteSeed = *suiteSeed // the default keeps the fingerprints of earlier runs
	}
	total := len(arms) * len(exp.Seeds)
	fmt.Fprintf(stdout, "experiment: %d strategies × %d seeds = %d runs of %d stages × %d instances (%s policy) → %s\n",
		len(arms), len(exp.Seeds), total, *stages, cfg.Instances, *policy, *out)
	start := time.Now()
	k := 0
	for _, seed := range exp.Seeds {
		for _, arm := range arms {
			k++
			runID := expRunID(arm.label, seed)
			fp := expFingerprint(arm, seed, settings)
			runPath := filepath.Join(*out, "runs", runID+".json")
			if *resume {
				if r, ok := loadExpRun(runPath, fp); ok {
					fmt.Fprintf(stdout, "[%d/%d] %s seed %d: reusing %s\n", k, total, arm.label, seed, runPath)
					exp.Runs = append(exp.Runs, r)
					continue
				}
			}
			fmt.Fprintf(stdout, "[%d/%d] %s seed %d: run %s (%s elapsed)\n", k, total, arm.label, seed, runID, time.Since(start).Round(time.Second))
			var pol train.Policy
			if *policy == "scripted" {
				pol = &train.ScriptedPolicy{MistakeRate: *mistake}
			} else {
				if pol, err = newGridPolicy(*device, widths, *lr, *group, seed); err != nil {
					return err
				}
			}
			strat, err := engineer.ParseStrategy(arm.strategy, engineer.Options{
				Seed: seed, Base: &cfg, Feasible: env.CheckFeasible, Logger: logger,
				LLM: engineer.LLMOptions{BaseURL: *llmURL, Model: *llmModel, APIKey: os.Getenv(*llmKeyEnv), Modules: arm.modules},
			})
			if err != nil {
				return badInput("--strategies: %v", err)
			}
			pw := &linePrefixWriter{w: stdout, prefix: fmt.Sprintf("  [%s s%d] ", arm.label, seed)}
			opt := train.Options{
				RunID: runID, Stages: *stages, Seed: seed, Config: cfg, InstancesPerUnit: *perUnit,
				Rollouts: *rollouts, GroupSize: *group, LearnerBatch: *batch, Strategy: strat,
				ValPerSize: *valPer, EvalPerSize: *evalPer, SuiteSeed: *suiteSeed, Out: pw, Logger: logger,
			}
			r, err := expRun(ctx, opt, pol, arm.label, logger)
			if err != nil {
				return fmt.Errorf("%s seed %d: %w", arm.label, seed, err)
			}
			b, err := json.MarshalIndent(expRunFile{Fingerprint: fp, Run: r}, "", "  ")
			if err != nil {
				return err
			}
			if err := writeFileAtomic(runPath, append(b, '\n')); err != nil {
				return err
			}
			exp.Runs = append(exp.Runs, r)
		}
	}
	fmt.Fprintf(stdout, "experiment: %d runs done in %s\n", total, time.Since(start).Round(time.Second))
	return writeExperimentReport(*out, exp, stdout)
}

// parseArms expands the strategy list; llm becomes one arm per module
// variant.
func parseArms(strategies, modules string) ([]expArm, error) {
	var arms []expArm
	seen := map[string]bool{}
	for _, name := range strings.Split(strategies, ",") {
		name = strings.ToLower(strings.TrimSpace(name))
		if name == "" {
			continue
		}
		if !slices.Contains(engineer.StrategyNames(), name) {
			return nil, badInput("--strategies: unknown strategy %q (want %s)", name, strings.Join(engineer.StrategyNames(), ", "))
		}
		if name != engineer.NameLLM {
			if seen[name] {
				return nil, badInput("--strategies: %q given twice", name)
			}
			seen[name] = true
			arms = append(arms, expArm{label: name, strategy: name})
			continue
		}
		for _, v := range strings.Split(modules, ";") {
			m, err := engineer.ParseModules(v)
			if err != nil {
				return nil, badInput("--modules %q: %v", v, err)
			}
			label := "llm[" + m.String() + "]"
			if seen[label] {
				return nil, badInput("--modules: variant %s given twice", m)
			}
			seen[label] = true
			arms = append(arms, expArm{label: label, strategy: name, modules: m})
		}
	}
	if len(arms) == 0 {
		return nil, badInput("--strategies: no strategy given")
	}
	return arms, nil
}

// expRunID makes a store-safe run id from an arm label and a seed.
func expRunID(label string, seed uint64) string {
	var b strings.Builder
	for _, c := range label {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '.', c == '-', c == '_':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	return fmt.Sprintf("exp-%s-s%d", strings.Trim(b.String(), "-"), seed)
}

// expFingerprint identifies a run's settings: the arm, the seed and
// every setting that changes what a run does.
func expFingerprint(arm expArm, seed uint64, settings any) string {
	b, _ := json.Marshal(struct {
		Arm, Strategy, Modules string
		Seed                   uint64
		Settings               any
	}{arm.label, arm.strategy, arm.modules.String(), seed, settings})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

func loadExpRun(path, fp string) (report.Run, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return report.Run{}, false
	}
	var f expRunFile
	if json.Unmarshal(b, &f) != nil || f.Fingerprint != fp {
		return report.Run{}, false
	}
	return f.Run, true
}

// expRun trains one run in a fresh embedded store and reads its configs
// and audit back.
func expRun(ctx context.Context, opt train.Options, pol train.Policy, label string, logger *slog.Logger) (report.Run, error) {
	st, err := store.Open(ctx, store.Options{Logger: logger})
	if err != nil {
		return report.Run{}, fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	t0 := time.Now()
	res, err := train.Run(ctx, opt, pol, st)
	if err != nil {
		return report.Run{}, err
	}
	r, err := reportRun(ctx, st, res, label, opt.Seed)
	r.Seconds = time.Since(t0).Seconds()
	return r, err
}

// reportRun turns a training result and the store's config history and
// audit log into a report.Run.
func reportRun(ctx context.Context, st *store.Store, res *train.Result, label string, seed uint64) (report.Run, error) {
	cfgs, err := st.Configs(ctx, res.RunID)
	if err != nil {
		return report.Run{}, err
	}
	audit, err := st.Audit(ctx, res.RunID)
	if err != nil {
		return report.Run{}, err
	}
	recs := map[int]store.ConfigRecord{}
	for _, c := range cfgs {
		recs[c.Stage] = c
	}
	r := report.Run{Strategy: label, Seed: seed, RunID: res.RunID, Initial: reportPoint(&res.Initial)}
	for i := range res.Stages {
		s := &res.Stages[i]
		p := reportPoint(s)
		if rec, ok := recs[s.Stage]; ok {
			var c env.Config
			if err := json.Unmarshal(rec.JSON, &c); err != nil {
				return report.Run{}, fmt.Errorf("config of stage %d: %w", s.Stage, err)
			}
			if rec.Version != s.ConfigVersion {
				return report.Run{}, fmt.Errorf("stage %d trained on config %s, the store records %s", s.Stage, s.ConfigVersion, rec.Version)
			}
			p.Config, p.Proposer, p.Rationale = &c, rec.Proposer, rec.Rationale
		}
		for _, a := range audit {
			if a.Stage == s.Stage {
				p.Audit = append(p.Audit, report.Attempt{Attempt: a.Attempt, Accepted: a.Accepted, Reason: a.Reason, PromptHash: a.PromptHash})
			}
		}
		r.Stages = append(r.Stages, p)
	}
	return r, nil
}

func reportPoint(s *train.StageReport) report.Point {
	p := report.Point{
		Stage: s.Stage, Train: reportRate(s.Train), Val: reportRate(s.Val), Eval: map[int]report.Rate{},
		ConfigVersion: s.ConfigVersion, Updates: s.Updates, Seconds: s.Duration.Seconds(),
	}
	if s.Stage < 0 {
		p.Train, p.ConfigVersion, p.Updates = report.Rate{}, "", 0
	}
	for k, r := range s.Eval {
		p.Eval[k] = reportRate(r)
	}
	return p
}

func reportRate(r train.Rates) report.Rate {
	return report.Rate{Episodes: r.Episodes, Valid: r.Valid, Optimal: r.Optimal}
}

// writeExperimentReport writes the report files and prints the final
// tables.
func writeExperimentReport(dir string, exp *report.Experiment, stdout io.Writer) error {
	js, err := report.ExperimentJSON(exp)
	if err != nil {
		return err
	}
	md := report.ExperimentMarkdown(exp)
	for name, data := range map[string][]byte{
		"experiment.html": []byte(report.ExperimentHTML(exp)), "experiment.md": []byte(md), "experiment.csv": []byte(report.ExperimentCSV(exp)),
		"summary.csv": []byte(report.SummaryCSV(exp)), "experiment.json": js,
	} {
		if err := writeFileAtomic(filepath.Join(dir, name), data); err != nil {
			return err
		}
	}
	head := md
	if i := strings.Index(md, "\n## Learning curves"); i >= 0 {
		head = md[:i+1]
	}
	_, err = fmt.Fprintf(stdout, "\n%s\nwrote %s/{experiment.html,experiment.md,experiment.csv,summary.csv,experiment.json}\n", head, dir)
	return err
}

// newGridPolicy builds a fresh gridnet policy (the same wiring as t2t
// train).
func newGridPolicy(device string, widths []int, lr float64, group int, seed uint64) (*train.GridPolicy, error) {
	be, err := learner.NewBackend(device)
	if err != nil {
		return nil, badInput("--device: %v", err)
	}
	gc := learner.DefaultGRPOConfig()
	gc.LR = lr
	gc.GroupSize = group
	if err := gc.Validate(); err != nil {
		return nil, badInput("%v", err)
	}
	net, err := learner.NewGridNet(be, learner.GridNetConfig{ObsSize: env.ObsSize(env.ObsRadius), Hidden: widths, Seed: seed}, gc)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return &train.GridPolicy{Net: net, Rollout: learner.DefaultRolloutConfig()}, nil
}

// commandLine renders a command with its arguments, quoting those with
// spaces or shell characters.
func commandLine(name string, args []string) string {
	parts := []string{name}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t;'\"$&|<>*?()[]{}") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// linePrefixWriter prefixes every line written through it.
type linePrefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (p *linePrefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if !p.mid {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
			p.mid = true
		}
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			if _, err := p.w.Write(b); err != nil {
				return 0, err
			}
			break
		}
		if _, err := p.w.Write(b[:i+1]); err != nil {
			return 0, err
		}
		p.mid = false
		b = b[i+1:]
	}
	return n, nil
}
