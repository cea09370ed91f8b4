package train

import (
	"errors"
	"testing"

	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestEvalPolicySetPlayer: the scripted and endpoint policies are built and
// named as t2t eval names them; a missing or bad setting is a field error
// worded with t2t eval's flags.
func TestEvalPolicySetPlayer(t *testing.T) {
	opt := evaluate.Options{Play: evaluate.PlayOptions{Seed: 7}}
	if err := (EvalPolicy{Kind: "scripted", MistakeRate: 0.25}).SetPlayer(&opt); err != nil {
		t.Fatal(err)
	}
	if _, ok := opt.Player.(*ScriptedPolicy); !ok || opt.PolicyID != "scripted(mistake=0.25,seed=7)" || !opt.Play.PerInstance {
		t.Fatalf("scripted: %T %q per-instance %v", opt.Player, opt.PolicyID, opt.Play.PerInstance)
	}
	opt = evaluate.Options{}
	if err := (EvalPolicy{Kind: "endpoint", URL: "http://127.0.0.1:1/v1", Model: "m", MaxTokens: 8}).SetPlayer(&opt); err != nil {
		t.Fatal(err)
	}
	if opt.Player == nil || opt.PolicyID != "endpoint(http://127.0.0.1:1/v1,m)" {
		t.Fatalf("endpoint: %T %q", opt.Player, opt.PolicyID)
	}
	// A prompt style is a policy of its own: answers to another prompt are not reused.
	opt = evaluate.Options{}
	if err := (EvalPolicy{Kind: "endpoint", URL: "http://127.0.0.1:1/v1", Model: "m", Prompt: "compact"}).SetPlayer(&opt); err != nil {
		t.Fatal(err)
	}
	if opt.PolicyID != "endpoint(http://127.0.0.1:1/v1,m,prompt=compact)" {
		t.Fatalf("endpoint with --prompt compact: %q", opt.PolicyID)
	}
	for _, tc := range []struct {
		p     EvalPolicy
		usage string
	}{
		{EvalPolicy{Kind: "gridnet"}, "--policy gridnet needs --checkpoint DIR"},
		{EvalPolicy{Kind: "scripted", MistakeRate: 2}, "--mistake-rate 2 out of range [0,1]"},
		{EvalPolicy{Kind: "endpoint", URL: "http://x"}, "--policy endpoint needs --policy-url and --policy-model"},
		{EvalPolicy{Kind: "nope"}, `--policy "nope": want gridnet, endpoint, scripted or rows-first`},
		{EvalPolicy{Kind: "rows-first", Prompt: "cells"}, "--prompt cells: only --policy endpoint reads a prompt"},
		{EvalPolicy{Kind: "endpoint", URL: "http://x", Model: "m", Prompt: "tiny"}, "--prompt tiny: want full, compact, cells, steps or grid"},
		{EvalPolicy{Kind: "scripted", Prompt: "compact"}, "--prompt compact: only --policy endpoint reads a prompt"},
		{EvalPolicy{Kind: "gridnet", Checkpoint: "x", Prompt: "full"}, "--prompt full: only --policy endpoint reads a prompt"},
	} {
		var fe *fielderr.Error
		if err := tc.p.SetPlayer(&evaluate.Options{}); !errors.As(err, &fe) || fe.Usage() != tc.usage {
			t.Errorf("%+v: %v, want %q", tc.p, err, tc.usage)
		}
	}
}
