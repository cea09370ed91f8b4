package actors

import (
	"testing"
	"time"
)

func simBase() SimConfig {
	return SimConfig{Rollouts: 4, MaxInFlight: 2, Units: 64, InstancesPerUnit: 16, GroupSize: 8, LearnerBatch: 32,
		StalenessK: 4, KeepLateK: 8, MaxLag: 2, UnitLatency: 700 * time.Millisecond, UnitJitter: 0.3,
		StepTime: 800 * time.Millisecond, Seed: 1}
}

// A learner slower than the rollouts: with pacing nothing is discarded and
// the learner is the bottleneck; without it, more rollouts mean more
// discarded groups and no more updates.
func TestSimulateLearnerBound(t *testing.T) {
	cfg := simBase()
	paced, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("paced: %+v", paced)
	if paced.Learner.Discarded() != 0 || paced.Learner.Used != 64*16 || paced.Bottleneck != "learner" {
		t.Errorf("paced: learner %+v, bottleneck %s", paced.Learner, paced.Bottleneck)
	}
	// Window 3 batches of 32 = 6 units of 16.
	if paced.MaxInFlightUnits > 6 || paced.LagMean > 2 {
		t.Errorf("paced: %d units at once, mean lag %.2f", paced.MaxInFlightUnits, paced.LagMean)
	}
	cfg.MaxLag = -1
	cfg.Rollouts = 16
	free, err := Simulate(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("unpaced: %+v", free)
	if free.Learner.DiscardShare() < 0.2 || free.Learner.Updates >= paced.Learner.Updates {
		t.Errorf("unpaced with 16 rollouts: discarded %.2f, %d updates (paced %d)", free.Learner.DiscardShare(), free.Learner.Updates, paced.Learner.Updates)
	}
}

// A learner that costs nothing: throughput grows with the rollouts until
// a server saturates; a Redis slower than the units' rate is the
// bottleneck.
func TestSimulateRedisBound(t *testing.T) {
	cfg := simBase()
	cfg.MaxLag, cfg.StepTime, cfg.StalenessK, cfg.KeepLateK = -1, 0, 1<<40, 1<<40
	cfg.RecordCost = 20 * time.Millisecond // 50 units/s at most
	var last float64
	for _, r := range []int{1, 4, 16, 64} {
		cfg.Rollouts, cfg.Units = r, 8*r
		res, err := Simulate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("R=%d: %.0f episodes/s, bottleneck %s, redis %.2f", r, res.EpisodesPerSecond, res.Bottleneck, res.Redis)
		if r <= 4 && res.EpisodesPerSecond < 1.5*last {
			t.Errorf("R=%d: %.0f episodes/s, not growing from %.0f", r, res.EpisodesPerSecond, last)
		}
		if r == 64 && (res.Bottleneck != "redis" || res.EpisodesPerSecond > 50*16*8*1.01) {
			t.Errorf("R=64: bottleneck %s at %.0f episodes/s, want redis at <= %d", res.Bottleneck, res.EpisodesPerSecond, 50*16*8)
		}
		last = res.EpisodesPerSecond
	}
}
