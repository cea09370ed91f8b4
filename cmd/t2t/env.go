package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"

	"github.com/t2t-lab/t2t/env"
)

func runEnv(args []string, stdout, stderr io.Writer) error {
	return subcommands("env", []command{
		{"gen", "generate instances from a config and a seed (JSONL)", envGen},
		{"solve", "add optimal costs, needs_wait and an optimal plan to instances", envSolve},
		{"check", "verify a plan for an instance: checks, costs, reward (JSON)", envCheck},
		{"show", "draw an instance and optionally a plan (ascii, svg, png)", envShow},
		{"suite", "write the benchmark suites (eval, val, quick) with content hashes", envSuite},
		{"prompt", "print the LLM prompt for an instance", envPrompt},
	}, args, stdout, stderr)
}

// instanceFlags select one instance of a JSONL file: by id, or by line.
type instanceFlags struct {
	path, id *string
	line     *int
}

func addInstanceFlags(fs *flag.FlagSet, fileFlag string) instanceFlags {
	return instanceFlags{
		path: fs.String(fileFlag, "", "JSONL file holding the instance"),
		id:   fs.String("id", "", "instance id (default: --line)"),
		line: fs.Int("line", 1, "1-based line of the instance in the file"),
	}
}

// pick reads the selected instance; the file flag is required.
func (f instanceFlags) pick(fileFlag string) (*env.Instance, error) {
	if *f.path == "" {
		return nil, badInput("--%s is required", fileFlag)
	}
	return pickInstance(*f.path, *f.id, *f.line)
}

// loadConfig reads a generator config file, or returns the local default.
func loadConfig(path string) (env.Config, error) {
	if path == "" {
		return env.DefaultLocalConfig(), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return env.Config{}, badInput("%v", err)
	}
	c, err := env.ParseConfig(b)
	if err != nil {
		return env.Config{}, badInput("%s: %v", path, err)
	}
	return c, nil
}

// parallelRange runs fn over [0,n) split into chunks on workers goroutines
// and reports progress on w. fn must fill its own part of the output.
func parallelRange(n, workers int, label string, w io.Writer, fn func(lo, hi int) error) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	const chunk = 16
	var (
		mu   sync.Mutex
		next int
		done int
		err  error
		wg   sync.WaitGroup
	)
	p := newProgress(w, label, n)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				mu.Lock()
				if err != nil || next >= n {
					mu.Unlock()
					return
				}
				lo := next
				hi := min(n, lo+chunk)
				next = hi
				mu.Unlock()
				e := fn(lo, hi)
				mu.Lock()
				if e != nil && err == nil {
					err = e
				}
				done += hi - lo
				p.set(done)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	p.finish()
	return err
}

func envGen(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env gen", "t2t env gen [--config FILE] [--seed N] [--n N] [--out FILE]", stderr)
	cfgPath := fs.String("config", "", "generator config JSON (default: the embedded local config)")
	seed := fs.Uint64("seed", 1, "stage seed: the same config and seed give the same instances everywhere")
	n := fs.Int("n", -1, "number of instances (default: the config's instances)")
	out := fs.String("out", "-", "output JSONL file (- for stdout)")
	workers := fs.Int("workers", 0, "generator goroutines (0: one per CPU)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	cfg, err := loadConfig(*cfgPath)
	if err != nil {
		return err
	}
	if *n >= 0 {
		cfg.Instances = *n
	}
	if err := cfg.Validate(); err != nil {
		return badInput("config: %v", err)
	}
	if err := env.CheckFeasible(cfg); err != nil {
		return badInput("config: %v", err)
	}
	ins := make([]*env.Instance, cfg.Instances)
	err = parallelRange(cfg.Instances, *workers, "generating", stderr, func(lo, hi int) error {
		part, err := env.Generate(cfg, *seed, lo, hi)
		copy(ins[lo:hi], part)
		return err
	})
	if err != nil {
		return err
	}
	b, err := jsonl(ins)
	if err != nil {
		return err
	}
	return writeOut(*out, stdout, b)
}

func envSolve(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env solve", "t2t env solve --in FILE.jsonl [--out FILE]", stderr)
	in := fs.String("in", "", "input JSONL of instances (- for stdin)")
	out := fs.String("out", "-", "output JSONL file (- for stdout)")
	maxNodes := fs.Int("max-nodes", 0, "CBS node budget per solve (0: default)")
	workers := fs.Int("workers", 0, "solver goroutines (0: one per CPU)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return badInput("--in is required")
	}
	ins, err := readInstances(*in)
	if err != nil {
		return err
	}
	opt := env.SolveOptions{MaxNodes: *maxNodes}
	err = parallelRange(len(ins), *workers, "solving", stderr, func(lo, hi int) error {
		for i := lo; i < hi; i++ {
			if err := env.Annotate(ins[i], opt); err != nil {
				return fmt.Errorf("%s: instance %d (id %s): %w", *in, i+1, ins[i].ID, err)
			}
			sol, err := env.Solve(ins[i], opt)
			if err != nil {
				return fmt.Errorf("%s: instance %d (id %s): %w", *in, i+1, ins[i].ID, err)
			}
			ins[i].Paths = sol.Plan.Paths
		}
		return nil
	})
	if err != nil {
		return err
	}
	b, err := jsonl(ins)
	if err != nil {
		return err
	}
	return writeOut(*out, stdout, b)
}

// checkResult is the JSON that "t2t env check" prints.
type checkResult struct {
	InstanceID string          `json:"instance_id"`
	Valid      bool            `json:"valid"`
	Optimal    bool            `json:"optimal"`
	Checks     map[string]bool `json:"checks"`
	Failures   []failureJSON   `json:"failures"`
	Truncated  int             `json:"failures_truncated,omitempty"`
	SOC        int             `json:"soc"`
	Makespan   int             `json:"makespan"`
	OptSOC     int             `json:"optimal_soc"`
	OptMake    int             `json:"optimal_makespan"`
	GapSOC     int             `json:"gap_soc"`
	GapMake    int             `json:"gap_makespan"`
	RAcc       float64         `json:"r_acc"`
	RLen       float64         `json:"r_len"`
	Reward     float64         `json:"reward"`
}

type failureJSON struct {
	Check string  `json:"check"`
	Kind  string  `json:"kind"`
	Agent int     `json:"agent"`
	Other int     `json:"other,omitempty"`
	T     int     `json:"t"`
	Cell  env.Pos `json:"cell"`
}

func envCheck(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env check", "t2t env check --instance FILE.jsonl [--id ID | --line N] --plan FILE", stderr)
	sel := addInstanceFlags(fs, "instance")
	planPath := fs.String("plan", "", "answer file: text moves or JSON paths (- for stdin)")
	tokens := fs.Int("tokens", 0, "response length in tokens, for the length reward")
	objective := fs.String("objective", "soc", "cost objective for optimality and reward: soc or makespan")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *planPath == "" {
		return badInput("--plan is required")
	}
	obj, err := env.ParseObjective(*objective)
	if err != nil {
		return badInput("--objective: %v", err)
	}
	in, err := sel.pick("instance")
	if err != nil {
		return err
	}
	if !in.Solved() {
		if err := env.Annotate(in, env.SolveOptions{}); err != nil {
			return fmt.Errorf("solving instance %s: %w", in.ID, err)
		}
	}
	r, err := openIn(*planPath)
	if err != nil {
		return err
	}
	answer, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return err
	}
	var rep env.Report
	env.VerifyAnswer(in, string(answer), &rep)
	rc := env.DefaultRewardConfig()
	rc.Objective = obj
	var sched env.LengthSchedule
	res := checkResult{
		InstanceID: in.ID, Valid: rep.Valid, Optimal: rep.OptimalFor(in, obj), Checks: map[string]bool{},
		Truncated: rep.Truncated, SOC: rep.SOC, Makespan: rep.Makespan, OptSOC: in.SOC, OptMake: in.Makespan,
		GapSOC: rep.GapSOC, GapMake: rep.GapMakespan,
		RAcc: env.AccuracyReward(in, &rep, obj), RLen: env.LengthReward(*tokens, rc),
		Reward: env.Reward(in, &rep, *tokens, rc, &sched), Failures: []failureJSON{},
	}
	for c := env.Check(0); c < env.NumChecks; c++ {
		res.Checks[c.String()] = rep.Passed[c]
	}
	for _, f := range rep.Failures {
		res.Failures = append(res.Failures, failureJSON{Check: f.Check.String(), Kind: f.Kind.String(), Agent: f.Agent, Other: f.Other, T: f.T, Cell: f.Cell})
	}
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n", b)
	return err
}

func envShow(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env show", "t2t env show --in FILE.jsonl [--id ID | --line N] [--plan FILE] [--format ascii|svg|png] [--out FILE]", stderr)
	sel := addInstanceFlags(fs, "in")
	planPath := fs.String("plan", "", "optional answer file (text moves or JSON paths); 'optimal' draws the instance's own optimal paths")
	format := fs.String("format", "ascii", "ascii, svg or png")
	cell := fs.Int("cell", 48, "PNG pixels per cell")
	out := fs.String("out", "-", "output file (- for stdout)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *cell < 8 || *cell > 256 {
		return badInput("--cell %d out of range [8,256]", *cell)
	}
	in, err := sel.pick("in")
	if err != nil {
		return err
	}
	var plan *env.Plan
	var conflicts []env.Pos
	switch *planPath {
	case "":
	case "optimal":
		if in.Paths == nil {
			return badInput("%s: instance %s has no paths (run 't2t env solve' first)", *sel.path, in.ID)
		}
		plan = &env.Plan{Paths: in.Paths}
	default:
		b, err := os.ReadFile(*planPath)
		if err != nil {
			return badInput("%v", err)
		}
		p, err := env.ParseAnswer(string(b), in)
		if err != nil {
			return badInput("%s: %v", *planPath, err)
		}
		plan = &p
		var rep env.Report
		env.Verify(in, plan, &rep)
		for _, f := range rep.Failures {
			if f.Check == env.CheckConflictFree {
				conflicts = append(conflicts, f.Cell)
			}
		}
	}
	var data []byte
	switch strings.ToLower(*format) {
	case "ascii":
		if plan != nil {
			data = []byte(env.RenderPlanASCII(in, plan))
		} else {
			data = []byte(env.RenderASCII(in))
		}
	case "svg":
		data = env.RenderSVG(in, plan, conflicts)
	case "png":
		data, err = env.RenderPNG(in, plan, conflicts, *cell)
		if err != nil {
			return err
		}
	default:
		return badInput("--format %q: want ascii, svg or png", *format)
	}
	return writeOut(*out, stdout, data)
}

func envPrompt(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env prompt", "t2t env prompt --in FILE.jsonl [--id ID | --line N] [--objective soc|makespan]", stderr)
	sel := addInstanceFlags(fs, "in")
	objective := fs.String("objective", "soc", "cost objective named in the prompt: soc or makespan")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	obj, err := env.ParseObjective(*objective)
	if err != nil {
		return badInput("--objective: %v", err)
	}
	in, err := sel.pick("in")
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, env.RenderPrompt(in, env.PromptOptions{Objective: obj}))
	return err
}

func envSuite(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env suite", "t2t env suite [--suites eval,val,quick] [--seed N] [--out DIR]", stderr)
	names := fs.String("suites", "eval,val,quick", "comma-separated suites to write")
	seed := fs.Uint64("seed", 2026, "suite seed: the same seed gives the same suites (and hashes) everywhere")
	perSize := fs.Int("per-size", 0, "instances per size per subset (0: each suite's default)")
	out := fs.String("out", "suites", "output folder: NAME.jsonl and NAME.manifest.json per suite")
	workers := fs.Int("workers", 0, "generator goroutines (0: one per CPU)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *perSize < 0 || *perSize > 10000 {
		return badInput("--per-size %d out of range [0,10000]", *perSize)
	}
	for _, name := range strings.Split(*names, ",") {
		name = strings.TrimSpace(name)
		spec, err := suiteSpec(name, *seed, *perSize)
		if err != nil {
			return badInput("--suites: %v", err)
		}
		data, man, err := buildSuite(&spec, *workers, stderr)
		if err != nil {
			return err
		}
		if err := writeFileAtomic(*out+"/"+name+".jsonl", data); err != nil {
			return err
		}
		mb, err := json.MarshalIndent(man, "", "  ")
		if err != nil {
			return err
		}
		if err := writeFileAtomic(*out+"/"+name+".manifest.json", append(mb, '\n')); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d instances, sha256 %s → %s/%s.jsonl\n", name, man.Count, man.SHA256, *out, name)
	}
	return nil
}

// suiteSpec returns the named suite, with perSize overriding its default
// size when positive.
func suiteSpec(name string, seed uint64, perSize int) (env.SuiteSpec, error) {
	if perSize == 0 {
		return env.SuiteByName(name, seed)
	}
	switch name {
	case env.SuiteEval:
		return env.PaperEvalSpec(seed, perSize), nil
	case env.SuiteVal:
		return env.ValidationSpec(seed, perSize), nil
	case env.SuiteQuick:
		return env.QuickSpec(seed, perSize), nil
	}
	return env.SuiteByName(name, seed)
}

// buildSuite generates a whole suite in parallel and encodes it.
func buildSuite(spec *env.SuiteSpec, workers int, stderr io.Writer) ([]byte, env.SuiteManifest, error) {
	ins := make([]*env.Instance, spec.Len())
	err := parallelRange(len(ins), workers, "suite "+spec.Name, stderr, func(lo, hi int) error {
		part, err := env.GenerateSuite(spec, lo, hi)
		copy(ins[lo:hi], part)
		return err
	})
	if err != nil {
		return nil, env.SuiteManifest{}, err
	}
	return env.EncodeSuite(*spec, ins)
}
