package engineer

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// LearnabilityOptions configures the learnability strategy.
type LearnabilityOptions struct {
	// OptimalWeight w in [0,1] blends the two learnabilities of a size:
	// (1−w)·v(1−v) + w·o(1−o) with v the valid and o the optimal rate (see
	// Learnability). Default 0.5.
	OptimalWeight float64
	// Floor is the least data ratio of every size that can hold the
	// agents, so that no size vanishes. Default 0.03.
	Floor float64
	// UncertaintyBonus c adds c/sqrt(n+1) to the learnability of a size
	// with n validation episodes. Default 0.25 (an unmeasured size then
	// scores above every measured one).
	UncertaintyBonus float64
	// Target is the valid rate that the hole and wait ratios steer toward,
	// Tolerance the half-width of the band around it where they stay.
	// Defaults 0.5 and 0.1.
	Target, Tolerance float64
	// Gain scales the distance to Target into a step of the hole and wait
	// ratios; MaxStep bounds the step. Defaults 0.5 and 0.1.
	Gain, MaxStep float64
	// MinEpisodes is the least training episodes of a size for its training
	// statistics to steer (else validation steers). Default 20.
	MinEpisodes int64
	// ColdStart is the valid rate that at least one size must reach before
	// any hole or wait ratio is lowered. Below it everywhere, the policy
	// fails because it has not learned yet, not because the instances are
	// hard: easier instances do not give its groups a signal any sooner,
	// and training on them delays the harder instances that transfer to
	// more agents. Default 0.2; 0 turns the guard off.
	ColdStart float64
	// Progress is the rise of a size's valid rate since the stage before
	// at or above which its hole and wait ratios are not lowered: the
	// policy is learning at this difficulty, so easing it would only take
	// away what it is learning from. Default 0.05; 0 turns the guard off.
	Progress float64
}

// DefaultLearnabilityOptions returns the documented defaults.
func DefaultLearnabilityOptions() LearnabilityOptions {
	return LearnabilityOptions{OptimalWeight: 0.5, Floor: 0.03, UncertaintyBonus: 0.25,
		Target: 0.5, Tolerance: 0.1, Gain: 0.5, MaxStep: 0.1, MinEpisodes: 20, ColdStart: 0.2, Progress: 0.05}
}

// Validate checks the options' ranges; errors wrap ErrOptions.
func (o LearnabilityOptions) Validate() error {
	for _, f := range []struct {
		name string
		v    float64
		hi   float64
	}{{"optimal_weight", o.OptimalWeight, 1}, {"floor", o.Floor, 1}, {"uncertainty_bonus", o.UncertaintyBonus, 10},
		{"target", o.Target, 1}, {"tolerance", o.Tolerance, 1}, {"gain", o.Gain, 10}, {"max_step", o.MaxStep, 1},
		{"cold_start", o.ColdStart, 1}, {"progress", o.Progress, 1}} {
		if math.IsNaN(f.v) || f.v < 0 || f.v > f.hi {
			return fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "learnability." + f.name, Value: f.v, Reason: fmt.Sprintf("must be in [0,%g]", f.hi)})
		}
	}
	if o.MinEpisodes < 0 {
		return fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "learnability.min_episodes", Value: o.MinEpisodes, Reason: "must be >= 0"})
	}
	return nil
}

// Learnability is the curriculum of the unsupervised-environment-design
// literature (SFL: sample levels by learnability p(1−p)) adapted to the
// generator config.
//
// Data: a size's learnability is SFL's p(1−p) for two kinds of success,
// blended: (1−w)·v(1−v) + w·o(1−o), with v its validation valid rate, o its
// validation optimal rate and w = OptimalWeight. A valid answer is the
// first level of the reward and an optimal one the top level; GRPO
// normalises advantages by the group's spread, so a size whose answers are
// all valid still teaches while only some are optimal, and the paper
// reports both rates. Rates are smoothed as (k+0.5)/(n+1), and
// UncertaintyBonus/sqrt(n+1) is added for a size with n validation
// episodes. The data ratios are Floor + (1 − m·Floor)·score/Σscore over the
// m sizes that can hold the agents.
//
// Difficulty: each size's hole and wait ratios move together by
// clamp(Gain·(p − Target), ±MaxStep) when the valid rate p is more than
// Tolerance away from Target, clipped to the Limits. p is the training
// valid rate of the last stage (measured on instances generated with those
// very ratios) when the size had MinEpisodes training episodes, else the
// validation valid rate; without either the ratios stay. A step down is
// skipped while no size's p reaches ColdStart (the policy has not started
// to learn), and for a size whose p rose by Progress or more since the
// stage before (it is learning at this difficulty); see
// LearnabilityOptions. Steps up are never held back.
type Learnability struct {
	opts   Options
	lo     LearnabilityOptions
	limits Limits
}

// NewLearnability returns the learnability strategy; bad options wrap
// ErrOptions.
func NewLearnability(opts Options) (*Learnability, error) {
	lo := DefaultLearnabilityOptions()
	if opts.Learnability != nil {
		lo = *opts.Learnability
	}
	if err := lo.Validate(); err != nil {
		return nil, err
	}
	l, err := opts.limits()
	if err != nil {
		return nil, err
	}
	return &Learnability{opts: opts, lo: lo, limits: l}, nil
}

// Name returns "learnability".
func (*Learnability) Name() string { return NameLearnability }

// Score returns the learnability score of a size with validation stats s
// (see Learnability).
func (l *Learnability) Score(s SizeStats) float64 {
	n := float64(max(s.Episodes, 0))
	valid := min(max(float64(s.Valid), 0), n)
	opt := min(max(float64(s.Optimal), 0), valid)
	v := (valid + 0.5) / (n + 1)
	o := (opt + 0.5) / (n + 1)
	w := l.lo.OptimalWeight
	return (1-w)*v*(1-v) + w*o*(1-o) + l.lo.UncertaintyBonus/math.Sqrt(n+1)
}

// Propose allocates data by learnability and steers difficulty.
func (l *Learnability) Propose(ctx context.Context, h *History) (Proposal, error) {
	if err := engCtxErr(ctx); err != nil {
		return Proposal{}, err
	}
	prev := engPrevious(h, l.opts.base())
	last := h.Last()
	if last == nil {
		return engSettle(prev, prev, l.opts.Feasible, "learnability: no stage yet, base config"), nil
	}
	cand := prev.Clone()
	scores := make([]float64, len(cand.Sizes))
	var notes []string
	cold := l.lo.ColdStart > 0
	for _, s := range cand.Sizes {
		if d, _, ok := engDifficultyStats(last, s.Size, l.lo.MinEpisodes); ok && d.ValidRate() >= l.lo.ColdStart {
			cold = false
		}
	}
	if cold {
		notes = append(notes, fmt.Sprintf("cold start: no size reaches valid %.2f, hole and wait ratios are not lowered", l.lo.ColdStart))
	}
	for i := range cand.Sizes {
		s := &cand.Sizes[i]
		v, _ := engStats(last.Val, s.Size)
		scores[i] = l.Score(v)
		note := fmt.Sprintf("size %d: val valid %s optimal %s (n=%d) score %.4f", s.Size, promptPct(v.Valid, v.Episodes), promptPct(v.Optimal, v.Episodes), v.Episodes, scores[i])
		d, split, ok := engDifficultyStats(last, s.Size, l.lo.MinEpisodes)
		if !ok {
			notes = append(notes, note+", difficulty kept (no data)")
			continue
		}
		p := d.ValidRate()
		step := 0.0
		if math.Abs(p-l.lo.Target) > l.lo.Tolerance {
			step = engClip(l.lo.Gain*(p-l.lo.Target), -l.lo.MaxStep, l.lo.MaxStep)
		}
		if cold && step < 0 {
			step = 0
		}
		if rise, ok := l.rise(h, s.Size, p); ok && step < 0 && l.lo.Progress > 0 && rise >= l.lo.Progress {
			note += fmt.Sprintf(", valid %+.2f since the stage before: learning, not eased", rise)
			step = 0
		}
		s.HoleRatio = engClip(s.HoleRatio+step, 0, l.limits.HoleMax)
		s.WaitRatio = engClip(s.WaitRatio+step, 0, l.limits.WaitMax)
		notes = append(notes, note+fmt.Sprintf(", %s valid %.2f, hole/wait %+.3f", split, p, step))
	}
	engMixData(&cand, prev, scores, 0, l.lo.Floor)
	return engSettle(prev, cand, l.opts.Feasible, "learnability: "+strings.Join(notes, "; ")), nil
}

// rise returns how much a size's valid rate p (from the last stage's
// difficulty statistics) rose since the stage before; false without a stage
// before that measured the size.
func (l *Learnability) rise(h *History, size int, p float64) (float64, bool) {
	if len(h.Stages) < 2 {
		return 0, false
	}
	d, _, ok := engDifficultyStats(&h.Stages[len(h.Stages)-2], size, l.lo.MinEpisodes)
	if !ok {
		return 0, false
	}
	return p - d.ValidRate(), true
}
