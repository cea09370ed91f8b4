package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"runtime/pprof"
	"time"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

func runSFT(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t sft", "t2t sft --model DIR --out DIR2 --steps N [flags]   (supervised warm start on optimal answers)", stderr)
	dir := fs.String("model", "", "Qwen3 checkpoint directory to start from (required)")
	out := fs.String("out", "", "directory to write the fine-tuned checkpoint to (required)")
	steps := fs.Int("steps", 200, "optimizer steps")
	batch := fs.Int("batch", 16, "instances per step")
	lr := fs.Float64("lr", 1e-3, "learning rate (AdamW)")
	evalN := fs.Int("eval", 48, "evaluation instances (2 agents, sizes 3..5), greedy, before and after")
	every := fs.Int("report-every", 50, "print the loss every this many steps")
	evalEvery := fs.Int("eval-every", 0, "also evaluate every this many steps (0: before and after only)")
	saveEvery := fs.Int("save-every", 0, "also write the checkpoint to --out every this many steps, so a stopped run keeps its progress (0: at the end only)")
	maxTokens := fs.Int("max-tokens", 64, "completion cap during evaluation")
	thinking := fs.Bool("thinking", false, "render the chat template with thinking (the target then starts with an empty think block)")
	seed := fs.Uint64("seed", 1, "seed of the training instances")
	evalSeed := fs.Uint64("eval-seed", 0, "seed of the evaluation instances (0: --seed's; give one to compare runs of different --seed on the same instances)")
	device := fs.String("device", "cpu", deviceFlagHelp)
	ef := addEngineFlags(fs)
	cpuProfile := fs.String("cpuprofile", "", "write a Go CPU profile of the run to this file (go tool pprof)")
	promptStyle := fs.String("prompt", "full", promptFlagHelp)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	popt, err := promptOptions(*promptStyle)
	if err != nil {
		return err
	}
	switch {
	case *dir == "" || *out == "":
		return badInput("--model and --out are required")
	case *steps < 0 || *batch < 1 || *evalN < 1 || *every < 1 || *maxTokens < 1:
		return badInput("--steps ≥ 0, --batch, --eval, --report-every and --max-tokens ≥ 1")
	case *evalEvery < 0 || *saveEvery < 0:
		return badInput("--eval-every and --save-every must be ≥ 0")
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			return badInput("--cpuprofile: %v", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer pprof.StopCPUProfile()
	}
	lm, err := ef.openLM(context.Background(), *device, *dir, stderr)
	if err != nil {
		return err
	}
	defer lm.Close()
	g := learner.DefaultGRPOConfig()
	g.LR, g.MicroBatch = *lr, 16
	g.LengthBuckets = []int{64, 80, 96, 128, 192, 224, 256, 512, 1024, 2048, 4096} // SFT sequences are short: pad little
	pol, err := textpolicy.New(lm, textpolicy.Options{Prompt: popt, Thinking: *thinking, MaxNewTokens: *maxTokens, GRPO: g, GenBatch: 16})
	if err != nil {
		return badInput("%v", err)
	}
	cfg := env.Config{Agents: 2}
	for s := 3; s <= 5; s++ {
		cfg.Sizes = append(cfg.Sizes, env.SizeConfig{Size: s, DataRatio: 1.0 / 3, HoleRatio: 0.2, WaitRatio: 0.3})
	}
	evalCfg := cfg.Clone()
	evalCfg.Instances = *evalN
	es := *seed
	if *evalSeed != 0 {
		es = *evalSeed
	}
	evalIns, err := env.Generate(evalCfg, es^0xe7a1e7a1, 0, *evalN)
	if err != nil {
		return err
	}
	h := sha256.New()
	baseline := 0
	for _, in := range evalIns {
		io.WriteString(h, in.ID)
		var rep env.Report
		if env.Verify(in, env.ManhattanPlan(in), &rep); rep.Valid {
			baseline++
		}
	}
	fmt.Fprintf(stdout, "evaluation set: %d instances from seed %d (id %x); baseline: rows-first Manhattan paths, blind to holes and the other agent, are valid on %.1f%%\n",
		len(evalIns), es, h.Sum(nil)[:6], 100*float64(baseline)/float64(len(evalIns)))
	report := func(when string) error {
		r, err := pol.Evaluate(evalIns)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d instances (2 agents, 3x3..5x5), greedy: parsable %.1f%%, valid %.1f%%, optimal %.1f%%; valid by size: %s; failed checks: %s\n",
			when, r.Episodes, 100*r.Parsable, 100*r.Valid, 100*r.Optimal, r.SizeSummary(), r.FailureSummary())
		return nil
	}
	if err := report("before"); err != nil {
		return err
	}
	trainCfg := cfg.Clone()
	trainCfg.Instances = *batch
	start := time.Now()
	var lossSum, accSum float64
	for step := 1; step <= *steps; step++ {
		ins, err := env.Generate(trainCfg, *seed+uint64(step), 0, *batch)
		if err != nil {
			return err
		}
		st, err := pol.SFTStep(ins)
		if err != nil {
			return err
		}
		lossSum += st.Loss
		accSum += st.Accuracy
		if step%*every == 0 || step == *steps {
			n := float64((step-1)%*every + 1)
			fmt.Fprintf(stdout, "step %d: cross-entropy %.3f, token accuracy %.3f (mean of the last %d steps), %s\n",
				step, lossSum/n, accSum/n, int(n), time.Since(start).Round(100*time.Millisecond))
			lossSum, accSum = 0, 0
		}
		if *evalEvery > 0 && step%*evalEvery == 0 && step < *steps {
			if err := report(fmt.Sprintf("step %d", step)); err != nil {
				return err
			}
		}
		if *saveEvery > 0 && step%*saveEvery == 0 && step < *steps {
			if err := pol.Save(*out); err != nil {
				return err
			}
			fmt.Fprintf(stdout, "step %d: wrote %s\n", step, *out)
		}
	}
	if *steps > 0 { // with --steps 0 the run is an evaluation (and a copy to --out)
		if err := report("after"); err != nil {
			return err
		}
	}
	if err := pol.Save(*out); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}

const promptFlagHelp = "prompt style: full (the paper's prompt: rules, objective, example) or compact (map, coordinates and the answer format: for small models trained from scratch; use the same style the checkpoint was fine-tuned with)"

// promptOptions returns the env prompt options of a --prompt style.
func promptOptions(style string) (env.PromptOptions, error) {
	o := env.DefaultPromptOptions()
	switch style {
	case "full":
	case "compact":
		o.Compact = true
	default:
		return o, badInput("--prompt %q: want full or compact", style)
	}
	return o, nil
}
