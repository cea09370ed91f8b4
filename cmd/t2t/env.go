package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/env/movingai"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/internal/outfile"
	"github.com/t2t-lab/t2t/internal/progress"
	"github.com/t2t-lab/t2t/train"
)

// envCommands are the subcommands of "t2t env".
func envCommands() []command {
	return []command{
		{"gen", "generate instances from a config and a seed (JSONL)", envGen},
		{"solve", "add optimal costs, needs_wait and an optimal plan to instances", envSolve},
		{"check", "verify a plan for an instance: checks, costs, reward (JSON)", envCheck},
		{"show", "draw an instance and optionally a plan (ascii, svg, png)", envShow},
		{"suite", "write the benchmark suites (eval, val, quick) with content hashes", envSuite},
		{"prompt", "print the LLM prompt for an instance", envPrompt},
		{"import", "MovingAI .map/.scen benchmark files to instances (JSONL): --agents K consecutive scen rows each", envMovingAI(&movingai.ImportCommand{})},
		{"export", "instances to MovingAI files other MAPF solvers read: a .map per grid, a .scen per instance", envMovingAI(&movingai.ExportCommand{})},
	}
}

func runEnv(args []string, stdout, stderr io.Writer) error {
	return subcommands("env", envCommands(), args, stdout, stderr)
}

// instanceFlags select one instance of a JSONL file: by id, or by line.
type instanceFlags struct {
	path, id *string
	line     *int
	strict   *bool
}

func addInstanceFlags(fs *flag.FlagSet, fileFlag string) instanceFlags {
	return instanceFlags{
		path:   fs.String(fileFlag, "", "JSONL file holding the instance"),
		id:     fs.String("id", "", "instance id or content hash (default: --line)"),
		line:   fs.Int("line", 0, "1-based line of the instance in the file (0: the first instance)"),
		strict: fs.Bool("strict-ids", false, "refuse a file with an instance whose id is not its content hash"),
	}
}

// pick reads the selected instance; the file flag is required. By line
// (--line, or the first instance) it reads up to that line only, so later
// lines may be anything; by --id it reads the whole file, reports each
// line that is not an instance to stderr and goes on.
func (f instanceFlags) pick(fileFlag string, stderr io.Writer) (*env.Instance, error) {
	if *f.path == "" {
		return nil, badInput("--%s is required", fileFlag)
	}
	r, err := openIn(*f.path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	in, err := env.PickFrom(r, env.ReadOptions{StrictIDs: *f.strict}, *f.id, *f.line, func(rec env.Record) {
		fmt.Fprintf(stderr, "%s:%d: skipped: %v\n", *f.path, rec.Line, errors.Unwrap(rec.Err))
	})
	return in, env.FileError(*f.path, err)
}

// loadConfig reads a generator config file, or returns the local default.
func loadConfig(path string) (env.Config, error) {
	c, err := train.ReadConfig(path)
	return c, inputError(err)
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
	if err := errors.Join(inRange("n", *n, -1, 1<<20), inRange("workers", *workers, 0, 1024), checkOut("out", *out)); err != nil {
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
	set, finish := progress.To(stderr)("generating", cfg.Instances)
	ins, err := env.GenerateAll(cfg, *seed, *workers, set)
	finish()
	if err != nil {
		return err
	}
	return writeJSONL(*out, stdout, ins)
}

func envSolve(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env solve", "t2t env solve --in FILE.jsonl [--out FILE] [--strict-ids]\n\nOne output line per instance line, in order: "+
		"the solved instance, or\n{\"error\":\"line N: why\",\"line\":N,\"id\":…,\"hash\":…} when the line is not an instance or the solver fails on it.\n"+
		"Exit status: 0 all solved, 3 some lines failed (the output is still complete), 2 bad flags or an unreadable file.", stderr)
	in := fs.String("in", "", "input JSONL of instances (- for stdin)")
	out := fs.String("out", "-", "output JSONL file (- for stdout)")
	maxNodes := fs.Int("max-nodes", 0, "CBS node budget per solve (0: default)")
	workers := fs.Int("workers", 0, "solver goroutines (0: one per CPU)")
	strict := fs.Bool("strict-ids", false, "an instance whose id is not its content hash fails (default: keep a user's own id, \"hash\" beside it)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *in == "" {
		return badInput("--in is required")
	}
	if err := errors.Join(inRange("max-nodes", *maxNodes, 0, 1<<30), inRange("workers", *workers, 0, 1024), checkOut("out", *out)); err != nil {
		return err
	}
	recs, err := readRecords(*in, env.ReadOptions{StrictIDs: *strict}, false)
	if err != nil {
		return err
	}
	set, finish := progress.To(stderr)("solving", len(recs))
	failed := env.SolveRecords(recs, env.SolveOptions{MaxNodes: *maxNodes}, *workers, set)
	finish()
	b, err := env.EncodeRecords(recs)
	if err == nil {
		err = writeOut(*out, stdout, b)
	}
	return cmp.Or(err, failed)
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
	in, err := sel.pick("instance", stderr)
	if err != nil {
		return err
	}
	claimed := in.SOC // the file's costs are not trusted: the solver's are used
	if err := env.Annotate(in, env.SolveOptions{}); err != nil {
		return fmt.Errorf("solving instance %s: %w", in.ID, err)
	} else if claimed > 0 && claimed != in.SOC {
		return badInput("%s: instance %s says soc %d, its optimum is %d", *sel.path, in.ID, claimed, in.SOC)
	}
	answer, err := readIn(*planPath)
	if err != nil {
		return err
	}
	b, err := json.MarshalIndent(env.CheckAnswer(in, string(answer), *tokens, obj), "", "  ")
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
	if err := checkOut("out", *out); err != nil {
		return err
	}
	in, err := sel.pick("in", stderr)
	if err != nil {
		return err
	}
	plan, err := showPlan(in, *planPath, *sel.path)
	if err != nil {
		return err
	}
	data, err := env.Draw(in, plan, *format, *cell)
	if errors.As(err, new(*env.FieldError)) {
		return badInput("--format %q: want ascii, svg or png", *format)
	}
	if err != nil {
		return err
	}
	return writeOut(*out, stdout, data)
}

// showPlan reads the plan that `env show --plan` names: none, the
// instance's own optimal paths, or an answer file.
func showPlan(in *env.Instance, planPath, insPath string) (*env.Plan, error) {
	switch planPath {
	case "":
		return nil, nil
	case "optimal":
		if in.Paths == nil {
			return nil, badInput("%s: instance %s has no paths (run 't2t env solve' first)", insPath, in.ID)
		}
		return &env.Plan{Paths: in.Paths}, nil
	}
	b, err := limits.ReadFile(planPath, limits.Plan)
	if err != nil {
		return nil, badInput("%v", err)
	}
	p, err := env.ParseAnswer(string(b), in)
	if err != nil {
		return nil, badInput("%s: %v", planPath, err)
	}
	return &p, nil
}

func envPrompt(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t env prompt", "t2t env prompt --in FILE.jsonl [--id ID | --line N] [--objective soc|makespan] [--prompt full|compact|cells|steps|grid]", stderr)
	sel := addInstanceFlags(fs, "in")
	objective := fs.String("objective", "soc", "cost objective named in the prompt: soc or makespan")
	style := fs.String("prompt", "", "the prompt of this style of t2t train and t2t sft: full, compact, cells, steps or grid (default: the plain prompt, the map and the rules without coordinates)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	obj, err := env.ParseObjective(*objective)
	if err != nil {
		return badInput("--objective: %v", err)
	}
	opt := env.PromptOptions{Objective: obj}
	if *style != "" {
		if opt, err = env.PromptStyle(*style); err != nil {
			return badInput("--prompt %q: %s", *style, env.PromptStyleWant)
		}
		opt.Objective = obj
	}
	in, err := sel.pick("in", stderr)
	if err != nil {
		return err
	}
	_, err = io.WriteString(stdout, env.RenderPrompt(in, opt))
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
	if err := errors.Join(inRange("per-size", *perSize, 0, 10000), inRange("workers", *workers, 0, 1024)); err != nil {
		return err
	}
	if err := outfile.MakeDir("out", *out); err != nil {
		return err
	}
	for _, name := range strings.Split(*names, ",") {
		name = strings.TrimSpace(name)
		spec, err := env.SuiteSized(name, *seed, *perSize)
		if err != nil {
			return badInput("--suites: %v", err)
		}
		base, man, err := evaluate.WriteSuiteFiles(*out, &spec, *workers, progress.To(stderr))
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s: %d instances, sha256 %s → %s.jsonl\n", name, man.Count, man.SHA256, base)
	}
	return nil
}

// envMovingAI runs `t2t env import|export`; package movingai owns their flags and work.
func envMovingAI(c movingai.Command) func(args []string, stdout, stderr io.Writer) error {
	return func(args []string, stdout, stderr io.Writer) error {
		fs := newFlags("t2t env "+c.Name(), c.Usage(), stderr)
		c.Register(fs)
		if err := parseFlags(fs, args); err != nil {
			return err
		}
		if ex, ok := c.(*movingai.ExportCommand); ok && ex.Out != "" && ex.In != "" {
			ex.Report = stderr
			if err := outfile.MakeDir("out", ex.Out); err != nil { // its files go in this folder
				return err
			}
		}
		return c.Run(func(path string, data []byte) error { return writeOut(path, stdout, data) })
	}
}
