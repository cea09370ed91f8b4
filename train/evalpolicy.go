package train

import (
	"fmt"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// EvalPolicy is the policy `t2t eval` plays, as its flags give it.
type EvalPolicy struct {
	// Kind is "gridnet" (Checkpoint on Device), "scripted" (optimal plans
	// with MistakeRate), "endpoint" (an OpenAI-compatible server at URL
	// serving Model, at most MaxTokens per answer) or "rows-first" (the
	// blind baseline, evaluate.RowsFirst) (--policy).
	Kind string
	// Checkpoint is the gridnet checkpoint folder (--checkpoint); Device
	// its compute device (--device).
	Checkpoint, Device string
	// MistakeRate is the scripted policy's chance per agent and step of a
	// random move (--mistake-rate), in [0,1].
	MistakeRate float64
	// URL and Model name the endpoint (--policy-url, --policy-model);
	// MaxTokens bounds its answers (--max-tokens).
	URL, Model string
	MaxTokens  int
	// Prompt is the endpoint's prompt style (--prompt): "" the client's
	// plain prompt (the map and the rules, no coordinates), or
	// env.PromptFull or env.PromptCompact, the prompts t2t train and t2t
	// sft train with (a checkpoint served by t2t serve is evaluated on the
	// style it was trained on).
	Prompt string
}

// SetPlayer builds the policy into opt and names it (Player, PolicyID);
// the scripted policy plays each instance alone with its own seed, from
// opt.Play.Seed (Play.PerInstance). A missing or bad setting is a
// *fielderr.Error worded with t2t eval's flags; a gridnet checkpoint that
// does not load is LoadGridPolicy's error.
func (p EvalPolicy) SetPlayer(opt *evaluate.Options) error {
	if p.Prompt != "" && p.Kind != "endpoint" {
		return &fielderr.Error{Flag: "prompt", Value: p.Prompt, Reason: "only --policy endpoint reads a prompt"}
	}
	switch p.Kind {
	case "gridnet":
		if p.Checkpoint == "" {
			return &fielderr.Error{Reason: "--policy gridnet needs --checkpoint DIR"}
		}
		gp, id, err := LoadGridPolicy(p.Checkpoint, p.Device)
		if err != nil {
			return err
		}
		opt.Player, opt.PolicyID = gp, id
	case "scripted":
		if p.MistakeRate < 0 || p.MistakeRate > 1 {
			return &fielderr.Error{Reason: fmt.Sprintf("--mistake-rate %v out of range [0,1]", p.MistakeRate)}
		}
		opt.Player = &ScriptedPolicy{MistakeRate: p.MistakeRate}
		opt.PolicyID = fmt.Sprintf("scripted(mistake=%g,seed=%d)", p.MistakeRate, opt.Play.Seed)
		opt.Play.PerInstance = true
	case "rows-first":
		opt.Player, opt.PolicyID = evaluate.RowsFirst{}, "rows-first"
	case "endpoint":
		if p.URL == "" || p.Model == "" {
			return &fielderr.Error{Reason: "--policy endpoint needs --policy-url and --policy-model"}
		}
		o := textpolicy.ClientOptions{BaseURL: p.URL, Model: p.Model, MaxTokens: p.MaxTokens}
		id := fmt.Sprintf("endpoint(%s,%s)", p.URL, p.Model)
		if p.Prompt != "" { // another prompt, other answers: its own policy id, so caches do not mix
			var err error
			if o.Prompt, err = env.PromptStyle(p.Prompt); err != nil {
				return &fielderr.Error{Flag: "prompt", Value: p.Prompt, Reason: env.PromptStyleWant}
			}
			id = fmt.Sprintf("endpoint(%s,%s,prompt=%s)", p.URL, p.Model, p.Prompt)
		}
		c, err := textpolicy.NewClient(o)
		if err != nil {
			return &fielderr.Error{Err: err}
		}
		opt.Player, opt.PolicyID = c, id
	default:
		return &fielderr.Error{Reason: fmt.Sprintf("--policy %q: want gridnet, endpoint, scripted or rows-first", p.Kind)}
	}
	return nil
}
