package train

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/rolloutengine"
)

// DeviceHelp describes the --device flag of the commands with a model.
const DeviceHelp = "compute device: gomlx engine: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds); torch engine: cpu, cuda or cuda:N"

// Defaults of the run settings that are flags only (the others are
// DefaultOptions', the policy kinds' and engineer's): each is set here
// once, for every command that takes it.
const (
	// DefaultMistakeRate is a scripted policy's chance per agent and step
	// of a random move.
	DefaultMistakeRate = 0.05
	// DefaultHidden are a gridnet's hidden layer widths.
	DefaultHidden = "128,128"
	// DefaultMaxNewTokens bounds an LLM policy's answer.
	DefaultMaxNewTokens = 512
)

// RunSettings are the settings of a run that every command starting runs
// takes: t2t train and t2t node hold them in Flags, t2t experiment in
// experiment.Options (which fingerprints them). Register binds their
// flags, so that each one's name, default and help is written once, here.
type RunSettings struct {
	// Stages, Epochs, GroupSize, LearnerBatch, InstancesPerUnit,
	// ValPerSize and EvalPerSize are the Options fields of the same names.
	Stages, Epochs, GroupSize, LearnerBatch, InstancesPerUnit, ValPerSize, EvalPerSize int
	// Policy (the kind), Hidden (gridnet layer widths as --hidden takes
	// them), Device, MistakeRate (scripted) and LR (0: the kind's
	// DefaultLR) describe the policy (PolicySpec).
	Policy, Hidden, Device string
	MistakeRate, LR        float64
	// Model (the starting checkpoint, also a base engineer's), Prompt (the
	// prompt style), MaxNewTokens and Thinking describe an LLM policy.
	Model, Prompt string
	MaxNewTokens  int
	Thinking      bool
	// EngineerMaxTokens, EngineerRetries, EngineerTemperature,
	// EngineerPrompt, EngineerRetry and EngineerRetryTemperature are the
	// engineer LLM's (--strategy llm, and experiment's self and base arms):
	// EngineerSpec's MaxTokens, Retries, Temperature, Prompt, Retry and
	// RetryTemperature.
	EngineerMaxTokens, EngineerRetries            int
	EngineerTemperature, EngineerRetryTemperature float64
	EngineerPrompt, EngineerRetry                 string
	// RewardPartial is an LLM policy's partial credit for invalid plans
	// (env.RewardConfig.Partial, --reward-partial).
	RewardPartial float64
}

// Register binds s's flags to fs with their defaults.
func (s *RunSettings) Register(fs *flag.FlagSet) {
	d := DefaultOptions()
	fs.IntVar(&s.Stages, "stages", d.Stages, "training stages (per run)")
	fs.IntVar(&s.Epochs, "epochs", d.Epochs, "passes over each stage's instances (the paper: 2), each with its own sampling seeds")
	fs.IntVar(&s.GroupSize, "group", d.GroupSize, "GRPO group size: episodes per instance")
	fs.IntVar(&s.LearnerBatch, "learner-batch", d.LearnerBatch, "groups per policy update")
	fs.IntVar(&s.InstancesPerUnit, "instances-per-unit", d.InstancesPerUnit, "instances per work unit")
	fs.IntVar(&s.ValPerSize, "val-per-size", d.ValPerSize, "validation set: instances per map size (2 agents, sizes 3..10)")
	fs.IntVar(&s.EvalPerSize, "eval-per-size", d.EvalPerSize, "benchmark suite: instances per (agents, size, wait subset) for 3/4/5 agents")
	fs.StringVar(&s.Policy, "policy", PolicyGridNet, PolicyHelp())
	fs.Float64Var(&s.MistakeRate, "mistake-rate", DefaultMistakeRate, "scripted policy: chance per agent and step of a random move")
	fs.StringVar(&s.Hidden, "hidden", DefaultHidden, "gridnet hidden layer widths")
	fs.Float64Var(&s.LR, "lr", 0, "learning rate (AdamW; 0: the policy's default, gridnet 1e-3, qwen3 1e-6)")
	fs.StringVar(&s.Device, "device", "cpu", DeviceHelp)
	fs.Float64Var(&s.RewardPartial, "reward-partial", 0, fmt.Sprintf("--policy qwen3: an invalid plan's accuracy reward is this × the share of agents whose own path breaks no rule, in [0,%g);\n"+
		"0: the paper's reward (an invalid plan earns 0). It gives GRPO a signal where every plan of a group is invalid", env.RewardFloor))
	fs.StringVar(&s.Model, "model", "", "--policy qwen3: the starting Hugging Face checkpoint directory (from 't2t model init' or a real Qwen3; also a base engineer's)")
	fs.IntVar(&s.MaxNewTokens, "max-new-tokens", DefaultMaxNewTokens, "--policy qwen3: most tokens per answer")
	fs.StringVar(&s.Prompt, "prompt", env.PromptFull, "--policy qwen3: "+env.PromptStyleHelp)
	fs.BoolVar(&s.Thinking, "thinking", false, "--policy qwen3: let the model think (<think>…</think>) before answering")
	fs.IntVar(&s.EngineerMaxTokens, "engineer-max-tokens", engineer.DefaultMaxTokens, "engineer LLM (--strategy llm, arms self and base): most tokens per answer")
	fs.Float64Var(&s.EngineerTemperature, "engineer-temperature", engineer.DefaultTemperature, "engineer LLM: sampling temperature (0: greedy)")
	fs.IntVar(&s.EngineerRetries, "engineer-retries", engineer.DefaultRetries, "engineer LLM: further attempts after a rejected answer or a failed call (--engineer-retry says how)")
	fs.StringVar(&s.EngineerRetry, "engineer-retry", engineer.RetryConversation, engineer.RetryHelp("--engineer-retry-temperature"))
	fs.Float64Var(&s.EngineerRetryTemperature, "engineer-retry-temperature", engineer.DefaultTemperature, "engineer LLM with --engineer-retry resample: the retries' sampling temperature, in (0, 2]")
	fs.StringVar(&s.EngineerPrompt, "engineer-prompt", engineer.PromptFull, "engineer LLM: prompt style, full (the paper's modules in prose and tables, ~2k tokens) or compact\n"+
		"(the same modules in a few lines, for small models fine-tuned on engineer turns: t2t sft --engineer-turns)")
}

// applyTo sets o's fields of the same names (the run counts).
func (s RunSettings) applyTo(o *Options) {
	o.Stages, o.Epochs, o.GroupSize, o.LearnerBatch = s.Stages, s.Epochs, s.GroupSize, s.LearnerBatch
	o.InstancesPerUnit, o.ValPerSize, o.EvalPerSize = s.InstancesPerUnit, s.ValPerSize, s.EvalPerSize
}

// PolicySpec is the part of a PolicySpec that s describes for a run seeded
// with seed: the kind, device, group size, mistake rate, rate, checkpoint
// and, for an LLM, the prompt style, answer length, thinking and partial
// credit. A bad prompt style or partial credit is a *fielderr.Error about
// --prompt or --reward-partial.
func (s RunSettings) PolicySpec(seed uint64) (PolicySpec, error) {
	spec := PolicySpec{Kind: s.Policy, Device: s.Device, GroupSize: s.GroupSize, Seed: seed, MistakeRate: s.MistakeRate, LR: s.LR, ModelDir: s.Model}
	if !IsLLM(s.Policy) {
		return spec, nil
	}
	spec.Text = textpolicy.DefaultOptions()
	var err error
	if spec.Text.Prompt, err = env.PromptStyle(s.Prompt); err != nil {
		return spec, &fielderr.Error{Kind: ErrOptions, Flag: "prompt", Value: strconv.Quote(s.Prompt), Reason: env.PromptStyleWant}
	}
	spec.Text.MaxNewTokens, spec.Text.Thinking = s.MaxNewTokens, s.Thinking
	spec.Text.Reward.Partial = s.RewardPartial
	if err := spec.Text.Reward.Validate(); err != nil { // Partial: the only field set here
		reason := err.Error()
		if fe := (*env.FieldError)(nil); errors.As(err, &fe) {
			reason = fe.Reason
		}
		return spec, &fielderr.Error{Kind: ErrOptions, Flag: "reward-partial", Value: s.RewardPartial, Reason: reason, Err: err}
	}
	return spec, nil
}

// Flags are the run settings that `t2t train` and `t2t node` share on their
// command lines (Register, with DefaultOptions' defaults), and what they
// build (Build): the stage-0 config, the policy and the engineer.
type Flags struct {
	// RunSettings are the settings t2t experiment shares.
	RunSettings
	// Opt holds the other options the flags set directly.
	Opt                          Options
	ConfigPath, Strategy         string
	WarmStart                    string
	Instances, BCSteps           int
	GenSlots                     int
	LoRARank, RewardL1, RewardL2 int
	Verbose                      bool
	Engineer                     EngineerSpec
	EngineerURL                  string
	Engine                       engine.Flags
	Telemetry                    telemetry.Flags
	// Redis is --redis and its password (Redis.URL() has it).
	Redis store.Flags
	// Rollout is the rollout engine of an LLM policy (--rollout-*).
	Rollout RolloutFlags
}

// RolloutFlags are the --rollout-* flags: the inference engine an LLM
// policy's rollouts sample at, to which the learner pushes every version
// (rolloutengine).
type RolloutFlags struct {
	Engine, URL, Dir, Model string
	// APIKey is sent to the engine; "" takes $T2T_API_KEY
	// (rolloutengine.APIKeyEnv). t2t node sets its --api-key here.
	APIKey string
}

// Register binds f to fs.
func (f *Flags) Register(fs *flag.FlagSet) {
	d := DefaultOptions()
	o := &f.Opt
	f.RunSettings.Register(fs)
	fs.Uint64Var(&o.Seed, "seed", d.Seed, "run seed: instances, sampling and weight initialisation")
	fs.StringVar(&f.ConfigPath, "config", "", "stage-0 generator config JSON (default: the embedded local config, sizes 3..10)")
	fs.IntVar(&f.Instances, "instances", 0, "training instances per stage (0: the config's)")
	fs.StringVar(&f.Strategy, "strategy", engineer.NameLearnability, "engineer strategy: "+strings.Join(engineer.StrategyNames(), ", "))
	f.Redis.Register(fs, "Redis URL (redis://host:port/db); empty embeds an in-process Redis-protocol server")
	fs.StringVar(&f.WarmStart, "warmstart", "none", "gridnet warm start: none or bc (behaviour cloning from optimal plans)")
	fs.IntVar(&f.BCSteps, "bc-steps", 60, "warm start: behaviour-cloning steps of 64 instances")
	fs.StringVar(&o.RunID, "run-id", "", "run id in Redis (default run-<seed>)")
	fs.StringVar(&o.CheckpointDir, "checkpoint-dir", "", "write a checkpoint (gridnet, or qwen3 as a Hugging Face directory) after every stage into this folder")
	fs.BoolVar(&f.Verbose, "v", false, "log the actor runtime and every learner update (loss, reward, clip, KL, policy lag) to stderr")
	fs.BoolVar(&o.Deterministic, "deterministic", false, "deterministic run: one rollout, units in order, each sampling the weights of all earlier full batches;\n"+
		"the same flags give the same weights (--instances must be a multiple of --instances-per-unit and --learner-batch)")
	fs.BoolVar(&o.Resume, "resume", false, "continue --run-id after its latest checkpoint indexed in Redis (needs --redis and --checkpoint-dir,\n"+
		"and the interrupted run's other flags)")
	f.Telemetry.Register(fs)
	fs.IntVar(&f.GenSlots, "gen-slots", 0, "--policy qwen3: sequences sampled together by one continuous-batching scheduler that every rollout actor,\n"+
		"evaluation and the self/base engineer share (a KV pool of that many slots of 2048 + --max-new-tokens positions); 0: each generation alone")
	fs.IntVar(&f.LoRARank, "lora-rank", 0, "--policy qwen3: train LoRA adapters of this rank (α = 2·rank, all seven projections) with the base weights frozen; 0: all weights")
	dr := env.DefaultRewardConfig()
	fs.IntVar(&f.RewardL1, "reward-l1", dr.L1, "--policy qwen3: the length reward R_len is 0 up to this many completion tokens, then falls linearly")
	fs.IntVar(&f.RewardL2, "reward-l2", dr.L2, "--policy qwen3: … to −1 at this many tokens (the paper's L1 and L2 for a 4096-token budget)")
	f.registerRollout(fs)
	f.registerEngineer(fs)
	f.Engine.Register(fs)
	f.Engine.RegisterTraining(fs)
}

// registerRollout binds the --rollout-* flags.
func (f *Flags) registerRollout(fs *flag.FlagSet) {
	r := &f.Rollout
	fs.StringVar(&r.Engine, "rollout-engine", "", "--policy qwen3: sample every rollout at this inference engine, t2t (a t2t serve), vllm or sglang, and push each policy version to it\n"+
		"(with --lora-rank: a LoRA adapter, which vllm needs; sglang: a full checkpoint; t2t: either); default: none, rollouts sample in this process (or at t2t node --serve-addr)")
	fs.StringVar(&r.URL, "rollout-url", "", "--rollout-engine: the engine's URL, http://host:port or http://host:port/v1 (API key from $"+rolloutengine.APIKeyEnv+")")
	fs.StringVar(&r.Dir, "rollout-dir", "", "--rollout-engine: directory each policy version is written to (DIR/v<N>), read by the engine under the same path")
	fs.StringVar(&r.Model, "rollout-model", "", "--rollout-engine sglang, or t2t without --lora-rank: the model's name at the engine (sglang's --served-model-name or --model-path, t2t serve's --name)")
}

// registerEngineer binds the --strategy llm settings.
func (f *Flags) registerEngineer(fs *flag.FlagSet) {
	e := &f.Engineer
	fs.StringVar(&e.Target, "engineer", "", "--strategy llm: who writes the next config: self (the policy being trained, the default for --policy qwen3),\n"+
		"base (a frozen copy of --model), or an OpenAI-compatible base URL (e.g. http://127.0.0.1:8000/v1; API key from $T2T_ENGINEER_API_KEY)")
	fs.StringVar(&f.EngineerURL, "engineer-url", "", "--strategy llm: alias of --engineer URL")
	fs.StringVar(&e.Model, "engineer-model", "", "--strategy llm: model name at the --engineer URL")
	fs.BoolVar(&e.Thinking, "engineer-thinking", false, "--strategy llm with self or base: let the engineer think (<think>…</think>) before its JSON")
	fs.StringVar(&e.Modules, "engineer-modules", engineer.DefaultModules, "--strategy llm: context modules (F failures, G guidelines, H history, H0 history without round 0, S own summaries, T bookkeeping)")
}

// Logger is the runtime logger the flags ask for (-v: text on stderr).
func (f *Flags) Logger(stderr io.Writer) *slog.Logger {
	if f.Verbose {
		return slog.New(slog.NewTextHandler(stderr, nil))
	}
	return slog.New(slog.DiscardHandler)
}

// Setup is what the flags build.
type Setup struct {
	Config   env.Config
	Policy   Policy
	Strategy engineer.Strategy
	Logger   *slog.Logger
	// RolloutEngine is the pusher of --rollout-engine (nil: none).
	RolloutEngine *rolloutengine.Pusher
	close         func() error
}

// Close releases the policy's model (a torch worker) and a base engineer's.
func (s *Setup) Close() error {
	if s.close == nil {
		return nil
	}
	return s.close()
}

// Options are the run options of the flags and s, writing to out
// (Rollouts and Tracer are the caller's).
func (f *Flags) Options(s *Setup, out io.Writer) Options {
	o := f.Opt
	f.RunSettings.applyTo(&o)
	o.Config, o.Strategy, o.Out, o.Logger = s.Config, s.Strategy, out, s.Logger
	o.RolloutEngine = s.RolloutEngine
	return o
}

// Build checks the flags and builds the stage-0 config (ConfigPath, or the
// embedded local config), the policy (warm-started as asked) and the
// engineer. Bad flags are *fielderr.Error (fielderr.Error.Usage words them);
// opening a model fails as EngineError says.
func (f *Flags) Build(ctx context.Context, logger *slog.Logger, out io.Writer) (*Setup, error) {
	cfg, err := f.config()
	if err != nil {
		return nil, err
	}
	if f.Opt.Resume && (f.Redis.URL() == "" || f.Opt.CheckpointDir == "") {
		return nil, &fielderr.Error{Kind: ErrOptions, Reason: "--resume needs --redis (the Redis of the interrupted run; an embedded one starts empty) and --checkpoint-dir"}
	}
	// The flags' values as given: Run's defaults would turn a 0 into the
	// default silently (--stages 0, --learner-batch 0).
	chk, d := f.Opt, DefaultOptions()
	f.RunSettings.applyTo(&chk)
	chk.Config, chk.Rollouts, chk.MaxInFlight = cfg, d.Rollouts, d.MaxInFlight
	if err := chk.Validate(); err != nil {
		return nil, err
	}
	spec, err := f.policySpec(cfg, logger, out)
	if err != nil {
		return nil, err
	}
	push, err := f.rolloutEngine(logger)
	if err != nil {
		return nil, err
	}
	pol, closePol, err := NewPolicy(ctx, spec)
	if err != nil {
		return nil, err
	}
	strat, closeEng, err := f.engineer(ctx, &cfg, logger, pol)
	if err != nil {
		_ = closePol()
		return nil, err
	}
	return &Setup{Config: cfg, Policy: pol, Strategy: strat, Logger: logger, RolloutEngine: push, close: func() error {
		return errors.Join(closeEng(), closePol())
	}}, nil
}

// rolloutFlag is the flag of each rolloutengine.Config field.
var rolloutFlag = map[string]string{"Kind": "rollout-engine", "URL": "rollout-url", "Dir": "rollout-dir", "Model": "rollout-model"}

// rolloutEngine is the pusher of the --rollout-* flags (nil without
// --rollout-engine). Bad flags are *fielderr.Error.
func (f *Flags) rolloutEngine(logger *slog.Logger) (*rolloutengine.Pusher, error) {
	r := f.Rollout
	if r.Engine == "" {
		if r.URL != "" || r.Dir != "" || r.Model != "" {
			return nil, &fielderr.Error{Kind: ErrOptions, Flag: "rollout-engine", Reason: "needed by --rollout-url, --rollout-dir and --rollout-model: want " + strings.Join(rolloutengine.Kinds, ", ")}
		}
		return nil, nil
	}
	if !IsLLM(f.Policy) {
		return nil, needsLLM("rollout-engine", r.Engine, "pushes an LLM policy")
	}
	kind := strings.ToLower(strings.TrimSpace(r.Engine))
	cfg := rolloutengine.Config{Kind: kind, URL: r.URL, Dir: r.Dir, Model: r.Model, APIKey: cmp.Or(r.APIKey, os.Getenv(rolloutengine.APIKeyEnv)),
		Adapters: f.LoRARank > 0 && kind != rolloutengine.SGLang}
	p, err := rolloutengine.New(cfg, logger)
	var ce *fielderr.Error
	switch {
	case err == nil:
		return p, nil
	case errors.As(err, &ce) && ce.Field == "Adapters":
		return nil, &fielderr.Error{Kind: ErrOptions, Flag: "rollout-engine", Value: r.Engine, Reason: "needs --lora-rank R > 0: " + ce.Reason, Err: err}
	case errors.As(err, &ce) && rolloutFlag[ce.Field] != "":
		return nil, &fielderr.Error{Kind: ErrOptions, Flag: rolloutFlag[ce.Field], Value: ce.Value, Reason: ce.Reason, Err: err}
	}
	return nil, causeError("", err)
}

// config reads the stage-0 config.
func (f *Flags) config() (env.Config, error) {
	cfg, err := ReadConfig(f.ConfigPath)
	if err != nil {
		return cfg, err
	}
	if f.Instances > 0 {
		cfg.Instances = f.Instances
	}
	return cfg, nil
}

// ReadConfig reads a generator config file; "" is the embedded local
// config. A file that does not read or parse is a *fielderr.Error about
// "config".
func ReadConfig(path string) (env.Config, error) {
	if path == "" {
		return env.DefaultLocalConfig(), nil
	}
	b, err := limits.ReadFile(path, limits.Config)
	if err != nil {
		return env.Config{}, &fielderr.Error{Kind: ErrOptions, Flag: "config", Reason: err.Error(), Err: err}
	}
	c, err := env.ParseConfig(b)
	if err != nil {
		return env.Config{}, &fielderr.Error{Kind: ErrOptions, Flag: "config", Reason: fmt.Sprintf("%s: %v", path, err), Err: err}
	}
	return c, nil
}

// policySpec is the policy the flags ask for.
func (f *Flags) policySpec(cfg env.Config, logger *slog.Logger, out io.Writer) (PolicySpec, error) {
	if err := CheckPolicyKind(f.Policy); err != nil {
		return PolicySpec{}, err
	}
	if f.WarmStart != "none" && f.WarmStart != "bc" {
		return PolicySpec{}, &fielderr.Error{Kind: ErrOptions, Flag: "warmstart", Value: strconv.Quote(f.WarmStart), Reason: "want none or bc"}
	}
	spec, err := f.RunSettings.PolicySpec(f.Opt.Seed)
	if err != nil {
		return spec, err
	}
	if fill := policyKinds[f.Policy].fromFlags; fill != nil {
		if err := fill(f, &spec, cfg, logger, out); err != nil {
			return spec, err
		}
	}
	if IsLLM(f.Policy) {
		return spec, nil
	}
	switch {
	case f.LoRARank != 0:
		return spec, needsLLM("lora-rank", f.LoRARank, "trains an LLM policy's adapters")
	case f.Engine.Devices != "":
		return spec, needsLLM("devices", f.Engine.Devices, "runs an LLM policy's torch ranks (with --engine torch)")
	case f.Engine.ActivationCheckpointing:
		return spec, needsLLM("activation-checkpointing", true, "checkpoints an LLM's decoder layers (with --engine torch)")
	case f.RewardPartial != 0:
		return spec, needsLLM("reward-partial", f.RewardPartial, "gives an LLM policy's invalid plans partial credit")
	}
	return spec, nil
}

// gridSpecFromFlags fills a gridnet's part of spec: --hidden and the
// warm start.
func gridSpecFromFlags(f *Flags, spec *PolicySpec, cfg env.Config, _ *slog.Logger, out io.Writer) error {
	widths, err := ParseWidths(f.Hidden)
	if err != nil {
		return &fielderr.Error{Kind: ErrOptions, Flag: "hidden", Reason: err.Error()}
	}
	spec.Hidden = widths
	if f.WarmStart == "bc" && !f.Opt.Resume { // a resumed run loads its checkpoint
		spec.WarmStart = &WarmStart{Steps: f.BCSteps, Config: cfg, Out: out}
	}
	return nil
}

// lmSpecFromFlags fills an LLM policy's part of spec: the engine, the
// prompt, the answer length, the reward's length schedule, the scheduler
// and LoRA.
func lmSpecFromFlags(f *Flags, spec *PolicySpec, _ env.Config, logger *slog.Logger, _ io.Writer) error {
	var err error
	if spec.Engine, err = f.Engine.Spec(f.Device, func(line string) { logger.Info("torch worker", "line", line) }); err != nil {
		return causeError("", err)
	}
	if f.GenSlots < 0 {
		return &fielderr.Error{Kind: ErrOptions, Flag: "gen-slots", Value: f.GenSlots, Reason: "must be ≥ 0"}
	}
	spec.GenSlots = f.GenSlots
	if f.RewardL1 < 0 || f.RewardL2 <= f.RewardL1 {
		return &fielderr.Error{Kind: ErrOptions, Flag: "reward-l2", Value: f.RewardL2, Reason: fmt.Sprintf("must exceed --reward-l1 (%d), which must be ≥ 0", f.RewardL1)}
	}
	spec.Text.Reward.L1, spec.Text.Reward.L2 = f.RewardL1, f.RewardL2 // Partial: RunSettings.PolicySpec
	switch {
	case f.LoRARank < 0:
		return &fielderr.Error{Kind: ErrOptions, Flag: "lora-rank", Value: f.LoRARank, Reason: "must be ≥ 0"}
	case f.LoRARank > 0 && f.Opt.Resume:
		return &fielderr.Error{Kind: ErrOptions, Flag: "lora-rank", Value: f.LoRARank, Reason: "cannot --resume: a checkpoint holds the merged weights, not the adapters"}
	case f.LoRARank > 0:
		spec.LoRA = &hfmodel.LoRAConfig{Rank: f.LoRARank, Alpha: float64(2 * f.LoRARank), Targets: slices.Clone(hfmodel.LoRATargets)}
	}
	return nil
}

// engineer builds the engineer strategy of the flags.
func (f *Flags) engineer(ctx context.Context, cfg *env.Config, logger *slog.Logger, pol Policy) (engineer.Strategy, func() error, error) {
	spec := f.Engineer
	spec.Strategy, spec.Seed, spec.BaseModel, spec.Logger = f.Strategy, f.Opt.Seed, f.Model, logger
	spec.MaxTokens, spec.Retries, spec.Temperature, spec.Prompt = f.EngineerMaxTokens, f.EngineerRetries, f.EngineerTemperature, f.EngineerPrompt
	spec.Retry, spec.RetryTemperature = f.EngineerRetry, f.EngineerRetryTemperature
	spec.APIKey = os.Getenv("T2T_ENGINEER_API_KEY")
	if spec.Target == "" {
		spec.Target = f.EngineerURL
	}
	if f.Strategy == engineer.NameLLM && spec.Target == EngineerBase {
		var err error
		if spec.Engine, err = f.Engine.Spec(f.Device, func(line string) { logger.Info("torch worker (base engineer)", "line", line) }); err != nil {
			return nil, nil, causeError("", err)
		}
		spec.Engine = spec.Engine.Single() // the base engineer only samples: one worker

	}
	return NewEngineer(ctx, spec, cfg, pol)
}

// ParseWidths parses comma-separated layer widths, each in [1,4096].
func ParseWidths(s string) ([]int, error) {
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
