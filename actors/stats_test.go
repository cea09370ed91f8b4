package actors

import "testing"

// TestSystemStatsLive: Stats shows the counters while the run is going
// (units issued and not done) and, after Run, equals Run's report.
func TestSystemStatsLive(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.LearnerBatch = 1, 2, 4, 1
	cfg.StalenessK = 1 << 40
	runner := &sysBlockingRunner{started: make(chan WorkUnit, 8), release: make(chan struct{})}
	s := sysStart(t, cfg, func(int) Runner { return runner }, &sysUpdater{}, &sysProposer{})
	type result struct {
		rep RunReport
		err error
	}
	res := make(chan result, 1)
	go func() {
		rep, err := s.Run(testCtx(t), 1)
		res <- result{rep, err}
	}()
	testWait(t, runner.started, "first unit")
	testWait(t, runner.started, "second unit")
	live := s.Stats()
	if live.RunID != "run" || live.Coordinator.Issued < 2 || live.Coordinator.Completed != 0 || len(live.Rollouts) != 1 || live.Rollouts[0].Started < 2 {
		t.Fatalf("live stats with two units running: %+v", live)
	}
	close(runner.release)
	r := testWait(t, res, "run")
	if r.err != nil {
		t.Fatal(r.err)
	}
	end := s.Stats()
	if end.Coordinator != r.rep.Coordinator || end.Learner != r.rep.Learner || end.Coordinator.Completed != 4 || end.Learner.Updates != 4 || len(end.Stages) != 0 {
		t.Fatalf("stats after the run %+v, report %+v", end, r.rep)
	}
}
