package experiment

import (
	"flag"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

// Register binds the settings of o that a command line sets as they are,
// with train's defaults (the arms, seeds, config and the engine's Spec are
// the command's).
func (o *Options) Register(fs *flag.FlagSet) {
	d := train.DefaultOptions()
	fs.IntVar(&o.Stages, "stages", d.Stages, "training stages per run")
	fs.IntVar((*int)(&o.Epochs), "epochs", d.Epochs, "passes over each stage's instances (the paper: 2), each with its own sampling seeds")
	fs.IntVar(&o.EvalPerSize, "eval-per-size", d.EvalPerSize, "benchmark suite: instances per (agents, size, wait subset) for 3/4/5 agents")
	fs.IntVar(&o.ValPerSize, "val-per-size", d.ValPerSize, "validation set: instances per map size (2 agents)")
	fs.Uint64Var((*uint64)(&o.SuiteSeed), "suite-seed", DefaultSuiteSeed, "seed of the validation set and the benchmark suite (another value gives a held-out pair for developing strategies)")
	fs.StringVar(&o.Policy, "policy", train.PolicyGridNet, train.PolicyHelp())
	fs.Float64Var(&o.MistakeRate, "mistake-rate", 0.05, "scripted policy: chance per agent and step of a random move")
	fs.StringVar(&o.Hidden, "hidden", "128,128", "gridnet hidden layer widths")
	fs.Float64Var(&o.LR, "lr", 0, "learning rate (AdamW; 0: the policy's default, gridnet 1e-3, qwen3 1e-6)")
	fs.IntVar(&o.GroupSize, "group", d.GroupSize, "GRPO group size: episodes per instance")
	fs.IntVar(&o.LearnerBatch, "learner-batch", d.LearnerBatch, "groups per policy update")
	fs.IntVar(&o.Rollouts, "rollouts", d.Rollouts, "rollout actors per run")
	fs.IntVar(&o.InstancesPerUnit, "instances-per-unit", d.InstancesPerUnit, "instances per work unit")
	fs.StringVar(&o.Device, "device", "cpu", train.DeviceHelp)
	fs.StringVar(&o.LLMURL, "llm-url", "", "llm strategy: OpenAI-compatible API root, e.g. http://localhost:8000/v1")
	fs.StringVar(&o.LLMModel, "llm-model", "", "llm strategy: model name")
	fs.StringVar(&o.Baseline, "baseline", engineer.NameFixed, "strategy the others are compared with, paired by seed ('' for none)")
	fs.StringVar(&o.Title, "title", "Engineer strategies on MAPF-FrozenLake", "report title")
	fs.StringVar(&o.Dir, "out", "", "output folder: experiment.html/.md/.csv/.json, summary.csv, runs/*.json")
	fs.BoolVar(&o.Resume, "resume", true, "reuse finished runs saved under OUT/runs with the same settings")
	l := &o.LLM
	fs.StringVar(&l.Model, "model", "", "--policy qwen3: the starting Hugging Face checkpoint (also the base engineer's)")
	fs.IntVar(&l.MaxNewTokens, "max-new-tokens", 512, "--policy qwen3: most tokens per answer")
	fs.StringVar(&l.Prompt, "prompt", env.PromptFull, "--policy qwen3: "+env.PromptStyleHelp)
	fs.BoolVar(&l.Thinking, "thinking", false, "--policy qwen3: let the model think before answering")
	fs.IntVar(&l.EngineerMaxTokens, "engineer-max-tokens", 1024, "arms self and base: most tokens per engineer answer")
	fs.Float64Var(&l.EngineerTemperature, "engineer-temperature", 0.6, "arms self and base: engineer sampling temperature (0: greedy)")
	fs.IntVar(&l.EngineerRetries, "engineer-retries", 3, "arms self and base: further attempts after a rejected answer")
	fs.StringVar(&l.EngineerPrompt, "engineer-prompt", engineer.PromptFull, "arms self and base: engineer prompt style, full or compact (for a checkpoint fine-tuned with t2t sft --engineer-turns)")
}
