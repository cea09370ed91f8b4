package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/experiment"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// expFlags are t2t experiment's flags that Options does not take as they are.
type expFlags struct {
	strategies, modules, cfgPath, llmKeyEnv *string
	seeds, instances                        *int
	seed0                                   *uint64
	verbose                                 *bool
	eng                                     *engine.Flags
}

// addExpFlags registers the flags, the settings straight into o.
func addExpFlags(fs *flag.FlagSet, o *experiment.Options) *expFlags {
	o.Register(fs)
	return &expFlags{
		strategies: fs.String("strategies", "fixed,learnability,rules", "comma-separated arms: "+strings.Join(experiment.ArmNames(), ", ")+
			"\n(self: the llm strategy answered by the policy being trained; base: by a frozen copy of --model)"),
		seeds:     fs.Int("seeds", 3, "seeds per strategy (the same seeds for every strategy)"),
		seed0:     fs.Uint64("seed0", 1, "first seed; seeds are seed0, seed0+1, ..."),
		cfgPath:   fs.String("config", "", "stage-0 generator config JSON (default: the embedded local config)"),
		instances: fs.Int("instances", 0, "training instances per stage (0: the config's)"),
		modules:   fs.String("modules", "F,G,H0,T", "context-module variants of the llm, self and base arms, separated by ';' (each like F,G,H0,T): one arm per variant"),
		llmKeyEnv: fs.String("llm-key-env", "OPENAI_API_KEY", "llm strategy: environment variable holding the API key (may be unset)"),
		verbose:   fs.Bool("v", false, "log the actor runtime to stderr"),
		eng:       addEngineFlags(fs),
	}
}

func runExperiment(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t experiment", "t2t experiment --strategies fixed,rules,learnability[,llm] --seeds 3 --stages N [--modules 'F;F,G;F,G,H0,T'] --out DIR", stderr)
	var o experiment.Options
	f := addExpFlags(fs, &o)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := f.complete(&o, args, stdout, stderr); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	exp, err := experiment.Run(ctx, o)
	if err != nil {
		return err
	}
	md := report.ExperimentMarkdown(exp)
	if i := strings.Index(md, "\n## Learning curves"); i >= 0 {
		md = md[:i+1]
	}
	_, err = fmt.Fprintf(stdout, "\n%s\nwrote %s/{experiment.html,experiment.md,experiment.csv,summary.csv,experiment.json}\n", md, o.Dir)
	return err
}

// complete checks the flags and fills the rest of o.
func (f *expFlags) complete(o *experiment.Options, args []string, stdout, stderr io.Writer) error {
	if o.Dir == "" {
		return badInput("--out is required")
	}
	if *f.seeds < 1 || *f.seeds > 100 {
		return badInput("--seeds %d out of range [1,100]", *f.seeds)
	}
	if o.Policy != train.PolicyGridNet && o.Policy != train.PolicyScripted && o.Policy != train.PolicyQwen3 {
		return badInput("--policy %q: want gridnet, qwen3 or scripted", o.Policy)
	}
	cfg, err := loadConfig(*f.cfgPath)
	if err != nil {
		return err
	}
	if *f.instances > 0 {
		cfg.Instances = *f.instances
	}
	widths, err := train.ParseWidths(o.Hidden)
	if err != nil {
		return badInput("--hidden: %v", err)
	}
	if o.Arms, err = experiment.ParseArms(*f.strategies, *f.modules); err != nil {
		return &usageError{fmt.Errorf("--%w", err)}
	}
	if err := f.llm(o); err != nil {
		return err
	}
	for i := range *f.seeds {
		o.Seeds = append(o.Seeds, *f.seed0+uint64(i))
	}
	o.Config, o.Out = experiment.BaseConfig(cfg), stdout
	o.Command, o.LLMAPIKey = experiment.CommandLine("t2t experiment", args), os.Getenv(*f.llmKeyEnv)
	o.Logger = slog.New(slog.DiscardHandler)
	if *f.verbose {
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	o.NewPolicy = func(_ experiment.Arm, seed uint64) (train.Policy, func() error, error) {
		spec := train.PolicySpec{Kind: o.Policy, Device: o.Device, MistakeRate: o.MistakeRate, Hidden: widths, LR: o.LR,
			GroupSize: o.GroupSize, Seed: seed, ModelDir: o.LLM.Model, Engine: o.LLM.Spec, Text: textpolicy.DefaultOptions()}
		spec.Text.Prompt, _ = env.PromptStyle(o.LLM.Prompt) // checked by llm
		spec.Text.MaxNewTokens, spec.Text.Thinking = o.LLM.MaxNewTokens, o.LLM.Thinking
		return train.NewPolicy(context.Background(), spec)
	}
	return nil
}

// llm checks the LLM settings the arms and the policy need, and zeroes the
// others (so that they leave the fingerprints of other runs alone).
func (f *expFlags) llm(o *experiment.Options) error {
	checkpoint, endpoint := experiment.LLMEngineer(o.Arms)
	if endpoint && (o.LLMURL == "" || o.LLMModel == "") {
		return badInput("the llm strategy needs --llm-url and --llm-model")
	}
	if checkpoint && o.LLM.Model == "" {
		return badInput("the self and base arms need --model DIR (with --policy qwen3 for self)")
	}
	if !checkpoint {
		o.LLM.EngineerMaxTokens, o.LLM.EngineerTemperature, o.LLM.EngineerRetries = 0, 0, 0
	}
	if o.Policy != train.PolicyQwen3 {
		o.LLM.MaxNewTokens, o.LLM.Prompt, o.LLM.Thinking = 0, "", false
		if !checkpoint {
			o.LLM.Model = ""
			return nil
		}
	} else if _, err := env.PromptStyle(o.LLM.Prompt); err != nil {
		return badInput("--prompt %q: want full or compact", o.LLM.Prompt)
	}
	var err error
	if o.LLM.Spec, err = engineSpec(f.eng, o.Device, io.Discard); err != nil {
		return err
	}
	o.LLM.Engine = o.LLM.Spec.Kind
	return nil
}
