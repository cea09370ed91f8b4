package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/train"
)

func runTrain(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t train", "t2t train [flags]   (every role in one process: coordinator, rollouts, learner, engineer)", stderr)
	stages := fs.Int("stages", 8, "training stages")
	seed := fs.Uint64("seed", 1, "run seed: instances, sampling and weight initialisation")
	cfgPath := fs.String("config", "", "stage-0 generator config JSON (default: the embedded local config, sizes 3..10)")
	instances := fs.Int("instances", 0, "training instances per stage (0: the config's)")
	policy := fs.String("policy", "gridnet", "policy to train: gridnet (CPU network) or scripted (optimal plans with injected mistakes)")
	mistake := fs.Float64("mistake-rate", 0.05, "scripted policy: chance per agent and step of a random move")
	strategy := fs.String("strategy", engineer.NameLearnability, "engineer strategy: "+strings.Join(engineer.StrategyNames(), ", "))
	redisURL := fs.String("redis", "", "Redis URL (redis://host:port/db); empty embeds an in-process Redis-protocol server")
	warm := fs.String("warmstart", "none", "gridnet warm start: none or bc (behaviour cloning from optimal plans)")
	bcSteps := fs.Int("bc-steps", 60, "warm start: behaviour-cloning steps of 64 instances")
	hidden := fs.String("hidden", "128,128", "gridnet hidden layer widths")
	lr := fs.Float64("lr", 1e-3, "learning rate (AdamW)")
	group := fs.Int("group", 8, "GRPO group size: episodes per instance")
	batch := fs.Int("learner-batch", 32, "groups per policy update")
	rollouts := fs.Int("rollouts", 2, "rollout actors")
	perUnit := fs.Int("instances-per-unit", 16, "instances per work unit")
	runID := fs.String("run-id", "", "run id in Redis (default run-<seed>)")
	ckpt := fs.String("checkpoint-dir", "", "write a gridnet checkpoint after every stage into this folder")
	valPer := fs.Int("val-per-size", 20, "validation set: instances per map size (2 agents, sizes 3..10)")
	evalPer := fs.Int("eval-per-size", 10, "benchmark suite: instances per (agents, size, wait subset) for 3/4/5 agents")
	device := fs.String("device", "cpu", "compute device: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds)")
	verbose := fs.Bool("v", false, "log the actor runtime to stderr")
	tf := addTelemetryFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *instances > 0 {
		cfg.Instances = *instances
	}
	if *warm != "none" && *warm != "bc" {
		return badInput("--warmstart %q: want none or bc", *warm)
	}
	if *mistake < 0 || *mistake > 1 {
		return badInput("--mistake-rate %v out of range [0,1]", *mistake)
	}
	widths, err := parseWidths(*hidden)
	if err != nil {
		return badInput("--hidden: %v", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	logger := slog.New(slog.DiscardHandler)
	if *verbose {
		logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	var pol train.Policy
	switch *policy {
	case "scripted":
		pol = &train.ScriptedPolicy{MistakeRate: *mistake}
	case "gridnet":
		be, err := learner.NewBackend(*device)
		if err != nil {
			return badInput("--device: %v", err)
		}
		gc := learner.DefaultGRPOConfig()
		gc.LR = *lr
		gc.GroupSize = *group
		if err := gc.Validate(); err != nil {
			return badInput("%v", err)
		}
		net, err := learner.NewGridNet(be, learner.GridNetConfig{ObsSize: env.ObsSize(env.ObsRadius), Hidden: widths, Seed: *seed}, gc)
		if err != nil {
			return badInput("%v", err)
		}
		gp := &train.GridPolicy{Net: net, Rollout: learner.DefaultRolloutConfig()}
		if *warm == "bc" {
			if err := warmStart(gp, cfg, *seed, *bcSteps, stdout); err != nil {
				return err
			}
		}
		pol = gp
	default:
		return badInput("--policy %q: want gridnet or scripted", *policy)
	}
	tel, stopTel, err := tf.setup(ctx)
	if err != nil {
		return err
	}
	defer stopTel()
	st, err := store.Open(ctx, store.Options{URL: *redisURL, Logger: logger})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	strat, err := engineer.ParseStrategy(*strategy, engineer.Options{Seed: *seed, Base: &cfg, Feasible: env.CheckFeasible, Logger: logger})
	if err != nil {
		return badInput("--strategy: %v", err)
	}
	opt := train.Options{
		RunID: *runID, Stages: *stages, Seed: *seed, Config: cfg, InstancesPerUnit: *perUnit,
		Rollouts: *rollouts, GroupSize: *group, LearnerBatch: *batch, Strategy: strat,
		ValPerSize: *valPer, EvalPerSize: *evalPer, CheckpointDir: *ckpt, Out: stdout, Logger: logger,
		Tracer: tel.Tracer("t2t/train"),
	}
	start := time.Now()
	res, err := train.Run(ctx, opt, pol, st)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s done in %s; Redis %s\n", res.RunID, time.Since(start).Round(time.Second), st.URL())
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
