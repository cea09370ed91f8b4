package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/train"
)

// addEngineFlags binds the compute-engine flags (--engine, --python, --autocast, --threads).
func addEngineFlags(fs *flag.FlagSet) *engine.Flags {
	f := new(engine.Flags)
	f.Register(fs)
	return f
}

// engineSpec is f's engine spec on device; the torch worker's stderr lines go to stderr prefixed
// "torch: ".
func engineSpec(f *engine.Flags, device string, stderr io.Writer) (engine.Spec, error) {
	s, err := f.Spec(device, func(line string) { fmt.Fprintf(stderr, "torch: %s\n", line) })
	if err != nil {
		return s, badInput("%v", err)
	}
	return s, nil
}

// openLM loads a checkpoint directory with its tokenizer on the chosen engine. A missing torch
// is an environment error (exit 1); anything wrong with the directory is bad input (exit 2).
func openLM(ctx context.Context, f *engine.Flags, device, dir string, stderr io.Writer) (*textpolicy.LM, error) {
	spec, err := engineSpec(f, device, stderr)
	if err != nil {
		return nil, err
	}
	lm, err := textpolicy.OpenLM(ctx, spec, dir)
	if err != nil {
		return nil, engineErr("--model", err)
	}
	return lm, nil
}

// engineErr maps an engine error as train.EngineError sorts it: torch missing or its worker
// failing is an environment error (exit 1), anything else bad input about flagName (exit 2).
func engineErr(flagName string, err error) error {
	return inputError(train.EngineError(strings.TrimPrefix(flagName, "--"), err))
}
