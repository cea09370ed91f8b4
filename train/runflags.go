package train

import (
	"flag"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
)

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

// RunFlags point at the settings of a run that every command starting
// runs takes — t2t train and t2t node (Flags.Register) and t2t experiment
// (experiment.Options.Register) — so that each of these flags' name,
// default and help is written once, here. Every pointer must be set.
type RunFlags struct {
	Stages, Epochs, GroupSize, LearnerBatch, InstancesPerUnit, ValPerSize, EvalPerSize *int
	// Policy, MistakeRate, Hidden, LR and Device describe the policy (PolicySpec).
	Policy, Hidden, Device *string
	MistakeRate, LR        *float64
	// Model, MaxNewTokens, Prompt and Thinking describe an LLM policy.
	Model, Prompt *string
	MaxNewTokens  *int
	Thinking      *bool
	// The engineer LLM's (--strategy llm, and experiment's self and base
	// arms) answer length, temperature, retries and prompt style.
	EngineerMaxTokens, EngineerRetries *int
	EngineerTemperature                *float64
	EngineerPrompt                     *string
}

// Register binds the flags to fs with their defaults.
func (p RunFlags) Register(fs *flag.FlagSet) {
	d := DefaultOptions()
	fs.IntVar(p.Stages, "stages", d.Stages, "training stages (per run)")
	fs.IntVar(p.Epochs, "epochs", d.Epochs, "passes over each stage's instances (the paper: 2), each with its own sampling seeds")
	fs.IntVar(p.GroupSize, "group", d.GroupSize, "GRPO group size: episodes per instance")
	fs.IntVar(p.LearnerBatch, "learner-batch", d.LearnerBatch, "groups per policy update")
	fs.IntVar(p.InstancesPerUnit, "instances-per-unit", d.InstancesPerUnit, "instances per work unit")
	fs.IntVar(p.ValPerSize, "val-per-size", d.ValPerSize, "validation set: instances per map size (2 agents, sizes 3..10)")
	fs.IntVar(p.EvalPerSize, "eval-per-size", d.EvalPerSize, "benchmark suite: instances per (agents, size, wait subset) for 3/4/5 agents")
	fs.StringVar(p.Policy, "policy", PolicyGridNet, PolicyHelp())
	fs.Float64Var(p.MistakeRate, "mistake-rate", DefaultMistakeRate, "scripted policy: chance per agent and step of a random move")
	fs.StringVar(p.Hidden, "hidden", DefaultHidden, "gridnet hidden layer widths")
	fs.Float64Var(p.LR, "lr", 0, "learning rate (AdamW; 0: the policy's default, gridnet 1e-3, qwen3 1e-6)")
	fs.StringVar(p.Device, "device", "cpu", DeviceHelp)
	fs.StringVar(p.Model, "model", "", "--policy qwen3: the starting Hugging Face checkpoint directory (from 't2t model init' or a real Qwen3; also a base engineer's)")
	fs.IntVar(p.MaxNewTokens, "max-new-tokens", DefaultMaxNewTokens, "--policy qwen3: most tokens per answer")
	fs.StringVar(p.Prompt, "prompt", env.PromptFull, "--policy qwen3: "+env.PromptStyleHelp)
	fs.BoolVar(p.Thinking, "thinking", false, "--policy qwen3: let the model think (<think>…</think>) before answering")
	fs.IntVar(p.EngineerMaxTokens, "engineer-max-tokens", engineer.DefaultMaxTokens, "engineer LLM (--strategy llm, arms self and base): most tokens per answer")
	fs.Float64Var(p.EngineerTemperature, "engineer-temperature", engineer.DefaultTemperature, "engineer LLM: sampling temperature (0: greedy)")
	fs.IntVar(p.EngineerRetries, "engineer-retries", engineer.DefaultRetries, "engineer LLM: further attempts after a rejected answer or a failed call, each told why the last was rejected")
	fs.StringVar(p.EngineerPrompt, "engineer-prompt", engineer.PromptFull, "engineer LLM: prompt style, full (the paper's modules in prose and tables, ~2k tokens) or compact\n"+
		"(the same modules in a few lines, for small models fine-tuned on engineer turns: t2t sft --engineer-turns)")
}
