package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/qwen3"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	return subcommands("bench", []command{
		{"grpo", "time GRPO steps of a Qwen3 model (random weights of a preset shape, or a checkpoint): tokens/s, FLOPs, MFU, memory", benchGRPO},
		{"decode", "time batched KV-cache decoding (gomlx or torch engine): prefill, decode tokens/s, memory", benchDecode},
		{"cluster", "simulate a coordinator, a learner and R = 1…1,024 rollout actors: episodes/s fed to the learner, discards, where it saturates", benchCluster},
	}, args, stdout, stderr)
}

// benchModelFlags are the flags both benchmarks share: which model, on which device.
type benchModelFlags struct {
	src         bench.Source
	device      string
	json, force bool
	eng         *engine.Flags
}

func (f *benchModelFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.src.Preset, "preset", qwen3.PresetTiny, "random-weight model of a preset shape: tiny, 0.6b-shape or 4b-shape (built in memory, nothing written)")
	fs.StringVar(&f.src.Dir, "model", "", "a checkpoint directory instead of --preset")
	fs.StringVar(&f.device, "device", learner.DeviceCPU, "compute device: gomlx engine: cpu, or xla:/abs/path/pjrt_plugin.so[,nopreallocate][,tf32] (cgo builds); torch engine: cpu, cuda or cuda:N")
	fs.Uint64Var(&f.src.Seed, "seed", 1, "seed of the random weights and the synthetic batch")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.force, "force", false, "run on the CPU even when the memory estimate exceeds the machine's available memory")
	f.eng = addEngineFlags(fs)
	sh := &f.src.Shape
	fs.IntVar(&sh.Layers, "layers", 0, "--preset: decoder layers (0: the preset's)")
	fs.IntVar(&sh.Hidden, "hidden", 0, "--preset: hidden size (0: the preset's)")
	fs.IntVar(&sh.Intermediate, "intermediate", 0, "--preset: MLP intermediate size (0: the preset's)")
	fs.IntVar(&sh.Heads, "heads", 0, "--preset: query heads; head_dim = hidden / heads (0: the preset's)")
	fs.IntVar(&sh.KVHeads, "kv-heads", 0, "--preset: key-value heads (0: the preset's, or --heads/2 with --heads)")
	fs.IntVar(&sh.Vocab, "vocab", 0, "--preset: vocabulary size (0: the preset's)")
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
	o := bench.DefaultGRPOOptions()
	fs.IntVar(&o.Batch, "batch", o.Batch, "sequences per GRPO step")
	fs.IntVar(&o.PromptLen, "prompt-len", o.PromptLen, "prompt tokens per sequence")
	fs.IntVar(&o.CompletionLen, "completion-len", o.CompletionLen, "completion (trained) tokens per sequence")
	fs.IntVar(&o.MicroBatch, "micro-batch", o.MicroBatch, "rows per forward/backward pass (gradients accumulate over micro-batches); the text policy's default")
	fs.IntVar(&o.LoRARank, "lora-rank", o.LoRARank, "train LoRA adapters of this rank (α = 2·rank, all seven projections) instead of all weights; 0: full fine-tuning")
	fs.IntVar(&o.Steps, "steps", o.Steps, "timed GRPO steps after one warm-up step")
	fs.Float64Var(&o.PeakTFLOPS, "peak-tflops", o.PeakTFLOPS, "the device's peak FLOP/s in TFLOPS for MFU (0: no MFU)")
	fs.StringVar(&o.PeakLabel, "peak-label", o.PeakLabel, "what --peak-tflops is, for the report (e.g. \"H200 bf16 dense\")")
	fs.Float64Var(&o.LR, "lr", o.LR, "AdamW learning rate")
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
	fs.IntVar(&o.Batch, "batch", o.Batch, "sequences decoded together")
	fs.IntVar(&o.PromptLen, "prompt-len", o.PromptLen, "prompt tokens per sequence (random ids)")
	fs.IntVar(&o.NewTokens, "new-tokens", o.NewTokens, "tokens generated per sequence (no stop token: every row runs to the end); ≥ 2")
	fs.Float64Var(&o.Temperature, "temperature", o.Temperature, "sampling temperature (the policy samples at 1; 0: greedy)")
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
