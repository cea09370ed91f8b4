package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/torch"
)

const deviceFlagHelp = "compute device: gomlx engine: cpu, or xla:/abs/path/pjrt_plugin.so (cgo builds); torch engine: cpu, cuda or cuda:N"

// engineFlags are the compute-engine flags of the LLM commands (--device is the command's own).
type engineFlags struct {
	kind, python, autocast *string
	threads                *int
}

func addEngineFlags(fs *flag.FlagSet) *engineFlags {
	return &engineFlags{
		kind:     fs.String("engine", engine.GoMLX, "LLM compute engine: gomlx (pure Go, no Python) or torch (a PyTorch worker process: fast on CPU, the path for GPUs)"),
		python:   fs.String("python", "", "torch engine: the Python interpreter (default $"+torch.PythonEnv+", else the first of python3, /usr/bin/python3, python that imports torch)"),
		autocast: fs.String("autocast", "", "torch engine on CUDA: bf16 for bfloat16 autocast over float32 master weights (default: float32)"),
		threads:  fs.Int("threads", 0, "torch engine: CPU threads of the worker (0: every core)"),
	}
}

// spec builds the engine spec; the torch worker's stderr lines go to stderr prefixed "torch: ".
func (f *engineFlags) spec(device string, stderr io.Writer) (engine.Spec, error) {
	s := engine.Spec{Kind: *f.kind, Device: device, Python: *f.python, Autocast: *f.autocast, Threads: *f.threads}
	if err := s.Validate(); err != nil {
		return s, badInput("%v", err)
	}
	if s.Kind == engine.Torch {
		var mu sync.Mutex
		s.Log = func(line string) {
			mu.Lock()
			defer mu.Unlock()
			fmt.Fprintf(stderr, "torch: %s\n", line)
		}
	}
	return s, nil
}

// openLM loads a checkpoint directory with its tokenizer on the chosen engine. A missing torch
// is an environment error (exit 1); anything wrong with the directory is bad input (exit 2).
func (f *engineFlags) openLM(ctx context.Context, device, dir string, stderr io.Writer) (*textpolicy.LM, error) {
	spec, err := f.spec(device, stderr)
	if err != nil {
		return nil, err
	}
	lm, err := textpolicy.OpenLM(ctx, spec, dir)
	if err != nil {
		return nil, engineErr("--model", err)
	}
	return lm, nil
}

// engineErr maps an engine error: torch missing or its worker failing is an environment error,
// the rest (a bad checkpoint or device) is bad input.
func engineErr(flagName string, err error) error {
	if errors.Is(err, learner.ErrBadDevice) || errors.Is(err, learner.ErrNoXLA) {
		return badInput("--device: %v", err)
	}
	if errors.Is(err, torch.ErrNoTorch) || errors.Is(err, torch.ErrWorkerDied) || errors.Is(err, torch.ErrVersion) || errors.Is(err, torch.ErrProtocol) {
		return err
	}
	return badInput("%s: %v", flagName, strings.TrimPrefix(err.Error(), "torch: "))
}
