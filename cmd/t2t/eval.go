package main

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/progress"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// evalFlags are t2t eval's flags.
type evalFlags struct {
	pol       train.EvalPolicy
	suite     *string
	perSize   *int
	suiteSeed *uint64
}

// addEvalFlags registers the flags, the run's straight into o.
func addEvalFlags(fs *flag.FlagSet, o *evaluate.Options) *evalFlags {
	fs.Uint64Var(&o.Play.Seed, "seed", 1, "scripted policy: seed of the injected mistakes (each instance draws from seed and its id)")
	fs.StringVar(&o.Dir, "out", "", "output folder: answers.jsonl (resumable cache: each answer's outcome and parsed plan), eval.md/.csv/.json/.html, size.svg, failures.svg")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines playing instances (0: one per CPU)")
	f := &evalFlags{}
	p := &f.pol
	fs.StringVar(&p.Kind, "policy", "gridnet", "policy: gridnet (needs --checkpoint), endpoint (an OpenAI-compatible server as a direct solver: --policy-url, --policy-model),\n"+
		"scripted (optimal plans with injected mistakes) or rows-first (each agent to its goal's row, then its column, blind to holes and\n"+
		"the other agents: the baseline whose failure categories a model's are set beside)")
	fs.StringVar(&p.URL, "policy-url", "", "--policy endpoint: base URL, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, Ollama, t2t serve, a hosted API); API key from $OPENAI_API_KEY")
	fs.StringVar(&p.Model, "policy-model", "", "--policy endpoint: model name")
	fs.IntVar(&p.MaxTokens, "max-tokens", 4096, "--policy endpoint: most tokens per answer")
	fs.StringVar(&p.Prompt, "prompt", "", "--policy endpoint: prompt style, full, compact, cells, steps or grid (those of t2t train and t2t sft: evaluate a served checkpoint\n"+
		"on the style it was trained on); default: a plain prompt, the map and the rules without coordinates")
	fs.StringVar(&p.Checkpoint, "checkpoint", "", "gridnet checkpoint folder (as written by t2t train --checkpoint-dir)")
	fs.Float64Var(&p.MistakeRate, "mistake-rate", train.DefaultMistakeRate, "scripted policy: chance per agent and step of a random move")
	f.suite = fs.String("suite", env.SuiteEval, "suite: eval, val, quick, or a JSONL file (its NAME.manifest.json, when present, gives the wait-ratio subsets)")
	f.perSize = fs.Int("per-size", 0, "instances per size per subset of a named suite (0: the suite's default)")
	f.suiteSeed = fs.Uint64("suite-seed", 2026, "seed of a named suite")
	fs.StringVar(&p.Device, "device", "cpu", "gridnet compute device: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds)")
	return f
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t eval", "t2t eval --policy gridnet --checkpoint DIR | --policy endpoint --policy-url URL --policy-model M [--prompt full|compact|cells|steps|grid] | --policy scripted | --policy rows-first [--suite eval|val|quick|FILE.jsonl] [--per-size N] --out DIR", stderr)
	var opt evaluate.Options
	f := addEvalFlags(fs, &opt)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := inRange("workers", opt.Workers, 0, 1024); err != nil {
		return err
	}
	if opt.Dir == "" {
		return badInput("--out is required")
	}
	if *f.perSize < 0 || *f.perSize > 10000 {
		return badInput("--per-size %d out of range [0,10000]", *f.perSize)
	}
	if err := f.pol.SetPlayer(&opt); err != nil {
		return err
	}
	var err error
	if opt.Suite, err = evaluate.LoadSuite(*f.suite, *f.suiteSeed, *f.perSize, opt.Workers, progress.To(stderr)); err != nil {
		return err
	}
	opt.Progress = progress.To(stderr)
	opt.Hooks.Started = func(lines, cached, todo int) {
		fmt.Fprintf(stderr, "eval %s on %s: %d instances, %d cached answers, %d to play\n", opt.PolicyID, opt.Suite.Name, lines, cached, todo)
	}
	e, err := evaluate.Run(context.Background(), opt)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\nwrote %s/{eval.md,eval.csv,eval.json,eval.html,size.svg,failures.svg}\n", report.EvalMarkdown(e), opt.Dir)
	return err
}
