package actors

import (
	"errors"
	"math"
	"reflect"
	"testing"
)

func TestRolloutLogic(t *testing.T) {
	m := &rolloutMetrics{}
	r := newRollout("n1", 2, m)
	if out := r.started(); len(out) != 2 || !reflect.DeepEqual(out[0].msg, &RequestWork{Node: "n1", Credits: 2}) ||
		out[1].to != toLearner || !reflect.DeepEqual(out[1].msg, &SubscribePolicy{Node: "n1"}) {
		t.Fatalf("started: %+v", out)
	}
	u := func(id, v string) *WorkUnit { return &WorkUnit{UnitID: id, ConfigVersion: v, Stage: 1} }

	// A unit before any config: refused, credit given back.
	out := r.unit(u("a", "v1"))
	if len(out) != 2 || !out[0].msg.(*UnitRejected).NeedConfig || out[1].msg.(*RequestWork).Credits != 1 {
		t.Fatalf("unit without config: %+v", out)
	}
	if out := r.config(ConfigUpdate{Version: "v1", Stage: 1}); len(out) != 1 ||
		!reflect.DeepEqual(out[0].msg, &ConfigAck{Node: "n1", Version: "v1"}) {
		t.Fatalf("config: %+v", out)
	}
	if out := r.config(ConfigUpdate{Version: "v0", Stage: 0}); out != nil || r.version != "v1" {
		t.Fatalf("older stage's config taken: %+v", out)
	}
	for _, id := range []string{"a", "b"} {
		if out := r.unit(u(id, "v1")); len(out) != 1 || out[0].to != runUnit {
			t.Fatalf("unit %s: %+v", id, out)
		}
	}
	// Over the credit: refused without giving a credit back.
	if out := r.unit(u("c", "v1")); len(out) != 1 || out[0].msg.(*UnitRejected).NeedConfig {
		t.Fatalf("unit over credit: %+v", out)
	}
	groups := wireGroups()
	out = r.finished(u("a", "v1"), UnitDone{UnitID: "ignored", Node: "x", Result: []byte{1}, Groups: groups}, nil)
	if len(out) != 3 || out[0].to != toLearner || out[1].to != toCoordinator || out[2].to != toCoordinator {
		t.Fatalf("finished: %+v", out)
	}
	if g := out[0].msg.(*UnitGroups); g.UnitID != "a" || g.Stage != 1 || g.Node != "n1" || !reflect.DeepEqual(g.Groups, groups) {
		t.Fatalf("groups %+v", g)
	}
	if d := out[1].msg.(*UnitDone); d.UnitID != "a" || d.Node != "n1" || d.Groups != nil || string(d.Result) != "\x01" {
		t.Fatalf("done %+v", d)
	}
	// A unit of another config version is refused even with room.
	if out := r.unit(u("d", "v2")); len(out) != 2 || !out[0].msg.(*UnitRejected).NeedConfig {
		t.Fatalf("unit of an unacked version: %+v", out)
	}
	out = r.finished(u("b", "v1"), UnitDone{}, errors.New("boom"))
	if len(out) != 2 || out[0].msg.(*UnitRejected).Reason != "runner: boom" || out[1].msg.(*RequestWork).Credits != 1 {
		t.Fatalf("failed: %+v", out)
	}
	if r.inFlight != 0 || m.started.Load() != 2 || m.done.Load() != 1 || m.failed.Load() != 1 || m.rejected.Load() != 3 {
		t.Fatalf("inFlight %d metrics %+v", r.inFlight, m)
	}
}

func lrnGroups(unit string, stage int, versions ...int64) *UnitGroups {
	m := &UnitGroups{UnitID: unit, Stage: stage}
	for _, v := range versions {
		m.Groups = append(m.Groups, Group{InstanceID: unit, PolicyVersion: v})
	}
	return m
}

func TestLearnerLogicBatchesAndStaleness(t *testing.T) {
	m := &learnerMetrics{}
	l := newLearner(3, 1, 0, m)
	if b := l.groups(lrnGroups("u1", 0, 0, 0)); len(b) != 0 {
		t.Fatalf("batch before B groups: %v", b)
	}
	b := l.groups(lrnGroups("u2", 0, 0, 0, 0, 0, 0))
	if len(b) != 2 || len(b[0]) != 3 || len(b[1]) != 3 || b[0][0].InstanceID != "u1" || b[1][2].InstanceID != "u2" {
		t.Fatalf("batches %v", b)
	}
	if len(l.pending) != 1 || m.pending.Load() != 1 {
		t.Fatalf("pending %d", len(l.pending))
	}
	// A second copy of a unit is ignored.
	if b := l.groups(lrnGroups("u2", 0, 0, 0, 0)); len(b) != 0 || m.dupUnits.Load() != 1 {
		t.Fatal("duplicate unit used")
	}
	l.updated(3, 2, nil)
	if l.version != 2 {
		t.Fatalf("version %d after update", l.version)
	}
	if l.updated(3, 9, errors.New("x")); l.version != 2 || m.updateErrors.Load() != 1 {
		t.Fatal("failed update changed the version")
	}
	// Version 2, K=1: groups of version 0 are stale and dropped, 1 and 2 kept.
	b = l.groups(lrnGroups("u3", 0, 0, 1, 2, 0))
	if m.stale.Load() != 2 || len(b) != 1 || b[0][1].PolicyVersion != 1 || b[0][2].PolicyVersion != 2 {
		t.Fatalf("stale %d batches %v", m.stale.Load(), b)
	}
	// An older version from the Updater does not move the version back.
	if l.updated(3, 1, nil); l.version != 2 {
		t.Fatalf("version went back to %d", l.version)
	}
	if m.groups.Load() != 11 || m.used.Load() != 6 || m.updates.Load() != 2 {
		t.Fatalf("metrics %+v", m.snapshot())
	}

	// Stages: units two stages back are forgotten and their late copies
	// dropped.
	l.stageStart(1)
	l.stageStart(2)
	if _, ok := l.seen["u1"]; ok {
		t.Fatal("stage-0 unit still remembered at stage 2")
	}
	if b := l.groups(lrnGroups("u1", 0, 2, 2, 2)); b != nil || m.lateUnits.Load() != 1 {
		t.Fatal("late unit used")
	}
	l.groups(lrnGroups("s1", 1, 2))
	l.stageStart(3)
	if _, ok := l.seen["s1"]; ok {
		t.Fatal("stage-1 unit still remembered at stage 3")
	}
}

func TestLearnerLogicKeepStale(t *testing.T) {
	m := &learnerMetrics{}
	l := newLearner(2, 0, math.MaxInt64, m)
	l.updated(1, 5, nil)
	b := l.groups(lrnGroups("u", 0, 4, 5))
	if m.stale.Load() != 1 || len(b) != 1 {
		t.Fatalf("keepStale: stale %d batches %v", m.stale.Load(), b)
	}
}

func TestEngineerLogic(t *testing.T) {
	m := &engineerMetrics{}
	e := newEngineer(m)
	if s, ok := e.stageDone(&StageDone{Stage: 0}); !ok || s != 1 {
		t.Fatalf("stage 0 done: %d %v", s, ok)
	}
	if _, ok := e.stageDone(&StageDone{Stage: 0}); ok {
		t.Fatal("proposed twice for one stage")
	}
	if _, ok := e.stageDone(&StageDone{Stage: 1, Last: true}); ok {
		t.Fatal("proposed after the last stage")
	}
	if m, ok := e.proposed("r", 1, "v1", []byte("{}"), nil).(*ConfigUpdate); !ok || m.Version != "v1" || m.Stage != 1 {
		t.Fatalf("proposed: %+v", m)
	}
	if m, ok := e.proposed("r", 2, "", nil, nil).(*ProposalFailed); !ok || m.Stage != 2 {
		t.Fatalf("empty version: %+v", m)
	}
	if m, ok := e.proposed("r", 2, "v", nil, errors.New("llm down")).(*ProposalFailed); !ok || m.Error != "llm down" {
		t.Fatalf("error: %+v", m)
	}
	if m.proposed.Load() != 1 || m.failed.Load() != 2 {
		t.Fatal("metrics")
	}
}

// Each subscriber has at most one PolicyVersion in flight; versions that
// move meanwhile are sent (the latest only) when it acks.
func TestLearnerLogicPolicyWindow(t *testing.T) {
	l := newLearner(1, 1, 0, &learnerMetrics{})
	if !l.subscribe("a") || l.subscribe("a") {
		t.Fatal("subscribe: first must send the current version, second nothing")
	}
	if got := l.updated(1, 1, nil); len(got) != 0 {
		t.Fatalf("sent to a with one outstanding: %v", got)
	}
	l.subscribe("b") // gets version 1 now
	l.updated(1, 2, nil)
	l.updated(1, 3, nil)
	if !l.ack("a") || l.subs["a"].sent != 3 {
		t.Fatalf("ack a: want version 3 sent, state %+v", l.subs["a"])
	}
	if !l.ack("b") || l.subs["b"].sent != 3 {
		t.Fatalf("ack b: %+v", l.subs["b"])
	}
	if l.ack("a") || l.subs["a"].outstanding {
		t.Fatal("ack at the current version sent again")
	}
	if got := l.updated(1, 4, nil); len(got) != 1 || got[0] != "a" {
		t.Fatalf("publish: %v, want [a] (b still outstanding)", got)
	}
	if l.ack("nobody") {
		t.Fatal("ack from a non-subscriber")
	}
}
