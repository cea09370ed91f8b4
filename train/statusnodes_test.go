package train

import (
	"encoding/json"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/learner/engine"
)

// TestLoadStatus: the loads of one process's node names add up; the mean
// unit time is weighted by the units behind each mean; the heartbeat is
// the latest; a node counts as left only when all its names left.
func TestLoadStatus(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	got := LoadStatus(
		actors.NodeLoad{Node: "a", UnitsDone: 3, InFlight: 1, Lost: 1, MeanUnitTime: time.Second, Timed: 3, LastDone: t0, LastContact: t0.Add(time.Second), Left: true},
		actors.NodeLoad{Node: "b", UnitsDone: 2, InFlight: 2, MeanUnitTime: 6 * time.Second, Timed: 1, LastDone: t0.Add(2 * time.Second), LastContact: t0},
	)
	want := StatusLoad{UnitsDone: 5, UnitsInFlight: 3, LostLeases: 1, MeanUnitTime: 2250 * time.Millisecond,
		LastUnitMs: t0.Add(2 * time.Second).UnixMilli(), LastHeartbeatMs: t0.Add(time.Second).UnixMilli()}
	if got == nil || *got != want {
		t.Fatalf("LoadStatus = %+v, want %+v", got, want)
	}
	if LoadStatus() != nil {
		t.Error("LoadStatus() of no node is not nil")
	}
	if l := LoadStatus(actors.NodeLoad{Node: "a"}); l.LastHeartbeatMs != 0 || l.LastUnitMs != 0 || l.Left {
		t.Errorf("a node never heard from: %+v", l)
	}
}

// TestFigures3: a mean unit time is shown to 3 significant figures, to
// the microsecond at least.
func TestFigures3(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{1304871246, "1.3s"}, {16156100, "16.2ms"}, {999499, "999µs"}, {999500, "1ms"}, {1500 * time.Millisecond, "1.5s"},
		{123456 * time.Second, "34h10m0s"}, {1234, "1µs"}, {400, "0s"},
	} {
		if got := figures3(tc.d).String(); got != tc.want {
			t.Errorf("figures3(%d) = %s, want %s", tc.d, got, tc.want)
		}
	}
}

// TestWriteStatusNodes: `t2t status` text (and the page without scripts)
// prints each node's load, the serving process's policy lag, and an LLM
// policy's device memory.
func TestWriteStatusNodes(t *testing.T) {
	now := time.UnixMilli(1_700_000_010_000)
	rep := &Status{Run: "r", Redis: "redis://x",
		Device: &DeviceStatus{Device: "cuda:0", Bytes: 3 << 29, PeakBytes: 2 << 30, Source: "CUDA memory allocated by the torch worker", ReadUnixMs: now.UnixMilli()},
		Nodes: []StatusNode{
			{ID: "p", Name: "host", PID: 42, Roles: []string{"coordinator", "rollout"}, Address: "this process", PolicyLag: 1,
				Load: &StatusLoad{UnitsDone: 7, UnitsInFlight: 2, MeanUnitTime: 1500 * time.Millisecond, LastHeartbeatMs: now.Add(-300 * time.Millisecond).UnixMilli()}},
			{ID: "r", Name: "roll", Roles: []string{"rollout"}, Address: "10.0.0.2:4000", Capacity: 4,
				Load: &StatusLoad{UnitsDone: 1, LostLeases: 2, Left: true}},
			{ID: "c", Name: "coord", Roles: []string{"coordinator"}, Address: "10.0.0.1:4000"},
		}}
	var b strings.Builder
	if err := WriteStatus(&b, rep, now); err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"\ndevice memory: 1.50 GiB (peak 2.00 GiB) CUDA memory allocated by the torch worker on cuda:0\n",
		"\n  host (id p, pid 42) coordinator,rollout at this process: 7 units done, 2 in flight, mean unit 1.5s, 0 leases lost, last heartbeat 300ms ago, policy lag 1\n",
		"\n  roll (id r) rollout at 10.0.0.2:4000, capacity 4: 1 units done, 0 in flight, mean unit -, 2 leases lost, last heartbeat never, left\n",
		"\n  coord (id c) coordinator at 10.0.0.1:4000\n",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("no line %q in:\n%s", line, b.String())
		}
	}
	// --json: indented, and decodes back to the same nodes.
	b.Reset()
	if err := WriteStatusJSON(&b, rep); err != nil {
		t.Fatal(err)
	}
	var back Status
	if err := json.Unmarshal([]byte(b.String()), &back); err != nil || !strings.HasPrefix(b.String(), "{\n  \"") || len(back.Nodes) != len(rep.Nodes) {
		t.Errorf("--json: %v:\n%s", err, b.String())
	}
	// As `t2t status` reads them from the run's record in Redis.
	rep.NodesUnixMs = now.Add(-2 * time.Second).UnixMilli()
	b.Reset()
	if err := WriteStatus(&b, rep, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nnodes (as the run recorded them 2s ago):\n  host (id p, pid 42) ") {
		t.Errorf("recorded nodes without their age:\n%s", b.String())
	}
	rep.Nodes = nil
	b.Reset()
	if err := WriteStatus(&b, rep, now); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "\nnodes: not in Redis (the run wrote no nodes record; ") {
		t.Errorf("no nodes known, but not said so:\n%s", b.String())
	}
}

// fakeDevice reports n bytes, counting its readings; it fails with err.
type fakeDevice struct {
	Policy // not called
	reads  atomic.Int64
	err    error
}

func (f *fakeDevice) DeviceMemory() (engine.DeviceMemory, error) {
	n := f.reads.Add(1)
	return engine.DeviceMemory{Device: "cpu", Bytes: n << 20, Source: "process RSS"}, f.err
}

// TestDeviceMeter: the meter reads the device in the background, at most
// once per DeviceMemoryEvery however often it is asked; until the first
// reading is in it says so; a failed reading is shown as not known.
func TestDeviceMeter(t *testing.T) {
	f := &fakeDevice{}
	m := &DeviceMeter{read: f.DeviceMemory, every: DeviceMemoryEvery}
	t0 := time.UnixMilli(1_700_000_000_000)
	if s := m.Status(t0); s.ReadUnixMs != 0 || s.String() != "not read yet" {
		t.Fatalf("first status %+v %q", s, s.String())
	}
	m.Wait()
	for _, d := range []time.Duration{0, time.Second, DeviceMemoryEvery - time.Millisecond} {
		if s := m.Status(t0.Add(d)); s.Bytes != 1<<20 || s.ReadUnixMs != t0.UnixMilli() || s.String() != "0.00 GiB process RSS on cpu" {
			t.Fatalf("status at +%s: %+v %q", d, s, s.String())
		}
	}
	m.Wait()
	if n := f.reads.Load(); n != 1 {
		t.Fatalf("%d readings within %s, want 1", n, DeviceMemoryEvery)
	}
	f.err = errors.New("worker gone")
	m.Status(t0.Add(DeviceMemoryEvery))
	m.Wait()
	if s := m.Status(t0.Add(DeviceMemoryEvery)); s.Error != "worker gone" || s.String() != "not known: worker gone" || f.reads.Load() != 2 {
		t.Fatalf("after a failed reading: %+v (%d readings)", s, f.reads.Load())
	}
	if NewDeviceMeter(f) == nil {
		t.Error("no meter for a policy that reports its device")
	}
}
