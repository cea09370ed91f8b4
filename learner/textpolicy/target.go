package textpolicy

import (
	"errors"
	"fmt"
	"strconv"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// TargetPlan names the plan a supervised target teaches (t2t sft --target).
type TargetPlan string

const (
	// TargetOptimal is an optimal (sum-of-costs) plan of the solver in canonical form.
	TargetOptimal TargetPlan = "optimal"
	// TargetPrioritized is env.PrioritizedPlan: each agent's path planned against the agents
	// before it only, the order in which an answer is written, so that no line depends on a
	// line after it; the optimal plan where the agents have no such plan in index order.
	TargetPrioritized TargetPlan = "prioritized"
)

// TargetPlanWant lists the target plans for error messages.
const TargetPlanWant = "want optimal or prioritized"

// ParseTargetPlan reads a --target value; the empty string is TargetOptimal.
func ParseTargetPlan(s string) (TargetPlan, error) {
	switch t := TargetPlan(s); t {
	case "":
		return TargetOptimal, nil
	case TargetOptimal, TargetPrioritized:
		return t, nil
	}
	return "", &fielderr.Error{Kind: ErrOptions, Flag: "target", Value: strconv.Quote(s), Reason: TargetPlanWant}
}

// Target returns the completion that supervised fine-tuning teaches for in: an optimal
// (sum-of-costs) plan in canonical form (env.CanonicalPlan: vertical moves first, waits as late
// as possible, whatever ties the solver broke) and the canonical answer text of the prompt's
// answer format (AnswerText: env.FormatMoves, env.FormatPaths or env.FormatCells), after an
// empty think block when the policy thinks, ended by <|im_end|>, as token ids.
func (p *Policy) Target(in *env.Instance) ([]int32, error) {
	return p.TargetOf(in, TargetOptimal)
}

// TargetOf is Target teaching the plan kind (TargetOptimal when empty).
func (p *Policy) TargetOf(in *env.Instance, kind TargetPlan) ([]int32, error) {
	plan, err := targetPlan(in, kind)
	if err != nil {
		return nil, fmt.Errorf("textpolicy: target for %s: %w", in.ID, err)
	}
	text, err := AnswerText(plan, p.opt.Prompt.Format)
	if err != nil {
		return nil, err
	}
	if p.opt.Thinking {
		text = tokenizer.ThinkOpen + "\n\n" + tokenizer.ThinkClose + "\n\n" + text
	}
	ids := p.lm.Tok.Encode(text)
	return append(ids, p.lm.Stop[0]), nil
}

// targetPlan is the plan of kind for in: env.PrioritizedPlan for TargetPrioritized when the
// agents have one in index order, else the solver's optimal plan in canonical form.
func targetPlan(in *env.Instance, kind TargetPlan) (*env.Plan, error) {
	if kind == TargetPrioritized {
		plan, err := env.PrioritizedPlan(in)
		if err == nil {
			return plan, nil
		}
		if !errors.Is(err, env.ErrNoPrioritized) {
			return nil, err
		}
	}
	sol, err := env.Solve(in, env.SolveOptions{})
	if err != nil {
		return nil, err
	}
	return env.CanonicalPlan(in, &sol.Plan)
}

// AnswerText writes plan in the canonical answer text of format: env.FormatPaths for
// env.AnswerJSON, env.FormatCells for env.AnswerCells, env.FormatSteps for env.AnswerSteps, else
// env.FormatMoves.
func AnswerText(plan *env.Plan, format env.AnswerFormat) (string, error) {
	switch format {
	case env.AnswerJSON:
		return env.FormatPaths(plan), nil
	case env.AnswerCells:
		return env.FormatCells(plan), nil
	case env.AnswerSteps:
		return env.FormatSteps(plan)
	}
	moves, err := env.PlanMoves(plan)
	if err != nil {
		return "", err
	}
	return env.FormatMoves(moves), nil
}
