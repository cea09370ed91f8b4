package env

import (
	"fmt"
	"math"
)

// RewardConfig sets the paper's reward R = w_acc·R_acc + w_len·R_len.
type RewardConfig struct {
	// Objective is the cost that R_acc compares with the optimum. Default
	// SumOfCosts.
	Objective Objective `json:"objective" msgpack:"objective"`
	// L1 is the response length (tokens) up to which R_len is 0. Default 1500.
	L1 int `json:"l1" msgpack:"l1"`
	// L2 is the length at and beyond which R_len is -1; R_len falls
	// linearly between L1 and L2. Default 4096. Must exceed L1.
	L2 int `json:"l2" msgpack:"l2"`
	// EMADecay is the weight of the old value in the EMA of the share of
	// short responses (length <= L1) that sets the weights:
	// r ← decay·r + (1−decay)·share. Default 0.9. In [0,1).
	EMADecay float64 `json:"ema_decay" msgpack:"ema_decay"`
	// Partial is the weight of partial credit for a plan that fails a
	// check: its R_acc is Partial × the share of agents whose own path
	// breaks no rule (Report.CleanAgents; 0 when the answer does not
	// parse). Default 0, the paper's reward (an invalid plan earns 0). In
	// [0, RewardFloor), so any valid plan earns more than any invalid one.
	// It gives GRPO a signal in groups whose plans are all invalid, which
	// is most groups of a small model on 3–5 agents.
	Partial float64 `json:"partial,omitempty" msgpack:"partial,omitempty"`
}

// DefaultRewardConfig returns the paper's values: SumOfCosts, L1 1500,
// L2 4096, EMA decay 0.9 (the paper does not give the decay; 0.9 is ours).
func DefaultRewardConfig() RewardConfig {
	return RewardConfig{Objective: SumOfCosts, L1: 1500, L2: 4096, EMADecay: 0.9}
}

// Validate checks the config; errors wrap ErrInvalidConfig and a
// *FieldError naming the field.
func (c RewardConfig) Validate() error {
	bad := func(field string, v any, reason string) error {
		return fmt.Errorf("reward config: %w: %w", ErrInvalidConfig, &FieldError{Field: field, Value: v, Reason: reason})
	}
	switch {
	case c.Objective != SumOfCosts && c.Objective != MakespanObjective:
		return bad("objective", c.Objective, "want soc or makespan")
	case c.L1 < 0:
		return bad("l1", c.L1, "must be >= 0")
	case c.L2 <= c.L1:
		return bad("l2", c.L2, fmt.Sprintf("must exceed l1 (%d)", c.L1))
	case !(c.EMADecay >= 0 && c.EMADecay < 1):
		return bad("ema_decay", c.EMADecay, "must be in [0,1)")
	case !(c.Partial >= 0 && c.Partial < RewardFloor):
		return bad("partial", c.Partial, fmt.Sprintf("must be in [0,%g) so that a valid plan always earns more", RewardFloor))
	}
	return nil
}

// Accuracy reward constants (paper).
const (
	// RewardOptimal is R_acc of a valid plan at the optimal cost.
	RewardOptimal = 1.0
	// RewardSubopt is the drop of R_acc over the excess range (0, c_max].
	RewardSubopt = 0.7
	// RewardFloor is R_acc of a valid plan whose excess cost exceeds c_max.
	RewardFloor = 0.3
)

// AccuracyReward is R_acc: 0 unless rep.Valid; else, with c = cost − opt
// and c_max = 2·opt (cost and opt under obj): 1 if c <= 0, 1 − 0.7·c/c_max
// if 0 < c <= c_max, 0.3 if c > c_max. When opt is 0 (every agent starts on
// its goal) c_max is 0, so any positive excess earns 0.3. An instance that
// is not solved (no recorded optimum) gives a valid plan 1: validity is all
// that can be judged.
func AccuracyReward(in *Instance, rep *Report, obj Objective) float64 {
	if !rep.Valid {
		return 0
	}
	if !in.Solved() {
		return RewardOptimal
	}
	opt := in.Optimum(obj)
	c := rep.Cost(obj) - opt
	cmax := 2 * opt
	switch {
	case c <= 0:
		return RewardOptimal
	case c <= cmax:
		return RewardOptimal - RewardSubopt*float64(c)/float64(cmax)
	}
	return RewardFloor
}

// PartialCredit is the share of in's agents whose path breaks no rule in
// the verified plan (rep.CleanAgents / agents); 0 for an instance without
// agents.
func PartialCredit(in *Instance, rep *Report) float64 {
	if len(in.Agents) == 0 {
		return 0
	}
	return float64(rep.CleanAgents) / float64(len(in.Agents))
}

// Accuracy is R_acc under c: AccuracyReward for a valid plan (and for any
// plan when c.Partial is 0), else c.Partial × PartialCredit.
func (c RewardConfig) Accuracy(in *Instance, rep *Report) float64 {
	if rep.Valid || c.Partial == 0 {
		return AccuracyReward(in, rep, c.Objective)
	}
	return c.Partial * PartialCredit(in, rep)
}

// LengthReward is R_len: 0 for tokens <= L1, falling linearly to −1 at L2,
// −1 beyond.
func LengthReward(tokens int, c RewardConfig) float64 {
	switch {
	case tokens <= c.L1:
		return 0
	case tokens >= c.L2:
		return -1
	}
	return -float64(tokens-c.L1) / float64(c.L2-c.L1)
}

// ShortShare returns the share of responses with at most c.L1 tokens (0 for
// an empty batch): the value to pass to LengthSchedule.Observe.
func ShortShare(tokens []int, c RewardConfig) float64 {
	if len(tokens) == 0 {
		return 0
	}
	n := 0
	for _, t := range tokens {
		if t <= c.L1 {
			n++
		}
	}
	return float64(n) / float64(len(tokens))
}

// LengthSchedule tracks r, the EMA of the share of short responses, which
// sets the reward weights. The zero value has seen nothing (weights
// 0.5/0.5). Its fields are exported for checkpointing.
type LengthSchedule struct {
	// EMA is r.
	EMA float64 `json:"ema" msgpack:"ema"`
	// Initialized is false until the first Observe, which sets EMA to
	// the first share.
	Initialized bool `json:"initialized" msgpack:"initialized"`
}

// Observe folds one batch's share of responses with tokens <= L1 into the
// EMA: r ← decay·r + (1−decay)·share (the first share is taken as is).
// The share is clipped to [0,1]; NaN is ignored.
func (s *LengthSchedule) Observe(shortShare float64, decay float64) {
	if math.IsNaN(shortShare) {
		return
	}
	shortShare = min(max(shortShare, 0), 1)
	if !s.Initialized {
		s.EMA, s.Initialized = shortShare, true
		return
	}
	s.EMA = decay*s.EMA + (1-decay)*shortShare
}

// Weights returns (w_acc, w_len): (0.5, 0.5) while r < 0.5, linear to
// (0.8, 0.2) over r in [0.5, 0.9], (0.8, 0.2) from 0.9. They sum to 1.
// A nil schedule gives (0.5, 0.5).
func (s *LengthSchedule) Weights() (wAcc, wLen float64) {
	r := 0.0
	if s != nil && s.Initialized {
		r = s.EMA
	}
	switch {
	case r < 0.5:
		wAcc = 0.5
	case r >= 0.9:
		wAcc = 0.8
	default:
		wAcc = 0.5 + 0.3*(r-0.5)/0.4
	}
	return wAcc, 1 - wAcc
}

// Reward is R = w_acc·R_acc + w_len·R_len with the weights of s (nil: 0.5
// each) and R_acc = c.Accuracy.
func Reward(in *Instance, rep *Report, tokens int, c RewardConfig, s *LengthSchedule) float64 {
	wAcc, wLen := s.Weights()
	return wAcc*c.Accuracy(in, rep) + wLen*LengthReward(tokens, c)
}
