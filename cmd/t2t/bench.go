package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
)

// benchCommands are the subcommands of "t2t bench".
func benchCommands() []command {
	return []command{
		{"grpo", "time GRPO steps of a Qwen3 model (random weights of a preset shape, or a checkpoint): tokens/s, FLOPs, MFU, memory", benchGRPO},
		{"decode", "time batched KV-cache decoding (gomlx or torch engine): prefill, decode tokens/s, memory", benchDecode},
		{"cluster", "simulate a coordinator, a learner and R = 1…1,024 rollout actors: episodes/s fed to the learner, discards, where it saturates", benchCluster},
	}
}

func runBench(args []string, stdout, stderr io.Writer) error {
	return subcommands("bench", benchCommands(), args, stdout, stderr)
}

// benchModelFlags are the flags both benchmarks share: which model, on which device.
type benchModelFlags struct {
	src         bench.Source
	device      string
	json, force bool
	eng         *engine.Flags
}

func (f *benchModelFlags) register(fs *flag.FlagSet) {
	f.src.Register(fs)
	fs.StringVar(&f.device, "device", gomlxtrain.DeviceCPU, "compute device: gomlx engine: cpu, or xla:/abs/path/pjrt_plugin.so[,nopreallocate][,tf32] (cgo builds); torch engine: cpu, cuda or cuda:N")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.force, "force", false, "run on the CPU even when the memory estimate exceeds the machine's available memory")
	f.eng = addEngineFlags(fs)
}

// setup is where the benchmark runs; its plan line goes to stderr under title.
func (f *benchModelFlags) setup(title string, stderr io.Writer) (bench.Setup, error) {
	spec, err := engineSpec(f.eng, f.device, stderr)
	if err != nil {
		return bench.Setup{}, err
	}
	return bench.Setup{Source: f.src, Engine: spec, Force: f.force, Log: func(line string) { fmt.Fprintf(stderr, "%s: %s\n", title, line) }}, nil
}

// write prints a report: one JSON object with --json, else its table under title.
func (f *benchModelFlags) write(w io.Writer, title string, rep interface{ WriteText(io.Writer, string) error }) error {
	if f.json {
		return json.NewEncoder(w).Encode(rep)
	}
	return rep.WriteText(w, title)
}

func benchGRPO(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t bench grpo", "t2t bench grpo [--preset P | --model DIR] [--device D] --batch B --prompt-len P --completion-len C [flags]", stderr)
	var mf benchModelFlags
	mf.register(fs)
	mf.eng.RegisterTraining(fs)
	o := bench.DefaultGRPOOptions()
	o.Register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o.Seed = mf.src.Seed
	s, err := mf.setup("t2t bench grpo", stderr)
	if err != nil {
		return err
	}
	rep, err := bench.RunGRPO(context.Background(), s, o)
	if err != nil {
		return err
	}
	return mf.write(stdout, "t2t bench grpo", rep)
}

func benchDecode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t bench decode", "t2t bench decode [--preset P | --model DIR] [--device D] --batch B --prompt-len P --new-tokens T [flags]", stderr)
	var mf benchModelFlags
	mf.register(fs)
	o := bench.DefaultDecodeOptions()
	o.Register(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o.Seed = mf.src.Seed
	s, err := mf.setup("t2t bench decode", stderr)
	if err != nil {
		return err
	}
	rep, err := bench.RunDecode(context.Background(), s, o)
	if err != nil {
		return err
	}
	return mf.write(stdout, "t2t bench decode", rep)
}
