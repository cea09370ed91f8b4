package engineer

import (
	"context"
	"encoding/json"
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
	// Retries are the further attempts after a rejected answer (0: none, the first answer
	// alone is scored), made as Retry and RetryTemperature say (LLMOptions).
	Retries          int
	Retry            string
	RetryTemperature float64
	// Feasible is the generator's dry-run (env.CheckFeasible in a run).
	Feasible func(env.Config) error
}

// TurnScore is one scored turn.
type TurnScore struct {
	RunID   string
	Stage   int
	Context string
	// JSON: the first answer holds a JSON object (ExtractJSON); Accepted:
	// the llm strategy's guardrails took an answer (no fall-back), the
	// first or, with ScoreOptions.Retries, a retry's; Attempts: the answers
	// asked for.
	JSON, Accepted bool
	Attempts       int
	// Distance is ConfigDistance from the proposal to the teacher's config
	// (NaN when not accepted); Keep is the previous config's distance to
	// the teacher's (what a fall-back would give).
	Distance, Keep float64
	// Reason is the guardrails' verdict; Raw the model's answer.
	Reason, Raw string
}

// Scores summarises ScoreTurns.
type Scores struct {
	// Turns is the number scored; JSON and Accepted count the first
	// answers holding a JSON object and the turns whose proposal the
	// guardrails accepted, OnRetry those of them accepted after a retry.
	Turns, JSON, Accepted, OnRetry int
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
// the agent counts (or ranges, AgentRange) differ. 0 means the same ratios
// and agents; the data ratios alone add at most 2/sizes.
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
	if a.AgentsText() != b.AgentsText() {
		d++
	}
	return d
}

// ScoreTurns asks o.Chat each turn's context through the llm strategy
// exactly as a run would (the turn's modules and prompt style, its
// history, the guardrails: extraction, strict schema, the history's sizes,
// projection, feasibility), once or with o.Retries retries, and scores the
// answers against the teacher's. A turn whose prompt no longer renders to its
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
		lo := LLMOptions{Chat: o.Chat, Modules: mods, Prompt: t.Prompt, MaxRetries: ExactRetries(o.Retries), Temperature: o.Temperature, MaxTokens: o.MaxTokens,
			Retry: o.Retry, RetryTemperature: o.RetryTemperature, Backoff: -1}
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
		ts := TurnScore{RunID: t.RunID, Stage: t.Stage, Context: t.Context, Accepted: !prop.Fallback, Attempts: len(prop.Attempts),
			Distance: math.NaN(), Keep: ConfigDistance(t.Previous, t.Config)}
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
			if ts.Attempts > 1 {
				sum.OnRetry++
			}
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

// ScoredTurns are the turns ScoreTurns is given by `t2t engineer score`:
// the held-out ones, or every turn with all.
func ScoredTurns(turns []Turn, all bool) []Turn {
	var pick []Turn
	for _, t := range turns {
		if all || t.HeldOut {
			pick = append(pick, t)
		}
	}
	return pick
}

// TurnStats counts the held-out turns and the turns' mean prompt length in
// ApproxTokens (0 without turns).
func TurnStats(turns []Turn) (heldOut, meanTokens int) {
	tokens := 0
	for _, t := range turns {
		if t.HeldOut {
			heldOut++
		}
		tokens += ApproxTokens(t.System) + ApproxTokens(t.User)
	}
	if len(turns) > 0 {
		meanTokens = tokens / len(turns)
	}
	return heldOut, meanTokens
}

// Verdict is one line on the turn: "rejected" or "accepted, distance D".
func (p TurnScore) Verdict() string {
	if p.Accepted {
		return fmt.Sprintf("accepted, distance %.3f", p.Distance)
	}
	return "rejected"
}

// Summary is the scores in one line: valid JSON, accepted and distance.
func (s Scores) Summary() string {
	dist := "n/a"
	if !math.IsNaN(s.Distance) {
		dist = fmt.Sprintf("%.3f", s.Distance)
	}
	retried := ""
	if s.OnRetry > 0 {
		retried = fmt.Sprintf(", %d of them on a retry", s.OnRetry)
	}
	return fmt.Sprintf("valid JSON %.1f%% (%d/%d), accepted by the guardrails %.1f%% (%d/%d%s), distance to the teacher's config %s (accepted proposals; keeping the previous config: %.3f)",
		100*s.JSONRate(), s.JSON, s.Turns, 100*s.AcceptedRate(), s.Accepted, s.Turns, retried, dist, s.Keep)
}

// ScoreReport is `t2t engineer score --json`'s document: what was scored,
// the summary and every turn's score. Its JSON writes a NaN distance as
// null.
type ScoreReport struct {
	Model, Contexts, Scored string
	Scores                  Scores
	PerTurn                 []TurnScore
}

// MarshalJSON writes the report with snake_case keys, the rates
// included and each NaN distance as null.
func (r ScoreReport) MarshalJSON() ([]byte, error) {
	type turnJSON struct {
		RunID    string   `json:"run_id"`
		Stage    int      `json:"stage"`
		Context  string   `json:"context"`
		JSON     bool     `json:"json"`
		Accepted bool     `json:"accepted"`
		Attempts int      `json:"attempts"`
		Distance *float64 `json:"distance"`
		Keep     float64  `json:"keep"`
		Reason   string   `json:"reason"`
		Raw      string   `json:"raw"`
	}
	rows := make([]turnJSON, len(r.PerTurn))
	for i, p := range r.PerTurn {
		rows[i] = turnJSON{RunID: p.RunID, Stage: p.Stage, Context: p.Context, JSON: p.JSON, Accepted: p.Accepted,
			Attempts: p.Attempts, Distance: nullNaN(p.Distance), Keep: p.Keep, Reason: p.Reason, Raw: p.Raw}
	}
	sc := r.Scores
	return json.Marshal(map[string]any{"model": r.Model, "contexts": r.Contexts, "scored": r.Scored,
		"turns": sc.Turns, "json": sc.JSON, "accepted": sc.Accepted, "accepted_on_retry": sc.OnRetry, "json_rate": sc.JSONRate(), "accepted_rate": sc.AcceptedRate(),
		"distance": nullNaN(sc.Distance), "keep_distance": sc.Keep, "per_turn": rows})
}

func nullNaN(v float64) *float64 {
	if math.IsNaN(v) {
		return nil
	}
	return &v
}
