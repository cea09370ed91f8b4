package env

import (
	"fmt"
	"strings"
)

// AnswerCheck is the verdict on one answer for one instance, as `t2t env
// check` prints it: every check, the failures, costs against the optimum and
// the reward with its parts.
type AnswerCheck struct {
	InstanceID string          `json:"instance_id"`
	Valid      bool            `json:"valid"`
	Optimal    bool            `json:"optimal"`
	Checks     map[string]bool `json:"checks"`
	Failures   []CheckFailure  `json:"failures"`
	Truncated  int             `json:"failures_truncated,omitempty"`
	SOC        int             `json:"soc"`
	Makespan   int             `json:"makespan"`
	OptSOC     int             `json:"optimal_soc"`
	OptMake    int             `json:"optimal_makespan"`
	GapSOC     int             `json:"gap_soc"`
	GapMake    int             `json:"gap_makespan"`
	// CleanAgents counts the agents whose own path breaks no rule, the
	// share that --reward-partial credits.
	CleanAgents int     `json:"clean_agents"`
	RAcc        float64 `json:"r_acc"`
	RLen        float64 `json:"r_len"`
	Reward      float64 `json:"reward"`
}

// CheckFailure is one failed check of an AnswerCheck.
type CheckFailure struct {
	Check string `json:"check"`
	Kind  string `json:"kind"`
	Agent int    `json:"agent"`
	Other int    `json:"other,omitempty"`
	T     int    `json:"t"`
	Cell  Pos    `json:"cell"`
}

// CheckAnswer verifies answer (text moves or JSON paths) for the solved
// instance in and scores it under obj; tokens is the answer's length in
// tokens, for the length reward.
func CheckAnswer(in *Instance, answer string, tokens int, obj Objective) AnswerCheck {
	var rep Report
	VerifyAnswer(in, answer, &rep)
	rc := DefaultRewardConfig()
	rc.Objective = obj
	var sched LengthSchedule
	res := AnswerCheck{
		InstanceID: in.ID, Valid: rep.Valid, Optimal: rep.OptimalFor(in, obj), Checks: map[string]bool{},
		Truncated: rep.Truncated, SOC: rep.SOC, Makespan: rep.Makespan, OptSOC: in.SOC, OptMake: in.Makespan,
		GapSOC: rep.GapSOC, GapMake: rep.GapMakespan, CleanAgents: rep.CleanAgents,
		RAcc: AccuracyReward(in, &rep, obj), RLen: LengthReward(tokens, rc),
		Reward: Reward(in, &rep, tokens, rc, &sched), Failures: []CheckFailure{},
	}
	for c := Check(0); c < NumChecks; c++ {
		res.Checks[c.String()] = rep.Passed[c]
	}
	for _, f := range rep.Failures {
		res.Failures = append(res.Failures, CheckFailure{Check: f.Check.String(), Kind: f.Kind.String(), Agent: f.Agent, Other: f.Other, T: f.T, Cell: f.Cell})
	}
	return res
}

// Drawing formats for Draw.
const (
	FormatASCII = "ascii"
	FormatSVG   = "svg"
	FormatPNG   = "png"
)

// Draw renders in, with plan when it is not nil, as FormatASCII, FormatSVG
// or FormatPNG (cellPx pixels per cell); SVG and PNG mark the cells where
// the plan's paths conflict. An unknown format is a *FieldError.
func Draw(in *Instance, plan *Plan, format string, cellPx int) ([]byte, error) {
	var conflicts []Pos
	if plan != nil {
		var rep Report
		Verify(in, plan, &rep)
		for _, f := range rep.Failures {
			if f.Check == CheckConflictFree {
				conflicts = append(conflicts, f.Cell)
			}
		}
	}
	switch strings.ToLower(format) {
	case FormatASCII:
		if plan != nil {
			return []byte(RenderPlanASCII(in, plan)), nil
		}
		return []byte(RenderASCII(in)), nil
	case FormatSVG:
		return RenderSVG(in, plan, conflicts), nil
	case FormatPNG:
		return RenderPNG(in, plan, conflicts, cellPx)
	}
	return nil, &FieldError{Field: "format", Value: fmt.Sprintf("%q", format), Reason: "want ascii, svg or png"}
}
