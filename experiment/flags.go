package experiment

import (
	"flag"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/train"
)

// Register binds the settings of o that a command line sets as they are,
// with train's defaults (the arms, seeds, config and the engine's Spec are
// the command's).
func (o *Options) Register(fs *flag.FlagSet) {
	o.RunSettings.Register(fs)
	fs.IntVar(&o.Rollouts, "rollouts", train.DefaultOptions().Rollouts, "rollout actors per run")
	fs.Uint64Var((*uint64)(&o.SuiteSeed), "suite-seed", DefaultSuiteSeed, "seed of the validation set and the benchmark suite (another value gives a held-out pair for developing strategies)")
	fs.StringVar(&o.LLMURL, "llm-url", "", "llm strategy: OpenAI-compatible API root, e.g. http://localhost:8000/v1")
	fs.StringVar(&o.LLMModel, "llm-model", "", "llm strategy: model name")
	fs.StringVar(&o.Baseline, "baseline", engineer.NameFixed, "strategy the others are compared with, paired by seed ('' for none)")
	fs.StringVar(&o.Title, "title", "Engineer strategies on MAPF-FrozenLake", "report title")
	fs.StringVar(&o.Dir, "out", "", "output folder: experiment.html/.md/.csv/.json, summary.csv, runs/*.json")
	fs.BoolVar(&o.Resume, "resume", true, "reuse finished runs saved under OUT/runs with the same settings")
}
