package engineer

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/t2t-lab/t2t/env"
)

// ScoreOptions configure ScoreTurns.
type ScoreOptions struct {
	// Chat is the model scored (a textpolicy.EngineerChat over a
	// checkpoint, or an endpoint's ChatModel).
	Chat ChatModel
	// Temperature and MaxTokens are the llm strategy's (0 and 0: greedy,
	// the model's default cap).
	Temperature float64
	MaxTokens   int
	// Feasible is the generator's dry-run (env.CheckFeasible in a run).
	Feasible func(env.Config) error
}

// TurnScore is one scored turn.
type TurnScore struct {
	RunID   string
	Stage   int
	Context string
	// JSON: the answer holds a JSON object (ExtractJSON); Accepted: the
	// llm strategy's guardrails took it in one attempt (no fall-back).
	JSON, Accepted bool
	// Distance is ConfigDistance from the proposal to the teacher's config
	// (NaN when not accepted); Keep is the previous config's distance to
	// the teacher's (what a fall-back would give).
	Distance, Keep float64
	// Reason is the guardrails' verdict; Raw the model's answer.
	Reason, Raw string
}

// Scores summarises ScoreTurns.
type Scores struct {
	// Turns is the number scored; JSON and Accepted count the answers
	// holding a JSON object and those the guardrails accepted.
	Turns, JSON, Accepted int
	// Distance is the mean ConfigDistance of the accepted proposals to the
	// teacher's configs (NaN without any); Keep the mean distance of the
	// previous configs to the teacher's over every turn, the reference a
	// model that only copies the current config would reach.
	Distance, Keep float64
}

// JSONRate and AcceptedRate are JSON/Turns and Accepted/Turns (0 without turns).
func (s Scores) JSONRate() float64     { return ratio(s.JSON, s.Turns) }
func (s Scores) AcceptedRate() float64 { return ratio(s.Accepted, s.Turns) }

func ratio(k, n int) float64 {
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// ConfigDistance is how far config a is from b: the sum over b's sizes of
// |Δ data_ratio| + |Δ hole_ratio| + |Δ wait_ratio|, divided by the number
// of b's sizes (a size missing from a counts with zero ratios), plus 1 when
// the agent counts differ. 0 means the same ratios and agents; the data
// ratios alone add at most 2/sizes.
func ConfigDistance(a, b env.Config) float64 {
	if len(b.Sizes) == 0 {
		return 0
	}
	sum := 0.0
	for _, s := range b.Sizes {
		var o env.SizeConfig
		if j := slices.IndexFunc(a.Sizes, func(x env.SizeConfig) bool { return x.Size == s.Size }); j >= 0 {
			o = a.Sizes[j]
		}
		sum += math.Abs(o.DataRatio-s.DataRatio) + math.Abs(o.HoleRatio-s.HoleRatio) + math.Abs(o.WaitRatio-s.WaitRatio)
	}
	d := sum / float64(len(b.Sizes))
	if a.Agents != b.Agents {
		d++
	}
	return d
}

// ScoreTurns asks o.Chat each turn's context through the llm strategy
// exactly as a run would (the turn's modules and prompt style, its
// history, the guardrails: extraction, strict schema, the history's sizes,
// projection, feasibility), once, without retries, and scores the answers
// against the teacher's. A turn whose prompt no longer renders to its
// PromptHash (made by another version of the prompt) is an error wrapping
// ErrSchema; ctx stops it.
func ScoreTurns(ctx context.Context, turns []Turn, o ScoreOptions) (Scores, []TurnScore, error) {
	var sum Scores
	var out []TurnScore
	dist := 0.0
	for i, t := range turns {
		mods, err := ParseModules(t.Modules)
		if err != nil {
			return sum, nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
		base := t.History.Stages[0].Config
		lo := LLMOptions{Chat: o.Chat, Modules: mods, Prompt: t.Prompt, MaxRetries: -1, Temperature: o.Temperature, MaxTokens: o.MaxTokens, Backoff: -1}
		p, err := engPromptFor(t.History, lo, base)
		if err != nil {
			return sum, nil, fmt.Errorf("turn %d: %w", i+1, err)
		}
		if p.Hash != t.PromptHash || PromptHash(t.System, t.User) != t.PromptHash {
			return sum, nil, fmt.Errorf("turn %d (run %q stage %d): %w: its history renders to prompt %s, its messages hash to %s, not the recorded %s (made by another version; run t2t engineer turns again)",
				i+1, t.RunID, t.Stage, ErrSchema, p.Hash, PromptHash(t.System, t.User), t.PromptHash)
		}
		strat, err := NewLLM(Options{Base: &base, Feasible: o.Feasible, LLM: lo})
		if err != nil {
			return sum, nil, err
		}
		prop, err := strat.Propose(ctx, t.History)
		if err != nil {
			return sum, nil, err
		}
		ts := TurnScore{RunID: t.RunID, Stage: t.Stage, Context: t.Context, Accepted: !prop.Fallback, Distance: math.NaN(),
			Keep: ConfigDistance(t.Previous, t.Config)}
		if len(prop.Attempts) > 0 {
			a := prop.Attempts[0]
			ts.Raw, ts.Reason = a.Raw, a.Reason
			_, jerr := ExtractJSON(a.Raw)
			ts.JSON = jerr == nil && a.Raw != ""
		}
		sum.Turns++
		sum.Keep += ts.Keep
		if ts.JSON {
			sum.JSON++
		}
		if ts.Accepted {
			sum.Accepted++
			ts.Distance = ConfigDistance(prop.Config, t.Config)
			dist += ts.Distance
		}
		out = append(out, ts)
	}
	sum.Distance = math.NaN()
	if sum.Accepted > 0 {
		sum.Distance = dist / float64(sum.Accepted)
	}
	if sum.Turns > 0 {
		sum.Keep /= float64(sum.Turns)
	}
	return sum, out, nil
}
