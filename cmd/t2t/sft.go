package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/cpuprofile"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/train"
)

// sftFlags are t2t sft's flags that SFTOptions does not take as they are.
type sftFlags struct {
	dir, device, cpuProfile, prompt *string
	agents, sizes                   *string
	engData                         *string
	engTurns, engEvery, engHeld     *int
	lr                              *float64
	lrSchedule                      *string
	maxTokens                       *int
	evalBefore                      *bool
	thinking                        *bool
	resume                          *bool
	engine                          *engine.Flags
}

// addSFTFlags registers the flags, the run's straight into o.
func addSFTFlags(fs *flag.FlagSet, o *textpolicy.SFTOptions) *sftFlags {
	f := &sftFlags{dir: fs.String("model", "", "Qwen3 checkpoint directory to start from (required)")}
	fs.StringVar(&o.Dir, "out", "", "directory to write the fine-tuned checkpoint to (required)")
	fs.IntVar(&o.Steps, "steps", 200, "optimizer steps")
	fs.IntVar(&o.Batch, "batch", 16, "instances per step")
	f.lr = fs.Float64("lr", 1e-3, "learning rate (AdamW); with --lr-schedule cosine the first step's")
	f.lrSchedule = fs.String("lr-schedule", "constant", "constant, or cosine: from --lr down to --lr-min at the last step along a half cosine, in --lr-segments constant pieces")
	fs.Float64Var(&o.LR.MinLR, "lr-min", 0, "with --lr-schedule cosine: the last step's rate, ≤ --lr (0: --lr / 10)")
	fs.IntVar(&o.LR.Segments, "lr-segments", textpolicy.DefaultLRSegments, "with --lr-schedule cosine: the rate changes this many times at most (≥ 2; the gomlx engine recompiles its step at each)")
	fs.IntVar(&o.EvalInstances, "eval", 48, "evaluation instances (split evenly over --agents, on --sizes), greedy, before and after")
	fs.IntVar(&o.ReportEvery, "report-every", 50, "print the loss every this many steps")
	fs.IntVar(&o.EvalEvery, "eval-every", 0, "also evaluate every this many steps (0: before and after only)")
	fs.BoolVar(&o.MapProbe, "map-probe", false, "at each evaluation also play the instances with their holes moved to other cells and count the plans that change:\n"+
		"a model blind to the holes changes none; one that reads them changes each plan that would cross a real hole (doubles the evaluation's generation)")
	f.evalBefore = fs.Bool("eval-before", true, "evaluate before the first step (false: a run continuing a checkpoint already evaluated on this set)")
	fs.IntVar(&o.SaveEvery, "save-every", 0, "also write the checkpoint to --out every this many steps, so a stopped run keeps its progress (0: at the end only)")
	f.resume = fs.Bool("resume", false, "a run in pieces: when --model is a checkpoint of t2t sft --resume, go on after its step to --steps in all, with its AdamW state and\n"+
		"the instances and engineer turns of one run (keep --seed, --batch, --agents, --holes, --wait-ratio, --target and the turns); write checkpoints that can be continued (about 3× the weights' size)")
	f.maxTokens = fs.Int("max-tokens", 64, "completion cap during evaluation")
	f.thinking = fs.Bool("thinking", false, "render the chat template with thinking (the target then starts with an empty think block)")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the training instances")
	fs.Uint64Var(&o.EvalSeed, "eval-seed", 0, "seed of the evaluation instances (0: --seed's; give one to compare runs of different --seed on the same instances)")
	f.device = fs.String("device", "cpu", train.DeviceHelp)
	f.engine = addEngineFlags(fs)
	f.engine.RegisterTraining(fs)
	f.cpuProfile = fs.String("cpuprofile", "", "write a Go CPU profile of the run to this file (go tool pprof)")
	f.prompt = fs.String("prompt", env.PromptFull, env.PromptStyleHelp)
	f.agents = fs.String("agents", "2", "agent counts to train and evaluate on, comma-separated (2,3,4,5: step s trains on the (s mod 4)-th; the evaluation set splits evenly)")
	f.sizes = fs.String("sizes", "3-5", "map sizes MIN-MAX, in equal shares (3-10: the paper's range); k agents train on the sizes ≥ k")
	fs.Func("holes", "hole ratios of the maps, comma-separated (default 0.2; 0.1,0.2,0.3,0.4,0.5: the paper's benchmark): the steps take them in turn,\n"+
		"one per round of --agents; a size too small for a ratio sits it out; the evaluation set splits evenly over them", o.ParseHoles)
	fs.Func("target", "the plan the answers teach: optimal (the solver's) or prioritized (each agent planned against the agents before it\n"+
		"only, the order an answer is written in; the optimal plan where there is none) (default optimal)", o.ParseTarget)
	fs.Func("wait-ratio", fmt.Sprintf("share of the instances drawn to need a wait (some agent must wait or detour for another), training and evaluation set (default %g;\n", textpolicy.DefaultSFTWaitRatio)+
		"the paper's benchmark has subsets at 0.25, 0.5 and 0.75)", o.ParseWaitRatio)
	f.engTurns = fs.Int("engineer-turns", 0, "mix this many engineer turns (the engineer's prompt after a stage, answered by a teacher strategy)\n"+
		"from --engineer-data into the run: the engineer skill in the same weights (0: none)")
	f.engData = fs.String("engineer-data", "", "engineer turns, JSON Lines (t2t engineer turns --out); the held-out ones are never used")
	f.engEvery = fs.Int("engineer-every", 4, "with --engineer-turns: every this many steps is an engineer step (--batch turns, in turn) instead of env instances (1: every step)")
	f.engHeld = fs.Int("engineer-held-out", engineer.DefaultHeldOutPercent, "with --engineer-turns: also skip every turn whose context hash falls in this percent (as t2t engineer turns --held-out)")
	return f
}

func runSFT(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t sft", "t2t sft --model DIR --out DIR2 --steps N [flags]   (supervised warm start on optimal answers)", stderr)
	var o textpolicy.SFTOptions
	f := addSFTFlags(fs, &o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := o.ParseShape(*f.agents, *f.sizes); err != nil {
		return err
	}
	o.SkipEvalBefore = !*f.evalBefore
	switch *f.lrSchedule {
	case "constant":
	case "cosine":
		o.LR.Cosine = true
	default:
		return badInput("--lr-schedule %q: want constant or cosine", *f.lrSchedule)
	}
	popt, err := env.PromptStyle(*f.prompt)
	if err != nil {
		return badInput("--prompt %q: %s", *f.prompt, env.PromptStyleWant)
	}
	switch {
	case *f.dir == "" || o.Dir == "":
		return badInput("--model and --out are required")
	case o.Steps < 0 || o.Batch < 1 || o.EvalInstances < 1 || o.ReportEvery < 1 || *f.maxTokens < 1:
		return badInput("--steps ≥ 0, --batch, --eval, --report-every and --max-tokens ≥ 1")
	case o.EvalEvery < 0 || o.SaveEvery < 0:
		return badInput("--eval-every and --save-every must be ≥ 0")
	}
	if err := o.Validate(); err != nil {
		return err // a field error: inputError words it (its flag where it names one)
	}
	if err := o.LR.Validate(*f.lr); err != nil {
		return err // a field error naming its flag
	}
	turns, err := f.engineerTurns(&o)
	if err != nil {
		return err
	}
	stopProfile, err := cpuprofile.Start(*f.cpuProfile)
	if err != nil {
		return badInput("--cpuprofile: %v", err)
	}
	defer stopProfile()
	lm, err := openLM(context.Background(), f.engine, *f.device, *f.dir, stderr)
	if err != nil {
		return err
	}
	defer lm.Close()
	pol, err := textpolicy.New(lm, textpolicy.SFTPolicyOptions(textpolicy.Options{Prompt: popt, Thinking: *f.thinking, MaxNewTokens: *f.maxTokens}, *f.lr))
	if err != nil {
		return badInput("%v", err)
	}
	if *f.resume {
		if err := pol.ResumeSFT(stdout, *f.dir, &o); err != nil {
			return badInput("--resume: %v", err)
		}
	}
	o.AddEngineerTurns(stdout, lm, turns, *f.thinking, *f.engData)
	o.Progress = textpolicy.PrintSFTProgress(stdout, o.Dir)
	if err := pol.RunSFT(context.Background(), o); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", o.Dir)
	return nil
}

// engineerTurns reads the first --engineer-turns training turns of --engineer-data (none without
// the flag) and sets o.EngineerEvery.
func (f *sftFlags) engineerTurns(o *textpolicy.SFTOptions) ([]engineer.Turn, error) {
	n := *f.engTurns
	switch {
	case n < 0:
		return nil, badInput("--engineer-turns must be ≥ 0")
	case n == 0 && *f.engData != "":
		return nil, badInput("--engineer-data needs --engineer-turns N")
	case n == 0:
		return nil, nil
	case *f.engData == "":
		return nil, badInput("--engineer-turns needs --engineer-data FILE (t2t engineer turns --out)")
	case *f.engEvery < 1:
		return nil, badInput("--engineer-every must be ≥ 1")
	case *f.engHeld < 0 || *f.engHeld > 100:
		return nil, badInput("--engineer-held-out must be in 0..100")
	}
	turns, err := engineer.ReadTrainingTurns(*f.engData, *f.engHeld, n)
	if err != nil {
		return nil, err
	}
	o.EngineerEvery = *f.engEvery
	return turns, nil
}
