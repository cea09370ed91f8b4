package engineer

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// Strategy proposes the next stage's generator config from the history.
//
// Propose returns an error only when ctx is cancelled (the error wraps
// ctx.Err()); every other trouble gives a Proposal that keeps the previous
// config (Fallback set) with a rationale saying why. The proposal's config
// passes env.Config.Validate. Implementations are safe for concurrent use.
type Strategy interface {
	Name() string
	Propose(ctx context.Context, h *History) (Proposal, error)
}

// Strategy names accepted by ParseStrategy.
const (
	NameFixed        = "fixed"
	NameRandom       = "random"
	NameRules        = "rules"
	NameLearnability = "learnability"
	NameLLM          = "llm"
)

// StrategyNames lists the strategy names in a fixed order.
func StrategyNames() []string {
	return []string{NameFixed, NameRandom, NameRules, NameLearnability, NameLLM}
}

// Limits bounds the hole and wait ratios that the random, rules and
// learnability strategies write (the llm strategy is bounded only by the
// projection onto [0,1]).
type Limits struct {
	// HoleMax is the largest hole ratio written. Default 0.5, the top of
	// the paper's evaluation range.
	HoleMax float64
	// WaitMax is the largest wait ratio written. Default 0.8, a little
	// above the evaluation's hardest subset (0.75).
	WaitMax float64
}

// DefaultLimits returns HoleMax 0.5, WaitMax 0.8.
func DefaultLimits() Limits { return Limits{HoleMax: 0.5, WaitMax: 0.8} }

// Validate checks both bounds are in [0,1].
func (l Limits) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
	}{{"limits.hole_max", l.HoleMax}, {"limits.wait_max", l.WaitMax}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: f.name, Value: f.v, Reason: "must be in [0,1]"})
		}
	}
	return nil
}

// Options configures the strategies. The zero value is usable for fixed,
// random, rules and learnability; llm needs LLM.BaseURL and LLM.Model.
type Options struct {
	// Seed seeds the random strategy (with the stage index as the stream).
	Seed uint64
	// Base is the config when the history has no stage yet. Nil:
	// env.DefaultConfig().
	Base *env.Config
	// Feasible is the generator's feasibility dry-run: nil accepts every
	// valid config. Strategies never propose a config it rejects (they
	// back off toward the previous config, and keep that one at worst).
	// LLM.Feasible, when set, takes precedence for the llm strategy.
	Feasible func(env.Config) error
	// Limits bounds the hole and wait ratios of random, rules and
	// learnability. Nil: DefaultLimits().
	Limits *Limits
	// Rules and Learnability configure those strategies. Nil: defaults.
	Rules        *RulesOptions
	Learnability *LearnabilityOptions
	// LLM configures the llm strategy.
	LLM LLMOptions
	// Logger receives the strategies' logs. Nil: discarded.
	Logger *slog.Logger
}

func (o Options) base() env.Config {
	if o.Base != nil {
		return o.Base.Clone() // engPrevious projects it should it be invalid
	}
	return env.DefaultConfig()
}

func (o Options) limits() (Limits, error) {
	l := DefaultLimits()
	if o.Limits != nil {
		l = *o.Limits
	}
	return l, l.Validate()
}

func (o Options) logger() *slog.Logger {
	if o.Logger != nil {
		return o.Logger
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// ParseStrategy builds the strategy called name (see StrategyNames) from
// opts. Unknown names wrap ErrUnknownStrategy; bad options wrap ErrOptions.
func ParseStrategy(name string, opts Options) (Strategy, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case NameFixed:
		return NewFixed(opts), nil
	case NameRandom:
		return NewRandom(opts)
	case NameRules:
		return NewRules(opts)
	case NameLearnability:
		return NewLearnability(opts)
	case NameLLM:
		return NewLLM(opts)
	}
	return nil, fmt.Errorf("%w: %q (want one of %s)", ErrUnknownStrategy, name, strings.Join(StrategyNames(), ", "))
}

// engCtxErr wraps a context error for Propose.
func engCtxErr(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("engineer: propose: %w", err)
	}
	return nil
}

// engFallback keeps prev with reason.
func engFallback(prev env.Config, reason string, attempts []Attempt) Proposal {
	return Proposal{Config: prev.Clone(), Rationale: "kept the previous config: " + reason, Attempts: attempts, Fallback: true}
}

// engBlend moves from prev toward cand by t in [0,1], per size and ratio;
// sizes missing from prev keep cand's values. Agents and instances follow
// cand, agents_max only at t = 1 (a range moves by whole counts).
func engBlend(prev, cand env.Config, t float64) env.Config {
	out := cand.Clone()
	if t < 1 {
		out.AgentsMax = prev.AgentsMax
	}
	for i := range out.Sizes {
		s := &out.Sizes[i]
		j := slices.IndexFunc(prev.Sizes, func(p env.SizeConfig) bool { return p.Size == s.Size })
		if j < 0 {
			continue
		}
		p := prev.Sizes[j]
		s.DataRatio = p.DataRatio + t*(s.DataRatio-p.DataRatio)
		s.HoleRatio = p.HoleRatio + t*(s.HoleRatio-p.HoleRatio)
		s.WaitRatio = p.WaitRatio + t*(s.WaitRatio-p.WaitRatio)
	}
	return out
}

// engSettle turns a heuristic strategy's candidate into a proposal: the
// candidate is projected and dry-run through feasible; when rejected, the
// configs halfway and a quarter of the way from prev to the candidate are
// tried, then prev is kept. Every try is an Attempt.
func engSettle(prev, cand env.Config, feasible func(env.Config) error, rationale string) Proposal {
	var atts []Attempt
	for _, t := range []float64{1, 0.5, 0.25} {
		c := engBlend(prev, cand, t)
		proj := c.Project()
		a := Attempt{Parsed: engConfigJSON(c), Projected: engConfigJSON(proj)}
		if feasible != nil {
			if err := feasible(proj); err != nil {
				a.Reason = fmt.Sprintf("infeasible (step %.2f of the way from the previous config): %v", t, err)
				atts = append(atts, a)
				continue
			}
		}
		a.Accepted = true
		a.Reason = "accepted"
		r := rationale
		if t < 1 {
			a.Reason = fmt.Sprintf("accepted at step %.2f of the way from the previous config", t)
			r += fmt.Sprintf(" (the full change was infeasible; took %.0f%% of it)", 100*t)
		}
		atts = append(atts, a)
		return Proposal{Config: proj, Rationale: r, Attempts: atts}
	}
	return engFallback(prev, "every candidate failed the feasibility check: "+atts[0].Reason, atts)
}
