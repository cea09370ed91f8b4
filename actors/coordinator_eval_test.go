package actors

import (
	"errors"
	"testing"
	"time"
)

// TestCoordinatorEvalUnits: after a stage's training units (and, paced,
// the learner's drain) the plan's evaluation splits go out as evaluation
// units through the same leases; the stage ends when they are done, and an
// expired evaluation lease is issued again.
func TestCoordinatorEvalUnits(t *testing.T) {
	clk := NewManualClock(coordT0)
	c := newCoordinator(clk, time.Minute, 1, 3, &coordMetrics{})
	plan := coordPlan(2, 2)
	plan.Eval = []EvalSplit{{Split: "val", Spec: []byte(`{"name":"val"}`), Instances: 7}, {Split: "eval_paper", Spec: []byte(`{"name":"eval"}`), Instances: 2}}
	c.requestWork("w1", RequestWork{Node: "n1", Credits: 8})
	c.start(plan)
	s := coordOuts(c.ack("w1", ConfigAck{Node: "n1", Version: "v0"}))
	if len(s.units["w1"]) != 2 {
		t.Fatalf("want the 2 training units, got %+v", s)
	}
	for _, u := range s.units["w1"] {
		if u.Eval {
			t.Fatalf("training unit marked eval: %+v", u)
		}
		if s := coordOuts(c.unitDone("w1", UnitDone{UnitID: u.UnitID, GroupCount: 3})); s.nUnits() != 0 || len(s.events) != 0 {
			t.Fatalf("unit done before the learner drained: %+v", s)
		}
	}
	// The learner trains on the 6 groups: the stage drains, its evaluation starts.
	s = coordOuts(c.learnerProgress(learnerState{version: 2, retired: 6}))
	if len(s.events) != 0 {
		t.Fatalf("stage ended before its evaluation: %+v", s.events)
	}
	us := s.units["w1"]
	want := []struct {
		id     string
		lo, hi int
		spec   string
	}{{"r/s0/val/u0", 0, 3, `{"name":"val"}`}, {"r/s0/val/u1", 3, 6, `{"name":"val"}`}, {"r/s0/val/u2", 6, 7, `{"name":"val"}`}, {"r/s0/eval_paper/u0", 0, 2, `{"name":"eval"}`}}
	if len(us) != len(want) {
		t.Fatalf("want %d evaluation units, got %d: %+v", len(want), len(us), us)
	}
	for i, w := range want {
		u := us[i]
		if u.UnitID != w.id || u.Lo != w.lo || u.Hi != w.hi || string(u.ConfigJSON) != w.spec || !u.Eval ||
			u.Split == "train" || u.PolicyVersion != 2 || u.Seed != EvalSeed(7, 0) || u.Stage != 0 {
			t.Errorf("evaluation unit %d = %+v, want %+v at policy 2", i, u, w)
		}
	}
	// One evaluation lease expires: it goes out again, to the same live worker.
	for _, u := range us[1:] {
		if s := coordOuts(c.unitDone("w1", UnitDone{UnitID: u.UnitID})); len(s.events) != 0 {
			t.Fatalf("stage ended with an evaluation unit out: %+v", s.events)
		}
	}
	clk.Advance(2 * time.Minute)
	c.tick()
	s = coordOuts(c.requestWork("w1", RequestWork{Node: "n1", Credits: 1}))
	if len(s.units["w1"]) != 1 || s.units["w1"][0].UnitID != us[0].UnitID || s.units["w1"][0].Attempt != 1 {
		t.Fatalf("want %s again (attempt 1), got %+v", us[0].UnitID, s.units["w1"])
	}
	s = coordOuts(c.unitDone("w1", UnitDone{UnitID: us[0].UnitID}))
	if len(s.events) != 1 {
		t.Fatalf("want StageDone after the evaluation, got %+v", s)
	}
	done := s.events[0].(*StageDone)
	if done.Units != 2 || done.Completed != 2 || done.EvalUnits != 4 || done.Reissued != 1 || done.Last {
		t.Fatalf("StageDone %+v", done)
	}
	// A late copy of the expired lease counts as a duplicate.
	if out := c.unitDone("w1", UnitDone{UnitID: us[0].UnitID}); len(out) != 0 {
		t.Fatalf("late duplicate sent %v", out)
	}
}

func TestCoordinatorEvalPlanChecked(t *testing.T) {
	for _, eval := range [][]EvalSplit{
		{{Split: "train", Instances: 3}},
		{{Split: "val", Instances: 3}, {Split: "val", Instances: 1}},
		{{Split: "", Instances: 3}},
		{{Split: "val", Instances: 0}},
	} {
		c := newCoordinator(NewManualClock(coordT0), time.Minute, -1, 1, &coordMetrics{})
		plan := coordPlan(1, 1)
		plan.Eval = eval
		if _, err := c.start(plan); !errors.Is(err, ErrBadPlan) {
			t.Errorf("eval %+v: %v, want ErrBadPlan", eval, err)
		}
	}
}

// TestCoordinatorRolloutJoiningDuringEvaluation: a rollout whose first
// contact comes while the stage drains or is being evaluated gets the
// stage's config; once it acks, it is leased evaluation units, and when
// the only other rollout's node leaves, it finishes the evaluation.
func TestCoordinatorRolloutJoiningDuringEvaluation(t *testing.T) {
	for _, joinWhile := range []string{"draining", "evaluating"} {
		t.Run(joinWhile, func(t *testing.T) {
			c := newCoordinator(NewManualClock(coordT0), time.Hour, 1, 3, &coordMetrics{})
			plan := coordPlan(1, 1)
			plan.Eval = []EvalSplit{{Split: "val", Spec: []byte(`{"name":"val"}`), Instances: 9}}
			c.requestWork("a1", RequestWork{Node: "a", Credits: 1})
			c.start(plan)
			s := coordOuts(c.ack("a1", ConfigAck{Version: "v0"}))
			if len(s.units["a1"]) != 1 {
				t.Fatalf("want the training unit on a1, got %+v", s)
			}
			c.unitDone("a1", UnitDone{UnitID: s.units["a1"][0].UnitID, GroupCount: 3})
			if c.phase != phaseDraining {
				t.Fatalf("phase %v, want draining", c.phase)
			}
			join := func() {
				s := coordOuts(c.requestWork("b1", RequestWork{Node: "b", Credits: 2}))
				if len(s.configs["b1"]) != 1 || s.configs["b1"][0].Version != "v0" {
					t.Fatalf("b1 registered while %s: want the stage's config, got %+v", joinWhile, s)
				}
			}
			if joinWhile == "draining" {
				join()
			}
			c.learnerProgress(learnerState{version: 1, retired: 3})
			if c.phase != phaseEvaluating {
				t.Fatalf("phase %v, want evaluating", c.phase)
			}
			if joinWhile == "evaluating" {
				join()
			}
			got := coordOuts(c.ack("b1", ConfigAck{Version: "v0"})).units["b1"]
			// a's node leaves with its evaluation leases: b1 finishes the evaluation.
			got = append(got, coordOuts(c.nodeLeft("a")).units["b1"]...)
			var events []any
			for range 10 {
				if len(got) == 0 {
					break
				}
				u := got[0]
				got = got[1:]
				s := coordOuts(c.unitDone("b1", UnitDone{UnitID: u.UnitID}))
				for _, e := range s.events {
					if _, ok := e.(*StageDone); ok {
						events = append(events, e)
					}
				}
				got = append(got, coordOuts(c.requestWork("b1", RequestWork{Credits: 1})).units["b1"]...)
			}
			if len(events) != 1 {
				t.Fatalf("want StageDone once b1 played the evaluation, got %+v (phase %v, %d eval units left)", events, c.phase, c.evalLeft)
			}
			if done := events[0].(*StageDone); done.EvalUnits != 3 {
				t.Fatalf("StageDone %+v, want 3 evaluation units", done)
			}
		})
	}
}
