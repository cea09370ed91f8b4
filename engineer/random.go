package engineer

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/t2t-lab/t2t/env"
)

// randomTries is how many draws Random makes before keeping the previous
// config when Feasible rejects them.
const randomTries = 4

// Random proposes a random valid config: the previous config's sizes,
// agents and instances with data ratios drawn from a flat Dirichlet
// distribution and hole and wait ratios uniform in [0, Limits.HoleMax] and
// [0, Limits.WaitMax]. The generator is rand.NewPCG(Seed, stage), so the
// same seed and stage give the same config on every machine. With an empty
// history it draws the round-0 config from the base config's sizes.
type Random struct {
	opts   Options
	limits Limits
}

// NewRandom returns the random strategy; bad Limits wrap ErrOptions.
func NewRandom(opts Options) (*Random, error) {
	l, err := opts.limits()
	if err != nil {
		return nil, err
	}
	return &Random{opts: opts, limits: l}, nil
}

// Name returns "random".
func (*Random) Name() string { return NameRandom }

// Propose draws the next stage's config; infeasible draws are redrawn up
// to 4 times, then the previous config is kept.
func (r *Random) Propose(ctx context.Context, h *History) (Proposal, error) {
	if err := engCtxErr(ctx); err != nil {
		return Proposal{}, err
	}
	prev := engPrevious(h, r.opts.base())
	stage := h.NextStage()
	rng := rand.New(rand.NewPCG(r.opts.Seed, uint64(stage)))
	var atts []Attempt
	for try := range randomTries {
		cand := r.Draw(rng, prev)
		a := Attempt{Parsed: engConfigJSON(cand), Projected: engConfigJSON(cand)}
		if r.opts.Feasible != nil {
			if err := r.opts.Feasible(cand); err != nil {
				a.Reason = fmt.Sprintf("draw %d infeasible: %v", try+1, err)
				atts = append(atts, a)
				continue
			}
		}
		a.Accepted, a.Reason = true, fmt.Sprintf("draw %d accepted", try+1)
		atts = append(atts, a)
		return Proposal{Config: cand, Attempts: atts,
			Rationale: fmt.Sprintf("random: seeded draw (seed %d, stage %d, draw %d)", r.opts.Seed, stage, try+1)}, nil
	}
	return engFallback(prev, fmt.Sprintf("random: %d draws were infeasible", randomTries), atts), nil
}

// Draw returns one random valid config shaped like like (its sizes, agents
// and instances).
func (r *Random) Draw(rng *rand.Rand, like env.Config) env.Config {
	c := like.Clone()
	for i := range c.Sizes {
		s := &c.Sizes[i]
		// Flat Dirichlet: normalised exponential draws. 1-Float64 is in
		// (0,1], so the log is finite.
		s.DataRatio = -math.Log(1 - rng.Float64())
		s.HoleRatio = rng.Float64() * r.limits.HoleMax
		s.WaitRatio = rng.Float64() * r.limits.WaitMax
	}
	return c.Project()
}
