package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/train"
)

// trainFlags are the run flags t2t train and t2t node share.
type trainFlags struct {
	stages, instances, bcSteps, group, batch, perUnit, valPer, evalPer *int
	seed                                                               *uint64
	cfgPath, policy, strategy, redisURL, warm, hidden, runID, ckpt     *string
	device                                                             *string
	mistake, lr                                                        *float64
	verbose, deterministic, resume                                     *bool
	tel                                                                telemetryFlags
	engURL, engModel, engModules, engineer                             *string
	engMax, engRetries                                                 *int
	engTemp                                                            *float64
	engThinking                                                        *bool
	modelDir                                                           *string
	maxNew                                                             *int
	thinking                                                           *bool
	prompt                                                             *string
	eng                                                                *engineFlags
}

func addTrainFlags(fs *flag.FlagSet) *trainFlags {
	return &trainFlags{
		stages:    fs.Int("stages", 8, "training stages"),
		seed:      fs.Uint64("seed", 1, "run seed: instances, sampling and weight initialisation"),
		cfgPath:   fs.String("config", "", "stage-0 generator config JSON (default: the embedded local config, sizes 3..10)"),
		instances: fs.Int("instances", 0, "training instances per stage (0: the config's)"),
		policy:    fs.String("policy", "gridnet", "policy to train: gridnet (CPU network), qwen3 (a causal LM, --model), or scripted (optimal plans with injected mistakes)"),
		mistake:   fs.Float64("mistake-rate", 0.05, "scripted policy: chance per agent and step of a random move"),
		strategy:  fs.String("strategy", engineer.NameLearnability, "engineer strategy: "+strings.Join(engineer.StrategyNames(), ", ")),
		redisURL:  fs.String("redis", "", "Redis URL (redis://host:port/db); empty embeds an in-process Redis-protocol server"),
		warm:      fs.String("warmstart", "none", "gridnet warm start: none or bc (behaviour cloning from optimal plans)"),
		bcSteps:   fs.Int("bc-steps", 60, "warm start: behaviour-cloning steps of 64 instances"),
		hidden:    fs.String("hidden", "128,128", "gridnet hidden layer widths"),
		lr:        fs.Float64("lr", 1e-3, "learning rate (AdamW)"),
		group:     fs.Int("group", 8, "GRPO group size: episodes per instance"),
		batch:     fs.Int("learner-batch", 32, "groups per policy update"),
		perUnit:   fs.Int("instances-per-unit", 16, "instances per work unit"),
		runID:     fs.String("run-id", "", "run id in Redis (default run-<seed>)"),
		ckpt:      fs.String("checkpoint-dir", "", "write a checkpoint (gridnet, or qwen3 as a Hugging Face directory) after every stage into this folder"),
		valPer:    fs.Int("val-per-size", 20, "validation set: instances per map size (2 agents, sizes 3..10)"),
		evalPer:   fs.Int("eval-per-size", 10, "benchmark suite: instances per (agents, size, wait subset) for 3/4/5 agents"),
		device:    fs.String("device", "cpu", deviceFlagHelp),
		verbose:   fs.Bool("v", false, "log the actor runtime and every learner update (loss, reward, clip, KL, policy lag) to stderr"),
		deterministic: fs.Bool("deterministic", false, "deterministic run: one rollout, units in order, each sampling the weights of all earlier full batches;\n"+
			"the same flags give the same weights (--instances must be a multiple of --instances-per-unit and --learner-batch)"),
		resume: fs.Bool("resume", false, "continue --run-id after its latest checkpoint indexed in Redis (needs --redis and --checkpoint-dir,\n"+
			"and the interrupted run's other flags)"),
		tel:      addTelemetryFlags(fs),
		modelDir: fs.String("model", "", "--policy qwen3: Hugging Face checkpoint directory (e.g. from 't2t model init' or a real Qwen3)"),
		maxNew:   fs.Int("max-new-tokens", 512, "--policy qwen3: most tokens per answer"),
		thinking: fs.Bool("thinking", false, "--policy qwen3: let the model think (<think>…</think>) before answering"),
		prompt:   fs.String("prompt", "full", "--policy qwen3: "+promptFlagHelp),
		engineer: fs.String("engineer", "", "--strategy llm: who writes the next config: self (the policy being trained, the default for --policy qwen3),\n"+
			"base (a frozen copy of --model), or an OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1; API key from $T2T_ENGINEER_API_KEY)"),
		engURL:      fs.String("engineer-url", "", "--strategy llm: alias of --engineer URL"),
		engModel:    fs.String("engineer-model", "", "--strategy llm: model name at the --engineer URL"),
		engMax:      fs.Int("engineer-max-tokens", 1024, "--strategy llm: most tokens per engineer answer"),
		engTemp:     fs.Float64("engineer-temperature", 0.6, "--strategy llm: engineer sampling temperature (0: greedy)"),
		engRetries:  fs.Int("engineer-retries", 3, "--strategy llm: further attempts after a rejected answer or a failed call, each told why the last was rejected"),
		engThinking: fs.Bool("engineer-thinking", false, "--strategy llm with self or base: let the engineer think (<think>…</think>) before its JSON"),
		engModules:  fs.String("engineer-modules", "F,G,H0,T", "--strategy llm: context modules (F failures, G guidelines, H history, H0 history without round 0, S own summaries, T bookkeeping)"),
		eng:         addEngineFlags(fs),
	}
}

// trainSetup is what the run flags build.
type trainSetup struct {
	cfg    env.Config
	pol    train.Policy
	strat  engineer.Strategy
	logger *slog.Logger
	close  func() error // releases the policy's model
}

// logger returns the runtime logger the flags ask for.
func (f *trainFlags) logger(stderr io.Writer) *slog.Logger {
	if *f.verbose {
		return slog.New(slog.NewTextHandler(stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// build checks the run flags and builds the stage-0 config, the policy
// (with its warm start) and the engineer strategy.
func (f *trainFlags) build(logger *slog.Logger, stdout io.Writer) (*trainSetup, error) {
	cfg, err := loadConfig(*f.cfgPath)
	if err != nil {
		return nil, err
	}
	if *f.instances > 0 {
		cfg.Instances = *f.instances
	}
	if *f.resume && (*f.redisURL == "" || *f.ckpt == "") {
		return nil, badInput("--resume needs --redis (the Redis of the interrupted run; an embedded one starts empty) and --checkpoint-dir")
	}
	if *f.warm != "none" && *f.warm != "bc" {
		return nil, badInput("--warmstart %q: want none or bc", *f.warm)
	}
	if *f.mistake < 0 || *f.mistake > 1 {
		return nil, badInput("--mistake-rate %v out of range [0,1]", *f.mistake)
	}
	widths, err := parseWidths(*f.hidden)
	if err != nil {
		return nil, badInput("--hidden: %v", err)
	}
	var pol train.Policy
	closeLM := func() error { return nil }
	switch *f.policy {
	case "scripted":
		pol = &train.ScriptedPolicy{MistakeRate: *f.mistake}
	case "gridnet":
		be, err := learner.NewBackend(*f.device)
		if err != nil {
			return nil, badInput("--device: %v", err)
		}
		gc := learner.DefaultGRPOConfig()
		gc.LR = *f.lr
		gc.GroupSize = *f.group
		if err := gc.Validate(); err != nil {
			return nil, badInput("%v", err)
		}
		net, err := learner.NewGridNet(be, learner.GridNetConfig{ObsSize: env.ObsSize(env.ObsRadius), Hidden: widths, Seed: *f.seed}, gc)
		if err != nil {
			return nil, badInput("%v", err)
		}
		gp := &train.GridPolicy{Net: net, Rollout: learner.DefaultRolloutConfig()}
		if *f.warm == "bc" && !*f.resume { // a resumed run loads its checkpoint
			if err := warmStart(gp, cfg, *f.seed, *f.bcSteps, stdout); err != nil {
				return nil, err
			}
		}
		pol = gp
	case "qwen3":
		if *f.modelDir == "" {
			return nil, badInput("--policy qwen3 needs --model DIR")
		}
		if *f.maxNew < 1 || *f.maxNew > 32768 {
			return nil, badInput("--max-new-tokens %d out of range [1,32768]", *f.maxNew)
		}
		spec, err := f.eng.spec(*f.device, io.Discard)
		if err != nil {
			return nil, err
		}
		spec.Log = func(line string) { logger.Info("torch worker", "line", line) }
		lm, err := textpolicy.OpenLM(context.Background(), spec, *f.modelDir)
		if err != nil {
			return nil, engineErr("--model", err)
		}
		closeLM = lm.Close
		o := textpolicy.DefaultOptions()
		if o.Prompt, err = promptOptions(*f.prompt); err != nil {
			return nil, err
		}
		o.MaxNewTokens, o.Thinking = *f.maxNew, *f.thinking
		o.GRPO.GroupSize = *f.group
		tp, err := textpolicy.New(lm, o)
		if err != nil {
			_ = lm.Close()
			return nil, badInput("%v", err)
		}
		pol = tp
	default:
		return nil, badInput("--policy %q: want gridnet, qwen3 or scripted", *f.policy)
	}
	strat, closeEng, err := f.engineerStrategy(&cfg, logger, pol)
	if err != nil {
		_ = closeLM()
		return nil, err
	}
	return &trainSetup{cfg: cfg, pol: pol, strat: strat, logger: logger, close: func() error {
		return errors.Join(closeEng(), closeLM())
	}}, nil
}

// engineerStrategy builds the engineer strategy. For --strategy llm the engineer is --engineer:
// "self" (the policy being trained answers; the default for a qwen3 policy), "base" (a frozen
// copy of the starting checkpoint, loaded on the same engine) or an OpenAI-compatible URL. The
// closer releases a base model.
func (f *trainFlags) engineerStrategy(cfg *env.Config, logger *slog.Logger, pol train.Policy) (engineer.Strategy, func() error, error) {
	noop := func() error { return nil }
	eo := engineer.Options{Seed: *f.seed, Base: cfg, Feasible: env.CheckFeasible, Logger: logger}
	closer := noop
	if *f.strategy == engineer.NameLLM {
		mods, err := engineer.ParseModules(*f.engModules)
		if err != nil {
			return nil, nil, badInput("--engineer-modules: %v", err)
		}
		switch {
		case *f.engMax < 0:
			return nil, nil, badInput("--engineer-max-tokens %d: must be ≥ 0", *f.engMax)
		case math.IsNaN(*f.engTemp) || *f.engTemp < 0 || *f.engTemp > 2:
			return nil, nil, badInput("--engineer-temperature %v: must be in [0, 2]", *f.engTemp)
		case *f.engRetries < 0:
			return nil, nil, badInput("--engineer-retries %d: must be ≥ 0", *f.engRetries)
		}
		retries := *f.engRetries
		if retries == 0 {
			retries = -1 // LLMOptions: negative is none, 0 the default
		}
		lo := engineer.LLMOptions{Modules: mods, MaxTokens: *f.engMax, Temperature: *f.engTemp, MaxRetries: retries}
		target := *f.engineer
		if target == "" {
			target = *f.engURL
		}
		tp, isLM := pol.(*textpolicy.Policy)
		if target == "" {
			if !isLM {
				return nil, nil, badInput("--strategy llm with --policy %s needs --engineer URL (an OpenAI-compatible endpoint) and --engineer-model; self and base need --policy qwen3", *f.policy)
			}
			target = "self"
		}
		switch target {
		case "self":
			if !isLM {
				return nil, nil, badInput("--engineer self needs --policy qwen3 (the policy being trained answers the engineer prompt)")
			}
			lo.Chat = &textpolicy.EngineerChat{LM: tp.LM(), Label: func() string { return fmt.Sprintf("self@v%d", tp.Version()) }, Thinking: *f.engThinking, Seed: *f.seed}
		case "base":
			if !isLM {
				return nil, nil, badInput("--engineer base needs --policy qwen3 (a frozen copy of --model answers the engineer prompt)")
			}
			spec, err := f.eng.spec(*f.device, io.Discard)
			if err != nil {
				return nil, nil, err
			}
			spec.Log = func(line string) { logger.Info("torch worker (base engineer)", "line", line) }
			base, err := textpolicy.OpenLM(context.Background(), spec, *f.modelDir)
			if err != nil {
				return nil, nil, engineErr("--engineer base", err)
			}
			closer = base.Close
			lo.Chat = &textpolicy.EngineerChat{LM: base, Label: func() string { return "base@" + *f.modelDir }, Thinking: *f.engThinking, Seed: *f.seed}
		default:
			if *f.engModel == "" {
				return nil, nil, badInput("--engineer %s needs --engineer-model (the model name at that endpoint)", target)
			}
			lo.BaseURL, lo.Model, lo.APIKey = target, *f.engModel, os.Getenv("T2T_ENGINEER_API_KEY")
		}
		eo.LLM = lo
	}
	strat, err := engineer.ParseStrategy(*f.strategy, eo)
	if err != nil {
		_ = closer()
		return nil, nil, badInput("--strategy: %v", err)
	}
	return strat, closer, nil
}

// Close releases the policy's model (a torch worker); a no-op for other policies.
func (s *trainSetup) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

// options returns the run options of the flags (Rollouts left to the caller).
func (f *trainFlags) options(s *trainSetup, stdout io.Writer) train.Options {
	return train.Options{
		RunID: *f.runID, Stages: *f.stages, Seed: *f.seed, Config: s.cfg, InstancesPerUnit: *f.perUnit,
		GroupSize: *f.group, LearnerBatch: *f.batch, Strategy: s.strat,
		ValPerSize: *f.valPer, EvalPerSize: *f.evalPer, CheckpointDir: *f.ckpt, Out: stdout, Logger: s.logger,
		Deterministic: *f.deterministic, Resume: *f.resume,
	}
}

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t train", "t2t train [flags]   (every role in one process: coordinator, rollouts, learner, engineer)", stderr)
	tf := addTrainFlags(fs)
	rollouts := fs.Int("rollouts", 2, "rollout actors")
	httpAddr := fs.String("http", "", "serve /healthz, /readyz and /metrics (Prometheus text) on this host:port (empty: off)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := tf.logger(stderr)
	s, err := tf.build(logger, stdout)
	if err != nil {
		return err
	}
	defer s.Close()
	tel, stopTel, err := tf.tel.setup(ctx)
	if err != nil {
		return err
	}
	defer stopTel()
	st, err := store.Open(ctx, store.Options{URL: *tf.redisURL, Logger: logger})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	opt := tf.options(s, stdout)
	opt.Rollouts = *rollouts
	opt.Tracer = tel.Tracer("t2t/train")
	if *httpAddr != "" {
		runID := opt.RunID
		if runID == "" {
			runID = fmt.Sprintf("run-%d", opt.Seed)
		}
		stopHTTP, err := serveTrainHTTP(*httpAddr, *tf.tel.node, &opt, &dashboard{st: st, run: runID}, stdout)
		if err != nil {
			return err
		}
		defer stopHTTP()
	}
	stageProgress(&opt, stderr)
	start := time.Now()
	res, err := train.Run(ctx, opt, s.pol, st)
	if err != nil {
		return err
	}
	f := res.Flow()
	line := fmt.Sprintf("run %s done in %s; Redis %s; %s", res.RunID, time.Since(start).Round(time.Second), st.URL(), f)
	if f.Warn() {
		line += "; WARNING: " + train.DiscardWarning(f)
	}
	fmt.Fprintln(stdout, line)
	return nil
}

func warmStart(gp *train.GridPolicy, cfg env.Config, seed uint64, steps int, w io.Writer) error {
	c := cfg.Clone()
	c.Instances = 64
	start := time.Now()
	var last learner.UpdateStats
	for i := range steps {
		ins, err := env.Generate(c, seed^0xbc00+uint64(i), 0, c.Instances)
		if err != nil {
			return err
		}
		if last, err = learner.BCFromOptimal(gp.Net, ins, gp.Rollout); err != nil {
			return err
		}
	}
	fmt.Fprintf(w, "warm start: %d behaviour-cloning steps, accuracy %.2f, %s\n", steps, last.Accuracy, time.Since(start).Round(time.Second))
	return nil
}

func parseWidths(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 || n > 4096 {
			return nil, fmt.Errorf("width %q: want an integer in [1,4096]", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// stageProgress draws a bar of the running stage's work units on a
// terminal (stderr). Elsewhere the per-stage table lines on stdout are the
// plain-line progress, so nothing more is printed.
func stageProgress(opt *train.Options, w io.Writer) {
	if !isTerminal(w) {
		return
	}
	units := (opt.Config.Instances + opt.InstancesPerUnit - 1) / max(opt.InstancesPerUnit, 1)
	if opt.Config.Instances == 0 || opt.InstancesPerUnit == 0 {
		return
	}
	var (
		mu    sync.Mutex
		stage = -1
		seen  map[string]bool
		bar   *progress
	)
	next := opt.OnUnit
	opt.OnUnit = func(r store.UnitResult) {
		if next != nil {
			next(r)
		}
		mu.Lock()
		defer mu.Unlock()
		if r.Stage != stage {
			if bar != nil {
				bar.finish()
			}
			stage, seen = r.Stage, map[string]bool{}
			bar = newProgress(w, fmt.Sprintf("stage %d units", r.Stage), units)
		}
		seen[r.UnitID] = true
		bar.set(len(seen))
		if len(seen) == units {
			bar.finish()
			bar = nil
			stage = -1
		}
	}
}
