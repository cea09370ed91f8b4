package main

import (
	"errors"
	"fmt"
	"strings"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/env/movingai"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/experiment"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/internal/outfile"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/serve"
	"github.com/t2t-lab/t2t/train"
)

// usageError marks bad input: a malformed file, a flag out of range. Its
// message is one line that names the file, line and field where known.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func badInput(format string, args ...any) error {
	return &usageError{fmt.Errorf(format, args...)}
}

// inputError maps the packages' typed input errors to usage errors (exit 2)
// worded for the command line: the one place where cmd turns a package's
// "this setting is wrong" into the flag that set it. Other errors pass.
func inputError(err error) error {
	var (
		oe  *train.OptionError
		ce  *cluster.FieldError
		ie  *evaluate.InputError
		su  *store.URLError
		xe  *experiment.OptionError
		le  *learner.ConfigError
		be  *bench.OpenError
		me  *bench.MemoryError
		se  *serve.LoadError
		de  *daemon.InputError
		re  *daemon.RolesError
		mi  *movingai.InputError
		use *usageError
		ope *outfile.PathError
	)
	switch {
	case err == nil, errors.As(err, &use):
		return err
	case errors.As(err, &oe):
		return badInput("%s", oe.Usage())
	case errors.As(err, &ce):
		return badInput("%s", ce.Usage())
	case errors.As(err, &ie), errors.As(err, &mi), errors.As(err, &su), errors.As(err, &ope):
		return &usageError{err}
	case errors.As(err, &xe):
		return &usageError{fmt.Errorf("--%w", err)}
	case errors.As(err, &se):
		return engineErr("--model", se.Err)
	case errors.Is(err, serve.ErrOptions):
		return badInput("%v", err)
	case errors.As(err, &be) && be.Dir != "":
		return engineErr("--model", be.Err)
	case errors.As(err, &be):
		return engineErr("--model/--preset", be.Err)
	case errors.As(err, &me):
		return badInput("the estimate (%.1f GiB) exceeds the memory available on this machine (%.1f GiB): pick a smaller preset or batch, or pass --force",
			float64(me.Need)/(1<<30), float64(me.Available)/(1<<30))
	case errors.As(err, &le):
		if name, ok := flagNames[le.Field[strings.LastIndex(le.Field, ".")+1:]]; ok {
			return badInput("%s %v: %s", name, le.Value, le.Reason)
		}
		return badInput("%v", err)
	case errors.Is(err, limits.ErrTooLarge):
		return badInput("%v", err)
	case errors.As(err, &de):
		return nodeInputError(de)
	case errors.As(err, &re):
		return rolesError(re)
	}
	return err
}

// flagNames names the flag that sets each field of the field errors (learner.ConfigError) of
// package bench's options and of qwen3's preset, shape and init options: the part of the Field
// after its last dot.
var flagNames = map[string]string{
	"Batch": "--batch", "PromptLen": "--prompt-len", "CompletionLen": "--completion-len", "MicroBatch": "--micro-batch",
	"LoRARank": "--lora-rank", "Steps": "--steps", "PeakTFLOPS": "--peak-tflops", "NewTokens": "--new-tokens",
	"Temperature": "--temperature", "PromptLen+CompletionLen": "--prompt-len + --completion-len",
	"PromptLen+NewTokens": "--prompt-len + --new-tokens", "Rollouts": "--rollouts", "RecordUnits": "--record-units",
	"Profiles": "--profiles", "preset": "--preset", "Layers": "--layers", "Hidden": "--hidden", "Intermediate": "--intermediate",
	"Heads": "--heads", "KVHeads": "--kv-heads", "Vocab": "--vocab", "RopeTheta": "--rope-theta", "TokenizerPath": "--tokenizer",
}

// nodeFlagOf is the flag of each daemon.Config field an InputError names
// (with %s: where the message repeats the value).
var nodeFlagOf = map[string]string{"HTTPAddr": "--http %s", "ServeAddr": "--serve-addr %s", "Listen": "--listen %s",
	"TLS": "--tls-*", "UnitLogPath": "--unit-log", "TelemetryName": "--node-name"}

// nodeInputError is the usage error of the flag behind a daemon setting.
func nodeInputError(ie *daemon.InputError) error {
	name, ok := nodeFlagOf[ie.Field]
	if !ok {
		name = ie.Field
	}
	if strings.Contains(name, "%s") {
		name = fmt.Sprintf(name, ie.Value)
	}
	return badInput("%s: %v", name, ie.Err)
}

// rolesError is the usage error of a --roles value daemon.ParseRoles refused.
func rolesError(re *daemon.RolesError) error {
	var ue *cluster.RoleError
	switch {
	case errors.Is(re, daemon.ErrNoRoles):
		return badInput("--roles is required: coordinator,learner,engineer and/or rollout")
	case errors.Is(re, daemon.ErrPartialRun):
		return badInput("--roles %q: coordinator, learner and engineer run together on one node (give all three)", re.Roles)
	case errors.As(re, &ue):
		return badInput("--roles %q: %v (want coordinator, learner, engineer, rollout)", re.Roles, ue)
	}
	return re
}
