package train

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/learner"
)

// UpdateMetrics are the statistics of one learner update. Each update logs
// them at Info ("train: update", t2t train -v); LearnStats sums them up
// per stage.
type UpdateMetrics struct {
	// Version is the policy version after the update.
	Version int64
	// Groups, Samples and Decisions count the batch: GRPO groups, episodes,
	// and decisions (one agent's move at one step: the trained positions).
	Groups, Samples, Decisions int
	// Loss is the optimised GRPO loss.
	Loss float64
	// MeanReward and ValidRate are over the batch's episodes.
	MeanReward, ValidRate float64
	// ClipFrac is the share of decisions whose gradient clipping cut; KL
	// the k3 estimate of KL(behaviour ‖ new policy) (learner.UpdateStats).
	ClipFrac, KL float64
	// LagMin, LagMean and LagMax are the policy lag over the batch's
	// groups: the policy version before the update minus the version the
	// group was sampled with.
	LagMin, LagMax int64
	LagMean        float64
	// ZeroShare is the share of groups whose rewards are all equal (no
	// gradient).
	ZeroShare float64
	// Duration is the update's wall time (batch assembly and optimizer
	// step).
	Duration time.Duration
}

// DecisionsPerSec is the update's throughput: decisions trained per second.
func (m UpdateMetrics) DecisionsPerSec() float64 { return perSec(int64(m.Decisions), m.Duration) }

func perSec(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// LearnStats sum up a stage's learner updates (StageReport.Learn).
type LearnStats struct {
	Updates                    int
	Groups, Samples, Decisions int64
	// MeanLoss, ClipFrac and KL are means over the updates; MeanReward and
	// ValidRate over every trained episode; ZeroShare over every group.
	MeanLoss, ClipFrac, KL float64
	MeanReward, ValidRate  float64
	ZeroShare              float64
	// LagMin, LagMean and LagMax are the policy lag over every group.
	LagMin, LagMax int64
	LagMean        float64
	// UpdateTime is the time spent in updates.
	UpdateTime time.Duration
}

// DecisionsPerSec is the learner's throughput over the stage: decisions
// trained per second of update time.
func (s LearnStats) DecisionsPerSec() float64 { return perSec(s.Decisions, s.UpdateTime) }

// batchCounts are what an update's groups hold.
type batchCounts struct {
	groups, samples, decisions, valid int64
	rewardSum                         float64
	lagSum, lagMin, lagMax            int64
}

// countBatch counts groups sampled at their PolicyVersion, trained at
// policy version current.
func countBatch(groups []actors.Group, current int64) batchCounts {
	c := batchCounts{lagMin: math.MaxInt64, lagMax: math.MinInt64}
	for _, g := range groups {
		c.groups++
		lag := current - g.PolicyVersion
		c.lagSum += lag
		c.lagMin, c.lagMax = min(c.lagMin, lag), max(c.lagMax, lag)
		for _, s := range g.Samples {
			c.samples++
			c.decisions += int64(len(s.Tokens))
			c.rewardSum += float64(s.Reward)
			if s.Valid {
				c.valid++
			}
		}
	}
	if c.groups == 0 {
		c.lagMin, c.lagMax = 0, 0
	}
	return c
}

func ratio(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a / b
}

// updateMetrics puts one update's numbers together.
func updateMetrics(c batchCounts, st learner.UpdateStats, sig learner.SignalStats, version int64, d time.Duration) UpdateMetrics {
	return UpdateMetrics{
		Version: version, Groups: int(c.groups), Samples: int(c.samples), Decisions: int(c.decisions),
		Loss: st.Loss, MeanReward: ratio(c.rewardSum, float64(c.samples)), ValidRate: ratio(float64(c.valid), float64(c.samples)),
		ClipFrac: st.ClipFrac, KL: st.ApproxKL,
		LagMin: c.lagMin, LagMax: c.lagMax, LagMean: ratio(float64(c.lagSum), float64(c.groups)),
		ZeroShare: sig.ZeroShare(), Duration: d,
	}
}

// attrs are the update's log attributes.
func (m UpdateMetrics) attrs() []any {
	return []any{
		slog.Int64("version", m.Version), slog.Int("groups", m.Groups), slog.Int("decisions", m.Decisions),
		slog.Float64("loss", m.Loss), slog.Float64("mean_reward", m.MeanReward), slog.Float64("valid_rate", m.ValidRate),
		slog.Float64("clip_frac", m.ClipFrac), slog.Float64("kl", m.KL),
		slog.Int64("lag_min", m.LagMin), slog.Float64("lag_mean", m.LagMean), slog.Int64("lag_max", m.LagMax),
		slog.Float64("zero_share", m.ZeroShare), slog.Float64("decisions_per_sec", m.DecisionsPerSec()),
		slog.Duration("duration", m.Duration),
	}
}

// learnAcc accumulates a stage's updates; the run guards it with its mutex.
type learnAcc struct {
	updates                 int
	lossSum, clipSum, klSum float64
	c                       batchCounts
	sig                     learner.SignalStats
	dur                     time.Duration
}

func (a *learnAcc) add(c batchCounts, st learner.UpdateStats, sig learner.SignalStats, d time.Duration) {
	if a.updates == 0 {
		a.c.lagMin, a.c.lagMax = c.lagMin, c.lagMax
	}
	a.updates++
	a.lossSum += st.Loss
	a.clipSum += st.ClipFrac
	a.klSum += st.ApproxKL
	a.c.groups += c.groups
	a.c.samples += c.samples
	a.c.decisions += c.decisions
	a.c.valid += c.valid
	a.c.rewardSum += c.rewardSum
	a.c.lagSum += c.lagSum
	a.c.lagMin, a.c.lagMax = min(a.c.lagMin, c.lagMin), max(a.c.lagMax, c.lagMax)
	a.sig.Groups += sig.Groups
	a.sig.ZeroSignal += sig.ZeroSignal
	a.dur += d
}

// stats returns the sums as LearnStats.
func (a *learnAcc) stats() LearnStats {
	n := float64(a.updates)
	return LearnStats{
		Updates: a.updates, Groups: a.c.groups, Samples: a.c.samples, Decisions: a.c.decisions,
		MeanLoss: ratio(a.lossSum, n), ClipFrac: ratio(a.clipSum, n), KL: ratio(a.klSum, n),
		MeanReward: ratio(a.c.rewardSum, float64(a.c.samples)), ValidRate: ratio(float64(a.c.valid), float64(a.c.samples)),
		ZeroShare: a.sig.ZeroShare(),
		LagMin:    a.c.lagMin, LagMax: a.c.lagMax, LagMean: ratio(float64(a.c.lagSum), float64(a.c.groups)),
		UpdateTime: a.dur,
	}
}

// printLearn writes the stage's learner line under its table row.
func printLearn(w io.Writer, s *LearnStats) {
	if s.Updates == 0 {
		return
	}
	fmt.Fprintf(w, "      learner: %d updates  loss %.4f  reward %.3f  valid %s%%  clip %s%%  kl %.5f  lag %d/%.2f/%d  zero %s%%  %s decisions/s\n",
		s.Updates, s.MeanLoss, s.MeanReward, pct(s.ValidRate), pct(s.ClipFrac), s.KL, s.LagMin, s.LagMean, s.LagMax,
		pct(s.ZeroShare), siCount(s.DecisionsPerSec()))
}

// siCount writes x with a k or M suffix ("12.3k").
func siCount(x float64) string {
	switch {
	case x >= 1e6:
		return fmt.Sprintf("%.1fM", x/1e6)
	case x >= 1e3:
		return fmt.Sprintf("%.1fk", x/1e3)
	}
	return fmt.Sprintf("%.0f", x)
}
