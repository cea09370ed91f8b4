package train

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"testing"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
)

// TestUnitGroupsCarryInstances: in one process a unit's groups carry their
// instances (no JSON), and the learner takes them as they are; a rollout
// node's groups carry the JSON, which crosses the wire (the instance
// itself does not) and decodes to the same instances.
func TestUnitGroupsCarryInstances(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	st := openStore(t)
	cfgJSON, _ := json.Marshal(smallConfig())
	u := actors.WorkUnit{UnitID: "inst/s1/u2", RunID: "inst", Stage: 1, ConfigVersion: "c1", ConfigJSON: cfgJSON,
		Seed: actors.UnitSeed(seed, 1, 2), Lo: 16, Hi: 24}
	local := localExecutor(Options{RunID: "inst", Seed: seed, GroupSize: 2}, &ScriptedPolicy{MistakeRate: 0.3}, st)
	loc, err := local.run(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	want, err := env.Generate(smallConfig(), actors.StageSeed(seed, 1), 16, 24)
	if err != nil {
		t.Fatal(err)
	}
	if len(loc.done.Groups) != len(want) || loc.first != 0 || loc.last != 0 || loc.result.UnitID != u.UnitID {
		t.Fatalf("%d groups (want %d), versions %d..%d, result of %q", len(loc.done.Groups), len(want), loc.first, loc.last, loc.result.UnitID)
	}
	for i := range loc.done.Groups {
		g := &loc.done.Groups[i]
		in, err := groupInstance(g)
		if err != nil || in != g.Local || g.Instance != nil || !reflect.DeepEqual(in, want[i]) {
			t.Fatalf("in-process group %d: instance %v (%v), %d JSON bytes; want generated instance %s", i, in, err, len(g.Instance), want[i].ID)
		}
	}
	// The same unit played for another node: its groups go through the
	// actors' wire encoding.
	remote := *local
	remote.wire = true
	rem, err := remote.run(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	ser := actorSerializer(t)
	b, err := ser.Serialize(&actors.UnitGroups{UnitID: u.UnitID, Groups: rem.done.Groups})
	if err != nil {
		t.Fatal(err)
	}
	name, _ := ser.GetTypeName(&actors.UnitGroups{})
	msg, err := ser.Deserialize(name, b)
	if err != nil {
		t.Fatal(err)
	}
	recv := msg.(*actors.UnitGroups).Groups
	for i := range recv {
		g := &recv[i]
		if g.Local != nil {
			t.Fatalf("group %d: the instance itself crossed the wire", i)
		}
		in, err := groupInstance(g)
		if err != nil || !reflect.DeepEqual(in, want[i]) {
			t.Fatalf("received group %d decodes to %v (%v), want %s", i, in, err, want[i].ID)
		}
		g.Local, g.Instance = loc.done.Groups[i].Local, nil
		if !reflect.DeepEqual(*g, loc.done.Groups[i]) {
			t.Fatalf("received group %d differs from the in-process one", i)
		}
	}
	bad := actors.Group{InstanceID: "x", Instance: []byte("{")}
	if _, err := groupInstance(&bad); err == nil {
		t.Fatal("a group with broken instance JSON decoded")
	}
}

// TestUnitChunksSeeds: a unit played a chunk at a time samples chunk c
// with actors.ChunkSeed(unit seed, c), and chunk 0 as the whole unit does;
// each chunk asks for the policy it plays.
func TestUnitChunksSeeds(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	cfgJSON, _ := json.Marshal(smallConfig())
	u := actors.WorkUnit{UnitID: "chunk/s0/u0", RunID: "chunk", ConfigVersion: "c0", ConfigJSON: cfgJSON, Seed: actors.UnitSeed(seed, 0, 0), Lo: 0, Hi: 10}
	pol := &ScriptedPolicy{MistakeRate: 0.3}
	whole, err := localExecutor(Options{RunID: "whole", Seed: seed, GroupSize: 2}, pol, openStore(t)).run(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	var acquired []int64
	e := localExecutor(Options{RunID: "chunked", Seed: seed, GroupSize: 2}, pol, openStore(t))
	e.chunk = 4
	e.acquire = func(context.Context, actors.WorkUnit) (int64, evaluate.Player, func(), error) {
		v := int64(len(acquired) + 3)
		acquired = append(acquired, v)
		return v, pol, func() {}, nil
	}
	chunked, err := e.run(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(acquired) != "[3 4 5]" || chunked.first != 3 || chunked.last != 5 {
		t.Fatalf("versions acquired %v, first %d, last %d", acquired, chunked.first, chunked.last)
	}
	ins, err := env.Generate(smallConfig(), actors.StageSeed(seed, 0), 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	for c, lo := range []int{0, 4, 8} {
		hi := min(lo+4, 10)
		ro, err := pol.Play(ins[lo:hi], 2, 1, actors.ChunkSeed(u.Seed, c))
		if err != nil {
			t.Fatal(err)
		}
		var d actors.UnitDone
		if err := appendGroups(&d, ins[lo:hi], ro, 2, int64(3+c), "c0", false); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(d.Groups, chunked.done.Groups[lo:hi]) {
			t.Fatalf("chunk %d was not sampled with ChunkSeed(unit seed, %d)", c, c)
		}
		if c == 0 && !reflect.DeepEqual(stripVersions(whole.done.Groups[:4]), stripVersions(d.Groups)) {
			t.Fatal("chunk 0 does not sample as the whole unit starts")
		}
	}
}

// stripVersions returns gs with their policy versions zeroed.
func stripVersions(gs []actors.Group) []actors.Group {
	out := append([]actors.Group(nil), gs...)
	for i := range out {
		out[i].PolicyVersion = 0
	}
	return out
}

// actorSerializer is the actors' wire serializer with every message
// registered.
func actorSerializer(t *testing.T) *actors.Serializer {
	t.Helper()
	reg := actors.NewRegistry()
	if err := actors.RegisterMessages(reg); err != nil {
		t.Fatal(err)
	}
	return actors.NewSerializer(reg)
}
