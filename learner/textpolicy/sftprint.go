package textpolicy

import (
	"fmt"
	"io"
	"time"

	"github.com/t2t-lab/t2t/engineer"
)

// PrintSFTProgress prints an SFT run's reports on w as `t2t sft` does; dir
// is the checkpoint folder a save writes.
func PrintSFTProgress(w io.Writer, dir string) SFTProgress {
	return SFTProgress{
		EvalSet: func(s SFTEvalSet) {
			fmt.Fprintf(w, "evaluation set: %d instances from seed %d (id %s); baseline: rows-first Manhattan paths, blind to holes and the other agent, are valid on %.1f%%",
				s.Instances, s.Seed, s.ID, 100*s.Baseline)
			if s.BaselineEval != nil {
				fmt.Fprintf(w, " (valid by size: %s; failed checks: %s)", SizeSummary(s.BaselineEval), FailureSummary(s.BaselineEval))
			}
			fmt.Fprintln(w)
		},
		Evaluated: func(ev SFTEval) {
			e := ev.Eval
			fmt.Fprintf(w, "%s: %d instances (%s), greedy: parsable %.1f%%, valid %.1f%%, optimal %.1f%%; ",
				ev.When(), e.Total.Episodes, EvalShape(e), 100*ParsableRate(e), 100*e.Total.ValidRate(), 100*e.Total.OptimalRate())
			if len(e.ByAgents) > 1 {
				fmt.Fprintf(w, "valid by agents: %s; ", AgentsSummary(e))
			}
			fmt.Fprintf(w, "valid by size: %s; failed checks: %s\n", SizeSummary(e), FailureSummary(e))
			if ev.MapUse != nil {
				fmt.Fprintf(w, "%s: map probe: %s\n", ev.When(), ev.MapUse)
			}
		},
		Loss: func(l SFTLoss) {
			fmt.Fprintf(w, "step %d: ", l.Step)
			if l.Steps > 0 {
				fmt.Fprintf(w, "cross-entropy %.3f, token accuracy %.3f (mean of the last %d steps), ", l.Loss, l.Accuracy, l.Steps)
			}
			if l.EngineerSteps > 0 {
				fmt.Fprintf(w, "engineer cross-entropy %.3f, token accuracy %.3f (%d engineer steps), ", l.EngineerLoss, l.EngineerAccuracy, l.EngineerSteps)
			}
			fmt.Fprintf(w, "lr %.3g, %s\n", l.LR, l.Elapsed.Round(100*time.Millisecond))
		},
		Saved: func(step int) { fmt.Fprintf(w, "step %d: wrote %s\n", step, dir) },
	}
}

// AddEngineerTurns appends turns to o.Engineer as lm's supervised samples
// (EngineerSample with thinking) and, when there are any, says so on w as
// `t2t sft` does, naming source, the file they come from.
func (o *SFTOptions) AddEngineerTurns(w io.Writer, lm *LM, turns []engineer.Turn, thinking bool, source string) {
	for i := range turns {
		o.Engineer = append(o.Engineer, EngineerSample(lm, &turns[i], thinking))
	}
	if len(turns) > 0 {
		fmt.Fprintf(w, "engineer turns: %d from %s (teacher %s, prompt %s, modules %s), every %d steps\n",
			len(turns), source, turns[0].Teacher, turns[0].Prompt, turns[0].Modules, o.EngineerEvery)
	}
}
