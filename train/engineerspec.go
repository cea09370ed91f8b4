package train

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"strconv"
	"strings"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Engineer targets of EngineerSpec.Target besides an endpoint URL.
const (
	// EngineerSelf: the policy being trained answers the engineer prompt
	// (the default for an LLM policy).
	EngineerSelf = "self"
	// EngineerBase: a frozen copy of the starting checkpoint answers it.
	EngineerBase = "base"
)

// EngineerSpec says which engineer proposes each next stage's config, and
// how: a strategy, and for the llm strategy who answers the prompt.
type EngineerSpec struct {
	// Strategy is one of engineer.StrategyNames.
	Strategy string
	// Seed seeds the random strategy and the engineer's sampling.
	Seed uint64
	// Target (llm only) is EngineerSelf, EngineerBase or an
	// OpenAI-compatible base URL; empty means EngineerSelf for an LLM
	// policy and is an error otherwise.
	Target string
	// Model is the model name at a Target URL; APIKey its key (may be empty).
	Model, APIKey string
	// Modules are the prompt's context modules (engineer.ParseModules);
	// Prompt the prompt style, engineer.PromptFull ("" too) or
	// engineer.PromptCompact.
	Modules string
	Prompt  string
	// MaxTokens bounds an answer (0: the engineer's default), Temperature
	// is in [0, 2], Retries ≥ 0 further attempts after a rejected answer,
	// Thinking lets a self or base engineer think before its JSON.
	MaxTokens   int
	Temperature float64
	Retries     int
	Thinking    bool
	// Retry and RetryTemperature are what follows a rejected answer (ParseRetry).
	Retry            string
	RetryTemperature float64
	// BaseModel and Engine open the frozen copy for EngineerBase.
	BaseModel string
	Engine    engine.Spec
	Logger    *slog.Logger
}

// NewEngineer builds spec's strategy over base (the stage-0 config) for a
// run that trains pol (nil: none, as in t2t engineer propose). close
// releases what it opened (a self or base engineer's model). Bad settings
// are *fielderr.Error naming the flag-style field; opening BaseModel fails as
// EngineError says.
func NewEngineer(ctx context.Context, spec EngineerSpec, base *env.Config, pol Policy) (engineer.Strategy, func() error, error) {
	closer := func() error { return nil }
	eo := engineer.Options{Seed: spec.Seed, Base: base, Feasible: env.CheckFeasible, Logger: spec.Logger}
	if spec.Strategy == engineer.NameLLM {
		lo, c, err := llmEngineer(ctx, spec, pol)
		if err != nil {
			return nil, nil, err
		}
		eo.LLM, closer = lo, c
	}
	strat, err := engineer.ParseStrategy(spec.Strategy, eo)
	if err != nil {
		_ = closer()
		return nil, nil, &fielderr.Error{Kind: ErrOptions, Flag: "strategy", Value: spec.Strategy, Reason: err.Error()}
	}
	return strat, closer, nil
}

// llmEngineer checks the llm strategy's settings and connects its chat.
func llmEngineer(ctx context.Context, spec EngineerSpec, pol Policy) (engineer.LLMOptions, func() error, error) {
	noop := func() error { return nil }
	mods, err := engineer.ParseModules(spec.Modules)
	if err != nil {
		return engineer.LLMOptions{}, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer-modules", Value: spec.Modules, Reason: err.Error()}
	}
	style, err := engineer.ParsePromptStyle(spec.Prompt)
	if err != nil {
		return engineer.LLMOptions{}, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer-prompt", Value: spec.Prompt, Reason: "want full or compact"}
	}
	switch {
	case spec.MaxTokens < 0:
		return engineer.LLMOptions{}, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer-max-tokens", Value: spec.MaxTokens, Reason: "must be ≥ 0"}
	case math.IsNaN(spec.Temperature) || spec.Temperature < 0 || spec.Temperature > 2:
		return engineer.LLMOptions{}, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer-temperature", Value: spec.Temperature, Reason: "must be in [0, 2]"}
	case spec.Retries < 0:
		return engineer.LLMOptions{}, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer-retries", Value: spec.Retries, Reason: "must be ≥ 0"}
	}
	retry, retryTemp, err := ParseRetry(spec.Retry, spec.RetryTemperature, "engineer-retry")
	if err != nil {
		return engineer.LLMOptions{}, nil, err
	}
	lo := engineer.LLMOptions{Modules: mods, Prompt: style, MaxTokens: spec.MaxTokens, Temperature: spec.Temperature, MaxRetries: engineer.ExactRetries(spec.Retries),
		Retry: retry, RetryTemperature: retryTemp}
	tp, isLM := pol.(LMPolicy)
	target := spec.Target
	if target == "" {
		if !isLM {
			return lo, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer", Value: `""`, Reason: "--strategy llm with a non-LLM policy needs --engineer URL (an OpenAI-compatible endpoint) and --engineer-model; self and base need --policy qwen3"}
		}
		target = EngineerSelf
	}
	switch target {
	case EngineerSelf:
		if isLM {
			lo.Chat = &textpolicy.EngineerChat{LM: tp.LM(), Label: func() string { return fmt.Sprintf("self@v%d", tp.Version()) }, Thinking: spec.Thinking, Seed: spec.Seed}
			return lo, noop, nil
		}
		if spec.BaseModel == "" {
			return lo, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer", Value: target, Reason: "needs --policy qwen3 (the policy being trained answers the engineer prompt), or offline --model DIR"}
		}
		// No policy in this process (t2t engineer propose): the checkpoint
		// BaseModel is the current policy.
		return openEngineerLM(ctx, spec, lo, "self@"+spec.BaseModel)
	case EngineerBase:
		if spec.BaseModel == "" {
			return lo, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer", Value: target, Reason: "needs --policy qwen3 --model DIR (a frozen copy of the starting checkpoint answers the engineer prompt)"}
		}
		return openEngineerLM(ctx, spec, lo, "base@"+spec.BaseModel)
	}
	if spec.Model == "" {
		return lo, nil, &fielderr.Error{Kind: ErrOptions, Flag: "engineer-model", Value: `""`, Reason: fmt.Sprintf("--engineer %s needs --engineer-model (the model name at that endpoint)", target)}
	}
	lo.BaseURL, lo.Model, lo.APIKey = target, spec.Model, spec.APIKey
	return lo, noop, nil
}

// openEngineerLM opens spec.BaseModel as the engineer's chat model.
func openEngineerLM(ctx context.Context, spec EngineerSpec, lo engineer.LLMOptions, label string) (engineer.LLMOptions, func() error, error) {
	lm, err := textpolicy.OpenLM(ctx, spec.Engine, spec.BaseModel)
	if err != nil {
		return lo, nil, EngineError("model", err)
	}
	lo.Chat = &textpolicy.EngineerChat{LM: lm, Label: func() string { return label }, Thinking: spec.Thinking, Seed: spec.Seed}
	return lo, lm.Close, nil
}

// ProposeNext asks spec's strategy (NewEngineer over base, no policy) for
// h's next config, as `t2t engineer propose` does, and writes the proposal
// to w (engineer.WriteProposal: its diff from h's last config, or from base
// when h has no stage). Its errors are NewEngineer's and the strategy's.
func ProposeNext(ctx context.Context, spec EngineerSpec, base env.Config, h *engineer.History, w io.Writer) (engineer.Proposal, error) {
	strat, closeEng, err := NewEngineer(ctx, spec, &base, nil)
	if err != nil {
		return engineer.Proposal{}, err
	}
	defer closeEng()
	prop, err := strat.Propose(ctx, h)
	if err != nil {
		return engineer.Proposal{}, err
	}
	prev := base
	if last := h.Last(); last != nil {
		prev = last.Config
	}
	return prop, engineer.WriteProposal(w, strat.Name(), h.NextStage(), prop, prev)
}

// ParseRetry checks an engineer LLM's retry mode (the flag named flag, e.g. engineer-retry:
// engineer.RetryConversation, "" too, or engineer.RetryResample) and the temperature of its
// resampled retries (flag-temperature, in (0, 2]). It returns them normalised: a conversation
// is "" at 0 (the temperature is unused there), as the settings of runs made before the flags.
func ParseRetry(mode string, temperature float64, flag string) (string, float64, error) {
	switch strings.ToLower(strings.TrimSpace(mode)) {
	case "", engineer.RetryConversation:
		return "", 0, nil
	case engineer.RetryResample:
		if math.IsNaN(temperature) || temperature <= 0 || temperature > 2 {
			return "", 0, &fielderr.Error{Kind: ErrOptions, Flag: flag + "-temperature", Value: temperature,
				Reason: "must be in (0, 2] for resampled retries (at 0 each retry repeats the first answer)"}
		}
		return engineer.RetryResample, temperature, nil
	}
	return "", 0, &fielderr.Error{Kind: ErrOptions, Flag: flag, Value: strconv.Quote(mode), Reason: "want conversation or resample"}
}
