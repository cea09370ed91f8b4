package train

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// policyKind is what a run knows about one kind of policy, by name: how to
// build it, the learning rate it trains at by default, and whether it is a
// language model (the --model, --lora-rank, --devices, --rollout-engine
// settings are an LLM's). Everything else the run needs from a policy it
// asks the policy itself, through the interfaces of policy.go
// (Checkpointer, LMPolicy, remoteDescriber, follower, ...), never by kind.
// A new kind is one entry of policyKinds.
type policyKind struct {
	// help describes the kind in --policy's help.
	help string
	// lr is the default learning rate: the package's that trains it.
	lr float64
	// llm marks a language-model policy.
	llm bool
	// selectable: --policy takes it (the endpoint kind is built only by
	// rollout nodes, from a run spec).
	selectable bool
	// build builds the kind (NewPolicy, after the checks common to all).
	build func(ctx context.Context, spec PolicySpec) (Policy, func() error, error)
	// fromFlags fills the kind's own part of spec from the flags
	// (Flags.policySpec); nil: it has none.
	fromFlags func(f *Flags, spec *PolicySpec, cfg env.Config, logger *slog.Logger, out io.Writer) error
}

// policyKinds are the kinds NewPolicy builds, by name (PolicySpec.Kind).
var policyKinds = map[string]policyKind{
	PolicyGridNet:      {help: "CPU network", lr: learner.DefaultLR, selectable: true, build: newGridPolicyKind, fromFlags: gridSpecFromFlags},
	PolicyQwen3:        {help: "a causal LM, --model", lr: textpolicy.DefaultLR, llm: true, selectable: true, build: newTextPolicy, fromFlags: lmSpecFromFlags},
	PolicyScripted:     {help: "optimal plans with injected mistakes; learns nothing", selectable: true, build: newScriptedPolicy},
	EndpointPolicyName: {help: "a rollout node's client of the learner's endpoint", llm: true, build: newEndpointPolicy},
}

// newGridPolicyKind builds a gridnet (newGridPolicy), which holds nothing
// to release.
func newGridPolicyKind(_ context.Context, spec PolicySpec) (Policy, func() error, error) {
	gp, err := newGridPolicy(spec)
	if err != nil {
		return nil, nil, err
	}
	return gp, noClose, nil
}

// newScriptedPolicy builds a scripted policy.
func newScriptedPolicy(_ context.Context, spec PolicySpec) (Policy, func() error, error) {
	return &ScriptedPolicy{MistakeRate: spec.MistakeRate}, noClose, nil
}

// policyOrder is the order --policy's help and errors list the kinds in.
var policyOrder = []string{PolicyGridNet, PolicyQwen3, PolicyScripted}

// noClose is the close function of a policy that holds nothing to release.
func noClose() error { return nil }

// PolicyHelp is --policy's help text: every kind a run trains, described.
func PolicyHelp() string {
	parts := make([]string, len(policyOrder))
	for i, name := range policyOrder {
		parts[i] = fmt.Sprintf("%s (%s)", name, policyKinds[name].help)
	}
	return "policy to train: " + strings.Join(parts, ", ")
}

// CheckPolicyKind checks a --policy value: nil for a kind a run trains,
// else a *fielderr.Error about "policy" that lists them.
func CheckPolicyKind(kind string) error {
	if k, ok := policyKinds[kind]; ok && k.selectable {
		return nil
	}
	return &fielderr.Error{Kind: ErrOptions, Flag: "policy", Value: strconv.Quote(kind), Reason: "want " + strings.Join(policyOrder, ", ")}
}

// IsLLM reports whether kind is a language-model policy, the kind the LLM
// settings (--model, --prompt, --lora-rank, --devices, --rollout-engine,
// a self engineer) are for.
func IsLLM(kind string) bool { return policyKinds[kind].llm }

// DefaultLR is the learning rate a policy of kind trains at when none is
// given: the default of the package that trains it (textpolicy.DefaultLR,
// 1e-6 for pretrained LMs; learner.DefaultLR, 1e-3, for the others).
func DefaultLR(kind string) float64 {
	if lr := policyKinds[kind].lr; lr != 0 {
		return lr
	}
	return learner.DefaultLR
}

// needsLLM is the error of an LLM setting (flag, value) given with a
// policy of another kind.
func needsLLM(flag string, value any, what string) error {
	return &fielderr.Error{Kind: ErrOptions, Flag: flag, Value: value, Reason: what + ": needs --policy " + PolicyQwen3}
}
