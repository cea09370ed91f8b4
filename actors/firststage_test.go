package actors

import (
	"errors"
	"fmt"
	"testing"
	"time"
)

// fsRunStage drives the coordinator through its running stage with one
// worker "w" that finishes every unit it gets, and returns the units in
// the order they were issued and the subscriber events.
func fsRunStage(t *testing.T, c *coordinator, first []coordOut) ([]*WorkUnit, []any) {
	t.Helper()
	var units []*WorkUnit
	var events []any
	pending := []coordOut{}
	pending = append(pending, first...)
	for len(pending) > 0 {
		o := pending[0]
		pending = pending[1:]
		switch m := o.msg.(type) {
		case *WorkUnit:
			units = append(units, m)
			pending = append(pending, c.unitDone("w", UnitDone{UnitID: m.UnitID})...)
			pending = append(pending, c.requestWork("w", RequestWork{Node: "n", Credits: 1})...)
		case *ConfigUpdate:
			pending = append(pending, c.ack("w", ConfigAck{Node: "n", Version: m.Version})...)
		default:
			events = append(events, m)
		}
	}
	return units, events
}

// TestCoordinatorFirstStage starts a run at stage 2 of 4 (a run resumed
// after stage 1): it must run stages 2 and 3 only, number them as such, and
// hand out the same unit ids, seeds and instance ranges as a run that
// started at stage 0 does for those stages.
func TestCoordinatorFirstStage(t *testing.T) {
	const stages, units = 4, 5
	cfgOf := func(stage int) ConfigUpdate {
		return ConfigUpdate{Version: fmt.Sprintf("v%d", stage), Stage: stage, JSON: fmt.Appendf(nil, `{"s":%d}`, stage)}
	}
	// The reference: a run from stage 0.
	ref := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
	ref.requestWork("w", RequestWork{Node: "n", Credits: 1})
	plan := coordPlan(stages, units)
	out, err := ref.start(plan)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int][]*WorkUnit{}
	for stage := range stages {
		us, _ := fsRunStage(t, ref, out)
		want[stage] = us
		if stage+1 < stages {
			if out, err = ref.configUpdate(cfgOf(stage + 1)); err != nil {
				t.Fatal(err)
			}
		}
	}

	c := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
	c.requestWork("w", RequestWork{Node: "n", Credits: 1})
	plan.FirstStage, plan.Config = 2, cfgOf(2)
	out, err = c.start(plan)
	if err != nil {
		t.Fatal(err)
	}
	for _, stage := range []int{2, 3} {
		got, events := fsRunStage(t, c, out)
		if len(got) != units {
			t.Fatalf("stage %d: %d units issued, want %d", stage, len(got), units)
		}
		for i, u := range got {
			w := want[stage][i]
			if u.UnitID != fmt.Sprintf("r/s%d/u%d", stage, i) || u.UnitID != w.UnitID || u.Seed != w.Seed ||
				u.Seed != UnitSeed(plan.Seed, stage, i) || u.Stage != stage || u.Lo != w.Lo || u.Hi != w.Hi ||
				u.ConfigVersion != fmt.Sprintf("v%d", stage) {
				t.Errorf("stage %d unit %d: %+v, the run from stage 0 had %+v", stage, i, u, w)
			}
		}
		var start *StageStart
		var done *StageDone
		var runDone *RunDone
		for _, e := range events {
			switch m := e.(type) {
			case *StageStart:
				start = m
			case *StageDone:
				done = m
			case *RunDone:
				runDone = m
			}
		}
		if start == nil || start.Stage != stage || done == nil || done.Stage != stage || done.Completed != units || done.Last != (stage == 3) {
			t.Fatalf("stage %d: start %+v done %+v", stage, start, done)
		}
		if stage == 2 {
			if runDone != nil {
				t.Fatalf("run ended after stage 2: %+v", runDone)
			}
			if _, err := c.configUpdate(cfgOf(2)); !errors.Is(err, ErrStaleConfig) {
				t.Fatalf("config of the stage just run accepted again: %v", err)
			}
			if out, err = c.configUpdate(cfgOf(3)); err != nil {
				t.Fatal(err)
			}
		} else if runDone == nil || runDone.Stages != stages || runDone.Error != "" {
			t.Fatalf("after the last stage: RunDone %+v", runDone)
		}
	}
}

func TestCoordinatorFirstStageBadPlans(t *testing.T) {
	for _, p := range []StartRun{
		{RunID: "a", Stages: 3, Units: 1, InstancesPerUnit: 1, FirstStage: -1, Config: ConfigUpdate{Version: "v", Stage: -1}},
		{RunID: "b", Stages: 3, Units: 1, InstancesPerUnit: 1, FirstStage: 3, Config: ConfigUpdate{Version: "v", Stage: 3}},
		{RunID: "c", Stages: 3, Units: 1, InstancesPerUnit: 1, FirstStage: 1, Config: ConfigUpdate{Version: "v", Stage: 0}},
	} {
		c := newCoordinator(NewManualClock(coordT0), time.Hour, -1, 1, &coordMetrics{})
		out, err := c.start(p)
		s := coordOuts(out)
		if !errors.Is(err, ErrBadPlan) || len(s.events) != 1 || s.events[0].(*RunDone).Error == "" {
			t.Errorf("plan %+v: %v %+v", p, err, s)
		}
	}
}

// TestSystemFirstStage runs a System from stage 1 of 3: two stages, the
// units of stages 1 and 2 only, and every group reaches the updater.
func TestSystemFirstStage(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.InstancesPerUnit, cfg.LearnerBatch = 2, 2, 4, 2, 2
	cfg.StalenessK = 1 << 40
	cfg.FirstStage, cfg.InitialConfigVersion, cfg.InitialConfigJSON = 1, "stage-1", []byte(`{"stage":1}`)
	runner := &sysRunner{}
	up := &sysUpdater{}
	s := sysStart(t, cfg, func(int) Runner { return runner }, up, &sysProposer{})
	if _, err := s.Run(testCtx(t), 1); err == nil {
		t.Fatal("Run(stages=1) from FirstStage 1 accepted")
	}
	s = sysStart(t, cfg, func(int) Runner { return runner }, up, &sysProposer{})
	rep, err := s.Run(testCtx(t), 3)
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Stages) != 2 || rep.Stages[0].Stage != 1 || rep.Stages[1].Stage != 2 || !rep.Stages[1].Last ||
		rep.Stages[0].ConfigVersion != "stage-1" || rep.Stages[1].ConfigVersion != "stage-2" {
		t.Fatalf("stages %+v", rep.Stages)
	}
	seen := map[string]bool{}
	for _, u := range runner.snapshot() {
		if u.Stage < 1 || seen[u.UnitID] {
			t.Errorf("unit %s (stage %d) ran again or belongs to a skipped stage", u.UnitID, u.Stage)
		}
		seen[u.UnitID] = true
	}
	if len(seen) != 8 || rep.Learner.Groups != 16 || rep.Learner.Used != 16 || rep.Engineer.Proposed != 1 {
		t.Fatalf("%d units, learner %+v, engineer %+v", len(seen), rep.Learner, rep.Engineer)
	}
	cfg.FirstStage = -1
	if err := cfg.Validate(); err == nil {
		t.Fatal("FirstStage -1 accepted")
	}
}
