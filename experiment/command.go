package experiment

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/train"
)

// Flags are t2t experiment's command line: the settings of Options as
// they are (Options.Register), those that Options takes in another form
// (the arms, the seeds, the stage-0 config, the compute engine), and a
// recipe with its scale (Recipe). Register binds them to a flag set;
// after it is parsed, Options applies the recipe and builds the options
// of the experiment.
type Flags struct {
	// Opt holds the settings the flags set directly.
	Opt Options
	// Strategies and Modules are the arms (ParseArms).
	Strategies, Modules string
	// Seeds seeds per arm, from Seed0 on.
	Seeds int
	Seed0 uint64
	// ConfigPath is the stage-0 generator config (train.ReadConfig);
	// Instances, when > 0, its training instances per stage.
	ConfigPath string
	Instances  int
	// LLMKeyEnv names the environment variable with the llm strategy's
	// API key.
	LLMKeyEnv string
	// Verbose logs the actor runtime to the command's stderr.
	Verbose bool
	// Engine is the LLM compute engine.
	Engine engine.Flags
	// Recipe is a settings file and the scale of its counts.
	Recipe Recipe
}

// Register binds f to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	f.Opt.Register(fs)
	fs.StringVar(&f.Strategies, "strategies", "fixed,learnability,rules", "comma-separated arms: "+strings.Join(ArmNames(), ", ")+
		"\n(self: the llm strategy answered by the policy being trained; base: by a frozen copy of --model)")
	fs.IntVar(&f.Seeds, "seeds", 3, "seeds per strategy (the same seeds for every strategy)")
	fs.Uint64Var(&f.Seed0, "seed0", 1, "first seed; seeds are seed0, seed0+1, ...")
	fs.StringVar(&f.ConfigPath, "config", "", "stage-0 generator config JSON (default: the embedded local config)")
	fs.IntVar(&f.Instances, "instances", 0, "training instances per stage (0: the config's)")
	fs.StringVar(&f.Modules, "modules", engineer.DefaultModules, "context-module variants of the llm, self and base arms, separated by ';' (each like F,G,H0,T): one arm per variant")
	fs.StringVar(&f.LLMKeyEnv, "llm-key-env", "OPENAI_API_KEY", "llm strategy: environment variable holding the API key (may be unset)")
	fs.BoolVar(&f.Verbose, "v", false, "log the actor runtime to stderr")
	f.Engine.Register(fs)
	f.Recipe.Register(fs)
}

// Options applies the recipe to the flags of fs that the command line
// did not set (Recipe.Apply), checks every setting, scales the counts
// (Recipe.Scale, saying what it changed on stdout) and returns the
// options of the experiment, its policies built by train.NewPolicy. args
// is the command line, for the report. Bad settings are *fielderr.Error, or
// train's *fielderr.Error for the stage-0 config and the ranges train.Run
// checks (Options.Validate).
func (f *Flags) Options(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) (Options, error) {
	if err := f.Recipe.Apply(fs); err != nil {
		return Options{}, err
	}
	o := f.Opt
	if o.Dir == "" {
		return o, &fielderr.Error{Flag: "out", Reason: "is required"}
	}
	if f.Seeds < 1 || f.Seeds > 100 {
		return o, &fielderr.Error{Flag: "seeds", Value: f.Seeds, Reason: "out of range [1,100]"}
	}
	if err := train.CheckPolicyKind(o.Policy); err != nil {
		return o, err
	}
	cfg, err := train.ReadConfig(f.ConfigPath)
	if err != nil {
		return o, err
	}
	if f.Instances > 0 {
		cfg.Instances = f.Instances
	}
	o.Config = BaseConfig(cfg)
	widths, err := train.ParseWidths(o.Hidden)
	if err != nil {
		return o, &fielderr.Error{Flag: "hidden", Reason: err.Error()}
	}
	if o.Arms, err = ParseArms(f.Strategies, f.Modules); err != nil {
		return o, err
	}
	if err := f.llm(&o); err != nil {
		return o, err
	}
	if o.LR == 0 {
		o.LR = train.DefaultLR(o.Policy)
	}
	f.Recipe.Scale(&o, stdout)
	if err := o.Validate(); err != nil {
		return o, err
	}
	for i := range f.Seeds {
		o.Seeds = append(o.Seeds, f.Seed0+uint64(i))
	}
	o.Out, o.Command, o.LLMAPIKey = stdout, CommandLine("t2t experiment", args), os.Getenv(f.LLMKeyEnv)
	o.Logger = slog.New(slog.DiscardHandler)
	if f.Verbose {
		o.Logger = slog.New(slog.NewTextHandler(stderr, nil))
	}
	o.NewPolicy = o.policyFactory(widths)
	return o, nil
}

// policyFactory builds each run's policy from o's settings (as they are
// now) and the seed.
func (o *Options) policyFactory(widths []int) func(Arm, uint64) (train.Policy, func() error, error) {
	o = new(*o)
	return func(_ Arm, seed uint64) (train.Policy, func() error, error) {
		spec, err := o.RunSettings.PolicySpec(seed) // its prompt style was checked by llm
		if err != nil {
			return nil, nil, err
		}
		spec.Hidden, spec.Engine = widths, o.EngineSpec
		return train.NewPolicy(context.Background(), spec)
	}
}

// llm checks the LLM settings the arms and the policy need, and zeroes the
// others (so that they leave the fingerprints of other runs alone).
func (f *Flags) llm(o *Options) error {
	checkpoint, endpoint := LLMEngineer(o.Arms)
	if endpoint && (o.LLMURL == "" || o.LLMModel == "") {
		return &fielderr.Error{Flag: "llm-url", Reason: "the llm strategy needs --llm-url and --llm-model"}
	}
	if checkpoint && o.Model == "" {
		return &fielderr.Error{Flag: "model", Reason: "the self and base arms need --model DIR (with --policy qwen3 for self)"}
	}
	style, err := engineer.ParsePromptStyle(o.EngineerPrompt)
	if err != nil {
		return &fielderr.Error{Flag: "engineer-prompt", Value: strconv.Quote(o.EngineerPrompt), Reason: "want full or compact"}
	}
	o.EngineerPrompt = style
	if style == engineer.PromptFull {
		o.EngineerPrompt = "" // the fingerprints of runs made before the flag
	}
	if o.EngineerRetry, o.EngineerRetryTemperature, err = train.ParseRetry(o.EngineerRetry, o.EngineerRetryTemperature, "engineer-retry"); err != nil {
		return err
	}
	if !checkpoint {
		o.EngineerMaxTokens, o.EngineerTemperature, o.EngineerRetries, o.EngineerPrompt = 0, 0, 0, ""
		o.EngineerRetry, o.EngineerRetryTemperature = "", 0
	}
	if !train.IsLLM(o.Policy) {
		o.MaxNewTokens, o.Prompt, o.Thinking, o.RewardPartial = 0, "", false, 0
		if !checkpoint {
			o.Model = ""
			return nil
		}
	} else if _, err := o.RunSettings.PolicySpec(0); err != nil { // --prompt, --reward-partial
		return err
	}
	spec, err := f.Engine.Spec(o.Device, nil)
	if err != nil {
		return &fielderr.Error{Flag: "engine", Reason: err.Error()}
	}
	o.EngineSpec, o.Engine = spec, spec.Kind
	return nil
}
