package textpolicy

import (
	"fmt"
	"sort"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// Target returns the completion that supervised fine-tuning teaches for in: an optimal
// (sum-of-costs) plan in canonical form (env.CanonicalPlan: vertical moves first, waits as late
// as possible, whatever ties the solver broke) and the canonical answer text
// (env.FormatMoves), after an empty think block when the policy thinks, ended by <|im_end|>,
// as token ids.
func (p *Policy) Target(in *env.Instance) ([]int32, error) {
	sol, err := env.Solve(in, env.SolveOptions{})
	if err != nil {
		return nil, fmt.Errorf("textpolicy: target for %s: %w", in.ID, err)
	}
	plan, err := env.CanonicalPlan(in, &sol.Plan)
	if err != nil {
		return nil, fmt.Errorf("textpolicy: target for %s: %w", in.ID, err)
	}
	moves, err := env.PlanMoves(plan)
	if err != nil {
		return nil, err
	}
	text := env.FormatMoves(moves)
	if p.opt.Thinking {
		text = tokenizer.ThinkOpen + "\n\n" + tokenizer.ThinkClose + "\n\n" + text
	}
	ids := p.lm.Tok.Encode(text)
	return append(ids, p.lm.Stop[0]), nil
}

// SFTStep runs one supervised (behaviour-cloning) step on ins: the mean cross-entropy of the
// Target tokens after each prompt, through the learner.Trainer (BCStep) that GRPO uses, while
// no generation runs. It counts as a policy version.
func (p *Policy) SFTStep(ins []*env.Instance) (learner.UpdateStats, error) {
	samples := make([]qwen3.Sample, 0, len(ins))
	for _, in := range ins {
		target, err := p.Target(in)
		if err != nil {
			return learner.UpdateStats{}, err
		}
		samples = append(samples, qwen3.Sample{Prompt: p.Prompt(in), Completion: target})
	}
	batch, err := qwen3.NewSeqBatch(samples)
	if err != nil {
		return learner.UpdateStats{}, err
	}
	st, err := p.step(engine.StepBC, batch)
	if err != nil {
		return st, fmt.Errorf("textpolicy: sft: %w", err)
	}
	st.Step = p.version.Add(1)
	return st, nil
}

// Rates are the valid and optimal shares of a greedy evaluation.
type Rates struct {
	Episodes       int
	Valid, Optimal float64
	// Parsable is the share of answers that parse.
	Parsable float64
	// BySize counts, per map size, the episodes and the valid ones: {size: {valid, episodes}}.
	BySize map[int][2]int
	// Failed counts, per verifier check, the answers that failed it: an answer that parses can
	// fail several checks; one that does not counts for CheckParsable only.
	Failed [env.NumChecks]int
}

// FailureSummary lists the failed checks by count, most first: "goal_reached 30, hole_free 12";
// "none" when every answer passed every check.
func (r Rates) FailureSummary() string {
	var parts []string
	order := make([]env.Check, 0, env.NumChecks)
	for c := range env.NumChecks {
		if r.Failed[c] > 0 {
			order = append(order, c)
		}
	}
	sort.SliceStable(order, func(i, j int) bool { return r.Failed[order[i]] > r.Failed[order[j]] })
	for _, c := range order {
		parts = append(parts, fmt.Sprintf("%s %d", c, r.Failed[c]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// SizeSummary lists the valid answers per map size: "3x3 4/16, 4x4 1/16, 5x5 0/16".
func (r Rates) SizeSummary() string {
	sizes := make([]int, 0, len(r.BySize))
	for s := range r.BySize {
		sizes = append(sizes, s)
	}
	sort.Ints(sizes)
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = fmt.Sprintf("%dx%d %d/%d", s, s, r.BySize[s][0], r.BySize[s][1])
	}
	return strings.Join(parts, ", ")
}

// Evaluate plays each instance once, greedily, and returns the shares of parsable, valid and
// optimal (sum of costs) answers.
func (p *Policy) Evaluate(ins []*env.Instance) (Rates, error) {
	ro, err := p.Play(ins, 1, 0, 0)
	if err != nil {
		return Rates{}, err
	}
	r := Rates{Episodes: len(ro.Episodes), BySize: map[int][2]int{}}
	for _, ep := range ro.Episodes {
		bs := r.BySize[ep.Instance.Width]
		bs[1]++
		if ep.Report.Valid {
			bs[0]++
		}
		r.BySize[ep.Instance.Width] = bs
		if ep.Report.Passed[env.CheckParsable] {
			r.Parsable++
		}
		for c := range env.NumChecks {
			if !ep.Report.Passed[c] && (c == env.CheckParsable || ep.Report.Passed[env.CheckParsable]) {
				r.Failed[c]++
			}
		}
		if ep.Report.Valid {
			r.Valid++
		}
		if ep.Report.Optimal {
			r.Optimal++
		}
	}
	if n := float64(r.Episodes); n > 0 {
		r.Parsable, r.Valid, r.Optimal = r.Parsable/n, r.Valid/n, r.Optimal/n
	}
	return r, nil
}
