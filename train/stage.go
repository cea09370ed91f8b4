package train

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
)

// Rates are valid and optimal shares over a set of episodes: the one
// rates type, store.Rates.
type Rates = store.Rates

// ratesOf returns c's rates (store.Counts.Rates).
func ratesOf(c store.Counts) Rates { return c.Rates() }

// StageReport is what one stage did and how the policy did after it.
type StageReport struct {
	Stage         int
	ConfigVersion string
	Config        env.Config
	// Train is over the stage's training episodes (sampled); Val over the
	// validation set and Eval per agent count over the benchmark suite,
	// both greedy, after the stage.
	Train     Rates
	Val       Rates
	Eval      map[int]Rates
	Updates   int
	MeanLoss  float64
	ZeroShare float64
	// Learn sums up the stage's learner updates (Updates, MeanLoss and
	// ZeroShare repeat three of its fields).
	Learn    LearnStats
	Policy   int64
	Duration time.Duration
	// Rationale is the engineer's reason for the next stage's config.
	Rationale string
	// Flow is what became of the groups that reached the learner during
	// the stage, and how long dispatch waited for the learner.
	Flow FlowStats
	// Sampling is what the policy's generation scheduler did during the
	// stage (nil: the policy has none).
	Sampling *SamplingStats
}

// Result is the whole run.
type Result struct {
	RunID string
	// FirstStage is the first stage this call ran: 0, or s+1 for a run
	// resumed after stage s (Stages then starts there, and Initial is
	// empty).
	FirstStage int
	Initial    StageReport // the untrained policy's evaluation (Stage -1)
	Stages     []StageReport
	Actors     actors.RunReport
}

func pct(x float64) string {
	if math.IsNaN(x) {
		return "  -  "
	}
	return fmt.Sprintf("%5.1f", 100*x)
}

// printHeader and printStage write the per-stage progress table.
func printHeader(w io.Writer) {
	fmt.Fprintln(w, "stage | train valid | val valid/opt % | 3 agents v/o % | 4 agents v/o % | 5 agents v/o % | updates  loss   zero% | policy | time")
}

func printStage(w io.Writer, s *StageReport) {
	name := fmt.Sprintf("%5d", s.Stage)
	train := fmt.Sprintf("%11s", pct(s.Train.Valid))
	if s.Stage < 0 {
		name, train = " init", fmt.Sprintf("%11s", "-")
	}
	ev := func(k int) string {
		r, ok := s.Eval[k]
		if !ok {
			return fmt.Sprintf("%14s", "-")
		}
		return fmt.Sprintf("  %s / %s ", pct(r.Valid), pct(r.Optimal))
	}
	fmt.Fprintf(w, "%s | %s |  %s / %s  | %s | %s | %s | %7d %6.3f %5.1f | %6d | %s\n",
		name, train, pct(s.Val.Valid), pct(s.Val.Optimal), ev(3), ev(4), ev(5), s.Updates, s.MeanLoss, 100*s.ZeroShare, s.Policy, s.Duration.Round(100*time.Millisecond))
}
