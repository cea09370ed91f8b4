package engineer

import (
	"context"
)

// Fixed keeps the round-0 config for every stage: the paper's baseline
// ("fixed random config").
type Fixed struct{ base Options }

// NewFixed returns the fixed strategy. Without stages it proposes
// opts.Base (or env.DefaultConfig()).
func NewFixed(opts Options) *Fixed { return &Fixed{base: opts} }

// Name returns "fixed".
func (*Fixed) Name() string { return NameFixed }

// Propose returns stage 0's config (projected, should it be invalid).
func (f *Fixed) Propose(ctx context.Context, h *History) (Proposal, error) {
	if err := engCtxErr(ctx); err != nil {
		return Proposal{}, err
	}
	if h == nil || len(h.Stages) == 0 {
		c := engPrevious(nil, f.base.base())
		return Proposal{Config: c, Rationale: "fixed: no stage yet, base config", Attempts: []Attempt{{Projected: engConfigJSON(c), Accepted: true, Reason: "base config"}}}, nil
	}
	c := h.Stages[0].Config.Project()
	return Proposal{Config: c, Rationale: "fixed: the round-0 config is kept for every stage",
		Attempts: []Attempt{{Parsed: engConfigJSON(h.Stages[0].Config), Projected: engConfigJSON(c), Accepted: true, Reason: "round-0 config"}}}, nil
}
