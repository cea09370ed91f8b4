package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/serve"
)

// usageError marks bad input: a malformed file, a flag out of range. Its
// message is one line that names the file, line and field where known.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// inputError maps bad input to a usage error (exit 2) worded for the
// command line: the one place where cmd turns a package's "this setting is
// wrong" into the flag that set it. Every package reports a wrong setting,
// flag, input file line or path as a *fielderr.Error (fieldError words it);
// the other cases are not about one field, each said below. Other errors
// pass.
func inputError(err error) error {
	var (
		use *usageError
		fe  *fielderr.Error
		se  *serve.LoadError
		be  *bench.OpenError
		me  *bench.MemoryError
	)
	switch {
	case err == nil, errors.As(err, &use):
		return err
	// A model that did not load or build: bad input (--model) or the
	// environment's fault (no torch), as train.EngineError sorts it. First,
	// because the loader's error may hold a field error that --model names
	// better.
	case errors.As(err, &se):
		return engineErr("--model", se.Err)
	case errors.As(err, &be) && be.Dir != "":
		return engineErr("--model", be.Err)
	case errors.As(err, &be):
		return engineErr("--model/--preset", be.Err)
	case errors.As(err, &fe):
		return fieldError(err, fe)
	// The machine has too little memory for a benchmark: no setting is
	// wrong, and --force runs it anyway.
	case errors.As(err, &me):
		return badInput("the estimate (%.1f GiB) exceeds the memory available on this machine (%.1f GiB): pick a smaller preset or batch, or pass --force",
			float64(me.Need)/(1<<30), float64(me.Available)/(1<<30))
	// An input file over its size limit (internal/limits: its *TooLargeError
	// carries the limit that movingai and hfmodel quote).
	case errors.Is(err, limits.ErrTooLarge):
		return badInput("%v", err)
	}
	return err
}

// fieldError is the usage error of fe, found in err: about a flag, fe's
// Usage ("--batch 0: must be ≥ 1"), the flag found in flagNames for a
// learner config field; about a file, or a field no flag sets, err's whole
// message (its wrapping says where); with neither, fe's reason.
func fieldError(err error, fe *fielderr.Error) error {
	if fe.Flag == "" && errors.Is(fe, learner.ErrInvalidConfig) {
		if name, ok := flagNames[fe.Field[strings.LastIndex(fe.Field, ".")+1:]]; ok {
			named := *fe
			named.Flag = name
			fe = &named
		}
	}
	if fe.Flag == "" && (fe.File != "" || fe.Field != "") {
		return &usageError{err}
	}
	return badInput("%s", fe.Usage())
}

// flagNames names the flag that sets each field of the learner config errors
// (learner.ErrInvalidConfig) of package bench's options and of qwen3's
// preset, shape and init options: the part of the Field after its last dot.
var flagNames = map[string]string{
	"Batch": "batch", "PromptLen": "prompt-len", "CompletionLen": "completion-len", "MicroBatch": "micro-batch",
	"LoRARank": "lora-rank", "Steps": "steps", "PeakTFLOPS": "peak-tflops", "NewTokens": "new-tokens",
	"Temperature": "temperature", "PromptLen+CompletionLen": "--prompt-len + --completion-len",
	"PromptLen+NewTokens": "--prompt-len + --new-tokens", "Rollouts": "rollouts", "RecordUnits": "record-units",
	"Profiles": "profiles", "preset": "preset", "Layers": "layers", "Hidden": "hidden", "Intermediate": "intermediate",
	"Heads": "heads", "KVHeads": "kv-heads", "Vocab": "vocab", "RopeTheta": "rope-theta", "TokenizerPath": "tokenizer",
}
