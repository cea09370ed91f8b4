package actors

import (
	"reflect"
	"testing"
	"time"
)

// TestNodeLoads follows the coordinator's per-node account through a
// stage, with a manual clock: leases issued count in flight; a result
// ends the lease and counts as done, timed lease to result; an expired
// lease and the leases of a node that left count as lost, and the node's
// counts stay; a late result for a unit whose lease expired counts as done
// but is not timed; a duplicate does not count.
func TestNodeLoads(t *testing.T) {
	clk := NewManualClock(coordT0)
	m := &coordMetrics{}
	c := newCoordinator(clk, time.Minute, -1, 1, m)
	want := func(step string, loads ...NodeLoad) {
		t.Helper()
		if got := m.loads.snapshot(); !reflect.DeepEqual(got, loads) {
			t.Fatalf("%s: node loads\n%+v\nwant\n%+v", step, got, loads)
		}
	}
	at := func(d time.Duration) time.Time { return coordT0.Add(d) }
	c.requestWork("w1", RequestWork{Node: "n1", Credits: 2})
	c.requestWork("w2", RequestWork{Node: "n2", Credits: 2})
	want("registered", NodeLoad{Node: "n1", LastContact: coordT0}, NodeLoad{Node: "n2", LastContact: coordT0})
	if _, err := c.start(coordPlan(1, 5)); err != nil {
		t.Fatal(err)
	}
	c.ack("w1", ConfigAck{Node: "n1", Version: "v0"})
	s := coordOuts(c.ack("w2", ConfigAck{Node: "n2", Version: "v0"}))
	if len(s.units["w1"]) != 2 || len(s.units["w2"]) != 2 {
		t.Fatalf("want 2+2 units leased, got %+v", s)
	}
	want("issued", NodeLoad{Node: "n1", InFlight: 2, LastContact: coordT0}, NodeLoad{Node: "n2", InFlight: 2, LastContact: coordT0})

	clk.Advance(3 * time.Second)
	c.unitDone("w1", UnitDone{UnitID: s.units["w1"][0].UnitID})
	clk.Advance(2 * time.Second)
	c.unitDone("w1", UnitDone{UnitID: s.units["w1"][1].UnitID})
	c.unitDone("w1", UnitDone{UnitID: s.units["w1"][1].UnitID}) // duplicate
	n1 := NodeLoad{Node: "n1", UnitsDone: 2, MeanUnitTime: 4 * time.Second, Timed: 2, LastDone: at(5 * time.Second), LastContact: at(5 * time.Second)}
	want("done", n1, NodeLoad{Node: "n2", InFlight: 2, LastContact: coordT0})

	clk.Advance(time.Minute) // n2's leases expire
	c.tick()
	n2 := NodeLoad{Node: "n2", Lost: 2, LastContact: coordT0}
	want("expired", n1, n2)
	clk.Advance(time.Second)
	c.unitDone("w2", UnitDone{UnitID: s.units["w2"][0].UnitID}) // late, on no lease
	n2.UnitsDone, n2.LastDone, n2.LastContact = 1, at(66*time.Second), at(66*time.Second)
	want("late result", n1, n2)

	if got := coordOuts(c.requestWork("w1", RequestWork{Node: "n1", Credits: 2})); len(got.units["w1"]) != 2 {
		t.Fatalf("want the 2 queued units on w1, got %+v", got)
	}
	n1.InFlight, n1.LastContact = 2, at(66*time.Second)
	want("re-issued", n1, n2)
	c.nodeLeft("n1")
	n1.InFlight, n1.Lost, n1.Left = 0, 2, true
	want("n1 left", n1, n2)
}

// TestSystemNodeLoads: after a run of one process, System.NodeLoads has
// the process's node (SystemConfig.Node) with every unit done and none in
// flight (the manual clock stands still: no time passed).
func TestSystemNodeLoads(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.Node, cfg.Rollouts, cfg.MaxInFlight, cfg.UnitsPerStage, cfg.InstancesPerUnit = "p1", 2, 2, 6, 2
	cfg.StalenessK = 1 << 40
	s := sysStart(t, cfg, func(int) Runner { return &sysRunner{} }, &sysUpdater{}, &sysProposer{})
	if _, err := s.Run(testCtx(t), 2); err != nil {
		t.Fatal(err)
	}
	want := []NodeLoad{{Node: "p1", UnitsDone: 12, Timed: 12, LastDone: coordT0, LastContact: coordT0}}
	if got := s.NodeLoads(); !reflect.DeepEqual(got, want) {
		t.Fatalf("node loads %+v, want %+v", got, want)
	}
}
