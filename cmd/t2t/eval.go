package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/progress"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// evalFlags are t2t eval's flags.
type evalFlags struct {
	policy, policyURL, policyModel, ckpt, suite, device *string
	maxTokens, perSize                                  *int
	mistake                                             *float64
	suiteSeed                                           *uint64
}

// addEvalFlags registers the flags, the run's straight into o.
func addEvalFlags(fs *flag.FlagSet, o *evaluate.Options) *evalFlags {
	fs.Uint64Var(&o.Play.Seed, "seed", 1, "scripted policy: seed of the injected mistakes (each instance draws from seed and its id)")
	fs.StringVar(&o.Dir, "out", "", "output folder: answers.jsonl (resumable cache), eval.md/.csv/.json/.html, size.svg, failures.svg")
	fs.IntVar(&o.Workers, "workers", 0, "goroutines playing instances (0: one per CPU)")
	return &evalFlags{
		policy:      fs.String("policy", "gridnet", "policy: gridnet (needs --checkpoint), endpoint (an OpenAI-compatible server as a direct solver: --policy-url, --policy-model) or scripted (optimal plans with injected mistakes)"),
		policyURL:   fs.String("policy-url", "", "--policy endpoint: base URL, e.g. http://127.0.0.1:8000/v1 (vLLM, SGLang, Ollama, t2t serve, a hosted API); API key from $OPENAI_API_KEY"),
		policyModel: fs.String("policy-model", "", "--policy endpoint: model name"),
		maxTokens:   fs.Int("max-tokens", 4096, "--policy endpoint: most tokens per answer"),
		ckpt:        fs.String("checkpoint", "", "gridnet checkpoint folder (as written by t2t train --checkpoint-dir)"),
		mistake:     fs.Float64("mistake-rate", train.DefaultMistakeRate, "scripted policy: chance per agent and step of a random move"),
		suite:       fs.String("suite", env.SuiteEval, "suite: eval, val, quick, or a JSONL file (its NAME.manifest.json, when present, gives the wait-ratio subsets)"),
		perSize:     fs.Int("per-size", 0, "instances per size per subset of a named suite (0: the suite's default)"),
		suiteSeed:   fs.Uint64("suite-seed", 2026, "seed of a named suite"),
		device:      fs.String("device", "cpu", "gridnet compute device: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds)"),
	}
}

func runEval(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t eval", "t2t eval --policy gridnet --checkpoint DIR | --policy endpoint --policy-url URL --policy-model M | --policy scripted [--suite eval|val|quick|FILE.jsonl] [--per-size N] --out DIR", stderr)
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
	if err := f.buildPolicy(&opt); err != nil {
		return err
	}
	var err error
	if opt.Suite, err = f.loadSuite(opt.Workers, stderr); err != nil {
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

// buildPolicy builds the policy and names it. The scripted policy plays each
// instance alone with its own seed.
func (f *evalFlags) buildPolicy(opt *evaluate.Options) error {
	switch *f.policy {
	case "gridnet":
		if *f.ckpt == "" {
			return badInput("--policy gridnet needs --checkpoint DIR")
		}
		gp, id, err := train.LoadGridPolicy(*f.ckpt, *f.device)
		if err != nil {
			return err
		}
		opt.Player, opt.PolicyID = gp, id
	case "scripted":
		if *f.mistake < 0 || *f.mistake > 1 {
			return badInput("--mistake-rate %v out of range [0,1]", *f.mistake)
		}
		opt.Player = &train.ScriptedPolicy{MistakeRate: *f.mistake}
		opt.PolicyID = fmt.Sprintf("scripted(mistake=%g,seed=%d)", *f.mistake, opt.Play.Seed)
		opt.Play.PerInstance = true
	case "endpoint":
		if *f.policyURL == "" || *f.policyModel == "" {
			return badInput("--policy endpoint needs --policy-url and --policy-model")
		}
		c, err := textpolicy.NewClient(textpolicy.ClientOptions{BaseURL: *f.policyURL, Model: *f.policyModel, MaxTokens: *f.maxTokens})
		if err != nil {
			return badInput("%v", err)
		}
		opt.Player, opt.PolicyID = c, fmt.Sprintf("endpoint(%s,%s)", *f.policyURL, *f.policyModel)
	default:
		return badInput("--policy %q: want gridnet, endpoint or scripted", *f.policy)
	}
	return nil
}

// loadSuite generates a named suite or reads a JSONL file.
func (f *evalFlags) loadSuite(workers int, stderr io.Writer) (*evaluate.Suite, error) {
	if strings.HasSuffix(*f.suite, ".jsonl") {
		return evaluate.FileSuite(*f.suite, env.ReadOptions{})
	}
	spec, err := env.SuiteSized(*f.suite, *f.suiteSeed, *f.perSize)
	if err != nil {
		return nil, badInput("--suite: %v", err)
	}
	return evaluate.GenerateSuite(&spec, workers, progress.To(stderr))
}
