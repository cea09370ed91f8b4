package engineer

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// RulesOptions holds the thresholds of the rules strategy.
type RulesOptions struct {
	// Low and High bound the middle band of the validation valid rate
	// where a size has the most to teach. Defaults 0.2 and 0.8.
	Low, High float64
	// NearZero is the valid rate below which a size counts as hopeless for
	// now. Default 0.05.
	NearZero float64
	// FocusWeight is the data weight of a size in the band, NearZeroWeight
	// that of a near-zero size; other sizes weigh 1. Defaults 3 and 0.5.
	FocusWeight, NearZeroWeight float64
	// Keep is the share of the previous data ratios kept: new = Keep·prev +
	// (1−Keep)·target. Default 0.5.
	Keep float64
	// Step is the change of a hole or wait ratio per stage. Default 0.05.
	Step float64
	// DominantShare is the share of a failure category (hole collisions,
	// conflicts) among a size's failures above which it names the knob to
	// lower. Default 0.25.
	DominantShare float64
	// MinDataRatio is the least data ratio of every size that can hold the
	// agents. Default 0.02.
	MinDataRatio float64
	// MinEpisodes is the least training episodes of a size for its training
	// statistics to steer the hole and wait ratios (else validation steers).
	// Default 20.
	MinEpisodes int64
}

// DefaultRulesOptions returns the documented defaults.
func DefaultRulesOptions() RulesOptions {
	return RulesOptions{Low: 0.2, High: 0.8, NearZero: 0.05, FocusWeight: 3, NearZeroWeight: 0.5,
		Keep: 0.5, Step: 0.05, DominantShare: 0.25, MinDataRatio: 0.02, MinEpisodes: 20}
}

// Validate checks the options' ranges; errors wrap ErrOptions.
func (o RulesOptions) Validate() error {
	bad := func(field string, v any, reason string) error {
		return fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "rules." + field, Value: v, Reason: reason})
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"low", o.Low}, {"high", o.High}, {"near_zero", o.NearZero}, {"keep", o.Keep}, {"step", o.Step}, {"dominant_share", o.DominantShare}, {"min_data_ratio", o.MinDataRatio}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > 1 {
			return bad(f.name, f.v, "must be in [0,1]")
		}
	}
	if !(o.NearZero <= o.Low && o.Low <= o.High) {
		return bad("low", o.Low, "want near_zero <= low <= high")
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"focus_weight", o.FocusWeight}, {"near_zero_weight", o.NearZeroWeight}} {
		if math.IsNaN(f.v) || math.IsInf(f.v, 0) || f.v <= 0 {
			return bad(f.name, f.v, "must be a positive finite number")
		}
	}
	if o.MinEpisodes < 0 {
		return bad("min_episodes", o.MinEpisodes, "must be >= 0")
	}
	return nil
}

// Rules is a hand-written curriculum over the failure breakdown F.
//
// Data: each size's validation valid rate p decides its weight:
// FocusWeight in the band [Low, High], NearZeroWeight below NearZero, 1
// otherwise (mastered sizes keep data so that nothing is forgotten; sizes
// without validation episodes weigh 1). The new data ratios are
// Keep·previous + (1−Keep)·(weights normalised), then mixed with a uniform
// floor of MinDataRatio.
//
// Difficulty: the valid rate that steers a size's hole and wait ratios is
// the training one (the stage's own instances, generated with those very
// ratios) when the size had MinEpisodes training episodes, else the
// validation one. At or above High both ratios rise by Step. Below
// NearZero both fall by 2·Step. Below Low, the failure categories choose:
// hole_ratio falls by Step when hole collisions are at least DominantShare
// of the failures, wait_ratio when conflicts are; when neither dominates
// both fall by Step. In between nothing changes. Ratios are clipped to
// [0, Limits.HoleMax] and [0, Limits.WaitMax].
//
// Agent range: in a config with one (agents_max above agents), the most
// agents the last stage trained decide it, by their training valid rate
// (when they had MinEpisodes episodes). At or above High the range widens
// by one count (agents_max + 1, up to the largest size and env.MaxAgents);
// below NearZero it narrows by one, down to two counts (agents + 1), so
// that it can widen again. The fewest agents never change (their data is
// what keeps the skill), and a config without a range keeps its one count:
// only the user starts a range. When the new config is infeasible, the
// partial steps back to the previous one keep the previous range.
type Rules struct {
	opts   Options
	ro     RulesOptions
	limits Limits
}

// NewRules returns the rules strategy; bad options wrap ErrOptions.
func NewRules(opts Options) (*Rules, error) {
	ro := DefaultRulesOptions()
	if opts.Rules != nil {
		ro = *opts.Rules
	}
	if err := ro.Validate(); err != nil {
		return nil, err
	}
	l, err := opts.limits()
	if err != nil {
		return nil, err
	}
	return &Rules{opts: opts, ro: ro, limits: l}, nil
}

// Name returns "rules".
func (*Rules) Name() string { return NameRules }

// Propose applies the rules to the last stage.
func (r *Rules) Propose(ctx context.Context, h *History) (Proposal, error) {
	if err := engCtxErr(ctx); err != nil {
		return Proposal{}, err
	}
	prev := engPrevious(h, r.opts.base())
	last := h.Last()
	if last == nil {
		return engSettle(prev, prev, r.opts.Feasible, "rules: no stage yet, base config"), nil
	}
	cand := prev.Clone()
	weights := make([]float64, len(cand.Sizes))
	var notes []string
	for i := range cand.Sizes {
		s := &cand.Sizes[i]
		v, _ := engStats(last.Val, s.Size)
		note := fmt.Sprintf("size %d:", s.Size)
		weights[i] = 1
		if v.Episodes > 0 {
			p := v.ValidRate()
			switch {
			case p >= r.ro.Low && p <= r.ro.High:
				weights[i] = r.ro.FocusWeight
				note += fmt.Sprintf(" val valid %.2f in band, more data;", p)
			case p < r.ro.NearZero:
				weights[i] = r.ro.NearZeroWeight
				note += fmt.Sprintf(" val valid %.2f near zero, less data;", p)
			default:
				note += fmt.Sprintf(" val valid %.2f outside the band;", p)
			}
		} else {
			note += " no validation data;"
		}
		d, split, ok := engDifficultyStats(last, s.Size, r.ro.MinEpisodes)
		if !ok {
			notes = append(notes, note+" difficulty kept (no data)")
			continue
		}
		p := d.ValidRate()
		dh, dw := 0.0, 0.0
		switch {
		case p >= r.ro.High:
			dh, dw = r.ro.Step, r.ro.Step
		case p < r.ro.NearZero:
			dh, dw = -2*r.ro.Step, -2*r.ro.Step
		case p < r.ro.Low:
			total := int64(0)
			for _, n := range d.Categories {
				total += n
			}
			holeShare := engRate(d.Categories[env.CategoryHole], total)
			confShare := engRate(d.Categories[env.CategoryConflict], total)
			if holeShare >= r.ro.DominantShare {
				dh = -r.ro.Step
			}
			if confShare >= r.ro.DominantShare {
				dw = -r.ro.Step
			}
			if dh == 0 && dw == 0 {
				dh, dw = -r.ro.Step, -r.ro.Step
			}
		}
		s.HoleRatio = engClip(s.HoleRatio+dh, 0, r.limits.HoleMax)
		s.WaitRatio = engClip(s.WaitRatio+dw, 0, r.limits.WaitMax)
		notes = append(notes, note+fmt.Sprintf(" %s valid %.2f, hole %+.2f, wait %+.2f", split, p, dh, dw))
	}
	engMixData(&cand, prev, weights, r.ro.Keep, r.ro.MinDataRatio)
	if note := r.moveRange(&cand, last); note != "" {
		notes = append(notes, note)
	}
	return engSettle(prev, cand, r.opts.Feasible, "rules: "+strings.Join(notes, "; ")), nil
}

// moveRange widens or narrows c's agent range by one count from the
// training valid rate of its most agents in last (see Rules), and says
// what it did ("" when c has no range or the rate says nothing).
func (r *Rules) moveRange(c *env.Config, last *StageResult) string {
	if !c.HasAgentRange() {
		return ""
	}
	var top AgentStats
	for _, a := range last.TrainByAgents {
		if a.Agents == c.AgentsMax {
			top = a
		}
	}
	if top.Episodes < max(r.ro.MinEpisodes, 1) {
		return ""
	}
	largest := 0
	for _, s := range c.Sizes {
		largest = max(largest, s.Size)
	}
	p := engRate(top.Valid, top.Episodes)
	from := c.AgentsMax
	switch {
	case p >= r.ro.High && c.AgentsMax < min(largest, env.MaxAgents):
		c.AgentsMax++
	case p < r.ro.NearZero && c.AgentsMax > c.Agents+1:
		c.AgentsMax--
	default:
		return fmt.Sprintf("agents %d: train valid %.2f, range %d..%d kept", from, p, c.Agents, from)
	}
	return fmt.Sprintf("agents %d: train valid %.2f, range %d..%d → %d..%d", from, p, c.Agents, from, c.Agents, c.AgentsMax)
}

// engDifficultyStats returns the statistics that steer a size's hole and
// wait ratios: training when it has at least minEp episodes, else
// validation when it has any.
func engDifficultyStats(last *StageResult, size int, minEp int64) (SizeStats, string, bool) {
	if t, ok := engStats(last.Train, size); ok && t.Episodes >= max(minEp, 1) {
		return t, "train", true
	}
	if v, ok := engStats(last.Val, size); ok && v.Episodes > 0 {
		return v, "val", true
	}
	return SizeStats{}, "", false
}

// engMixData sets c's data ratios to keep·prev + (1−keep)·w/Σw over the
// sizes that can hold c.Agents, mixed with a uniform floor: ratio = floor +
// (1 − m·floor)·mix for the m eligible sizes (uniform when m·floor >= 1).
// Ineligible sizes get 0.
func engMixData(c *env.Config, prev env.Config, w []float64, keep, floor float64) {
	m, wsum, psum := 0, 0.0, 0.0
	for i, s := range c.Sizes {
		if s.Size >= c.Agents {
			m++
			wsum += w[i]
			psum += prev.Sizes[i].DataRatio
		}
	}
	if m == 0 {
		return // Project will handle it
	}
	if float64(m)*floor >= 1 {
		floor = 1 / float64(m)
	}
	for i := range c.Sizes {
		s := &c.Sizes[i]
		if s.Size < c.Agents {
			s.DataRatio = 0
			continue
		}
		target := 1 / float64(m)
		if wsum > 0 {
			target = w[i] / wsum
		}
		p := 1 / float64(m)
		if psum > 0 {
			p = prev.Sizes[i].DataRatio / psum
		}
		s.DataRatio = floor + (1-float64(m)*floor)*(keep*p+(1-keep)*target)
	}
}

// engClip clips v to [lo, hi] (NaN to lo).
func engClip(v, lo, hi float64) float64 {
	if math.IsNaN(v) || v < lo {
		return lo
	}
	return min(v, hi)
}
