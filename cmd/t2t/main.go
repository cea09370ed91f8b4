// Command t2t trains LLM agents with reinforcement learning on the
// MAPF-FrozenLake testbed, with an environment engineer that designs each
// next training stage. Run "t2t help" for the subcommands.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
	"github.com/t2t-lab/t2t/env"
	_ "github.com/t2t-lab/t2t/learner/engines" // every compute engine: gomlx and torch
)

// command is one subcommand. run gets the arguments after the subcommand's
// name and returns an error; a *usageError (bad input) exits with status 2,
// an *env.BatchError (some lines of a batch failed) with status 3, any other
// error with status 1.
type command struct {
	name    string
	summary string
	run     func(args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"env", "MAPF-FrozenLake instances", runEnv},
		{"train", "a staged training run with every role in one process", runTrain},
		{"eval", "evaluate a policy on a benchmark suite: the paper's tables, resumable", runEval},
		{"experiment", "train several engineer strategies over seeds and write one report", runExperiment},
		{"engineer", "engineer tools", runEngineer},
		{"traces", "analyse span files: latency per span, critical path per stage, nodes, timeline", runTraces},
		{"node", "join a t2t cluster with roles (coordinator,learner,engineer / rollout)", runNode},
		{"status", "the live state of a run from Redis: stage, phase, versions, rates, checkpoints", runStatus},
		{"model", "Qwen3 checkpoints", runModel},
		{"serve", "an OpenAI-compatible HTTP API over a Qwen3 checkpoint", runServe},
		{"sft", "supervised warm start of a Qwen3 checkpoint on optimal answers", runSFT},
		{"bench", "benchmarks: the Qwen3 learner (GRPO step, decoding) and the cluster (simulated)", runBench},
		{"version", "the build (version, commit, Go) and the engines and devices usable here", runVersion},
	}
}

// subcommandsOf returns the subcommands of group command name ("env":
// gen, solve, …), nil for a command without them. t2t help lists them.
func subcommandsOf(name string) []command {
	switch name {
	case "env":
		return envCommands()
	case "model":
		return modelCommands()
	case "bench":
		return benchCommands()
	case "engineer":
		return engineerCommands()
	}
	return nil
}

func main() {
	redis.SetLogger(quietRedis{})
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// quietRedis drops go-redis's own log lines (one per failed dial): the
// store logs each retry once, and a command's error says why it gave up.
type quietRedis struct{}

func (quietRedis) Printf(context.Context, string, ...any) {}

func run(args []string, stdout, stderr io.Writer) int {
	cmds := commands()
	if len(args) > 0 && args[0] == "--version" {
		args = append([]string{"version"}, args[1:]...)
	}
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		if len(args) > 1 {
			return run([]string{args[1], "--help"}, stdout, stderr)
		}
		printUsage(stdout, cmds)
		return 0
	}
	for _, c := range cmds {
		if c.name == args[0] {
			return exitCode(c.run(args[1:], stdout, stderr), "t2t "+c.name, stderr)
		}
	}
	fmt.Fprintf(stderr, "t2t: unknown command %q (see 't2t help')\n", args[0])
	return 2
}

func exitCode(err error, prefix string, stderr io.Writer) int {
	err = inputError(err)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "%s: %v\n", prefix, err)
	if errors.As(err, new(*usageError)) {
		return 2
	} else if errors.As(err, new(*env.BatchError)) {
		return 3
	}
	return 1
}

func printUsage(w io.Writer, cmds []command) {
	fmt.Fprintln(w, "t2t — trainee to trainer: RL for LLM agents on MAPF-FrozenLake, with an environment engineer.")
	fmt.Fprintln(w, "\nUsage: t2t <command> [flags]\n\nCommands:")
	sort.Slice(cmds, func(i, j int) bool { return cmds[i].name < cmds[j].name })
	for _, c := range cmds {
		fmt.Fprintf(w, "  %-17s %s\n", c.name, c.summary)
		for _, s := range subcommandsOf(c.name) {
			fmt.Fprintf(w, "  %-17s %s\n", c.name+" "+s.name, s.summary)
		}
	}
	fmt.Fprintln(w, "\nRun 't2t <command> --help' for a command's flags ('t2t env gen --help' for a subcommand's).")
}

// subcommands dispatches "t2t <group> <sub> ...".
func subcommands(group string, subs []command, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintf(stdout, "Usage: t2t %s <subcommand> [flags]\n\nSubcommands:\n", group)
		for _, c := range subs {
			fmt.Fprintf(stdout, "  %-8s %s\n", c.name, c.summary)
		}
		fmt.Fprintf(stdout, "\nRun 't2t %s <subcommand> --help' for its flags.\n", group)
		if len(args) == 0 {
			return badInput("missing subcommand")
		}
		return nil
	}
	for _, c := range subs {
		if c.name == args[0] {
			return c.run(args[1:], stdout, stderr)
		}
	}
	names := make([]string, len(subs))
	for i, c := range subs {
		names[i] = c.name
	}
	return badInput("unknown subcommand %q (want one of %s)", args[0], strings.Join(names, ", "))
}

// inRange is a usage error unless lo ≤ v ≤ hi for flag --name.
func inRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return badInput("--%s %d: must be in [%d,%d]", name, v, lo, hi)
	}
	return nil
}

// newFlags returns a flag set that returns errors instead of exiting and
// prints its usage to stderr only when -h or --help asks for it: a flag
// error is one line (see parseArgs), not the whole usage.
func newFlags(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(&helpOutput{w: stderr})
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: %s\n\nFlags:\n", usage)
		fs.PrintDefaults()
	}
	return fs
}

// helpOutput is a flag set's output: it drops what package flag writes on
// a parse error and passes the usage through once help was asked for.
type helpOutput struct {
	w    io.Writer
	help bool
}

func (h *helpOutput) Write(p []byte) (int, error) {
	if !h.help {
		return len(p), nil
	}
	return h.w.Write(p)
}

// parseFlags parses args, which must be flags only, and turns flag errors
// into bad-input errors.
func parseFlags(fs *flag.FlagSet, args []string) error {
	pos, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return badInput("unexpected argument %q (run '%s -h' for the usage)", pos[0], fs.Name())
	}
	return nil
}

// parseArgs parses args with flags before, between or after the positional
// arguments, which it returns in order; everything after "--" is positional.
// A flag error is one bad-input line naming the flag and the -h hint; -h
// prints the usage and returns flag.ErrHelp.
func parseArgs(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				if h, ok := fs.Output().(*helpOutput); ok {
					h.help = true
					fs.Usage()
				}
				return nil, err
			}
			return nil, badInput("%v (run '%s -h' for the flags)", err, fs.Name())
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" {
			return append(pos, rest...), nil
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos, args = append(pos, rest[0]), rest[1:]
	}
}
