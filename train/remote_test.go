package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gridnet"
)

// openPolicyStore opens a PolicyStore on the store's (embedded) Redis.
func openPolicyStore(t *testing.T, st *store.Store) *PolicyStore {
	t.Helper()
	ps, err := OpenPolicyStore(context.Background(), st.URL(), "")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ps.Close() })
	return ps
}

func TestPolicyStoreSpecVersionsAndPruning(t *testing.T) {
	ctx := context.Background()
	ps := openPolicyStore(t, openStore(t))
	if _, err := ps.Spec(ctx, "r1"); !errors.Is(err, ErrNoSpec) {
		t.Fatalf("spec of an unknown run: %v", err)
	}
	if _, err := ps.Latest(ctx, "r1"); !errors.Is(err, ErrNoPolicy) {
		t.Fatalf("latest of an unknown run: %v", err)
	}
	spec := RunSpec{RunID: "r1", Seed: 9, GroupSize: 4, Policy: "scripted", MistakeRate: 0.25}
	if err := ps.PutSpec(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if got, err := ps.Spec(ctx, "r1"); err != nil || !reflect.DeepEqual(got, spec) {
		t.Fatalf("spec %+v, %v; want %+v", got, err, spec)
	}
	for v := range int64(6) {
		if err := ps.Publish(ctx, "r1", v, []byte{byte(v), 1, 2}); err != nil {
			t.Fatal(err)
		}
	}
	if v, err := ps.Latest(ctx, "r1"); err != nil || v != 5 {
		t.Fatalf("latest %d, %v; want 5", v, err)
	}
	for v := range int64(6) {
		w, err := ps.Weights(ctx, "r1", v)
		kept := v > 5-store.KeepPolicies
		switch {
		case kept && (err != nil || !slices.Equal(w, []byte{byte(v), 1, 2})):
			t.Fatalf("version %d: %v %v", v, w, err)
		case !kept && !errors.Is(err, ErrNoPolicy):
			t.Fatalf("version %d not pruned: %v %v", v, w, err)
		}
	}
}

// gridTestPolicy is a small gridnet policy.
func gridTestPolicy(t *testing.T, seed uint64) *GridPolicy {
	t.Helper()
	gc := learner.DefaultGRPOConfig()
	gc.GroupSize = 4
	net, err := gridnet.New("cpu", gridnet.Config{ObsSize: env.ObsSize(env.ObsRadius), Hidden: []int{8}, Seed: seed}, gc)
	if err != nil {
		t.Fatal(err)
	}
	return &GridPolicy{Net: net, Rollout: gridnet.DefaultRolloutConfig()}
}

// TestGridWeightsTravelThroughRedis trains a gridnet a little, publishes
// it, and checks that a rollout policy built from the run's spec plays
// exactly as the learner's after loading the published version, and not
// before.
func TestGridWeightsTravelThroughRedis(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	ps := openPolicyStore(t, openStore(t))
	lp := gridTestPolicy(t, seed)
	cfg := smallConfig()
	ins, err := env.Generate(cfg, seed, 0, 12)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, err := gridnet.BCFromOptimal(lp.Net, ins, lp.Rollout); err != nil {
			t.Fatal(err)
		}
	}
	opt := Options{RunID: "grid", Seed: seed, GroupSize: 4}
	spec, err := SpecOf(opt, lp)
	if err != nil {
		t.Fatal(err)
	}
	if err := ps.PutSpec(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := ps.PublishPolicy(ctx, "grid", lp); err != nil {
		t.Fatal(err)
	}
	got, err := ps.Spec(ctx, "grid")
	if err != nil {
		t.Fatal(err)
	}
	pol, err := got.NewPolicy("cpu", "")
	if err != nil {
		t.Fatal(err)
	}
	rp := pol.(*GridPolicy)
	play := func(p Policy) *learner.Rollout {
		ro, err := p.Play(ins, 4, 1, seed^0x77)
		if err != nil {
			t.Fatal(err)
		}
		return ro
	}
	want := play(lp)
	if before := play(rp); slices.Equal(before.LogProbs, want.LogProbs) {
		t.Fatal("the untrained rollout policy already plays like the trained one: the test cannot tell")
	}
	// Corrupt weights are refused and change nothing.
	if err := DecodeWeights(rp, 99, []byte("not safetensors at all")); err == nil {
		t.Fatal("corrupt weights loaded")
	}
	v, err := ps.LoadLatest(ctx, "grid", rp, -1)
	if err != nil {
		t.Fatal(err)
	}
	if v != lp.Version() || rp.Version() != lp.Version() || v == 0 {
		t.Fatalf("loaded version %d (policy says %d), learner at %d", v, rp.Version(), lp.Version())
	}
	after := play(rp)
	if !slices.Equal(after.Actions, want.Actions) || !slices.Equal(after.LogProbs, want.LogProbs) {
		t.Fatal("the rollout policy does not play like the learner's after loading its weights")
	}
	if v2, err := ps.LoadLatest(ctx, "grid", rp, v); err != nil || v2 != v {
		t.Fatalf("reload of the same version: %d, %v", v2, err)
	}
}

// TestRemoteRunnerMatchesInProcessRunner runs a unit through a rollout
// node's runner and through the in-process run's executor: the same
// groups (the remote ones also carry their instance's JSON, for the
// learner's node), the published policy version, one application in Redis
// however often the unit runs, and the policy lag as the learner moves.
func TestRemoteRunnerMatchesInProcessRunner(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	st := openStore(t)
	ps := openPolicyStore(t, st)
	spec := RunSpec{RunID: "remote", Seed: seed, GroupSize: 3, Policy: "scripted", MistakeRate: 0.2}
	if err := ps.PutSpec(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := ps.Publish(ctx, "remote", 5, nil); err != nil {
		t.Fatal(err)
	}
	cfgJSON, _ := json.Marshal(smallConfig())
	unit := func(i int) actors.WorkUnit {
		return actors.WorkUnit{UnitID: "remote/s0/u" + string(rune('0'+i)), RunID: "remote", Stage: 0, Split: store.SplitTrain,
			ConfigVersion: "c0", ConfigJSON: cfgJSON, Seed: seed + uint64(i), Lo: 8 * i, Hi: 8 * (i + 1)}
	}
	var logs []UnitLog
	rr := NewRemoteRunner(st, ps, "cpu", nil, func(u UnitLog) { logs = append(logs, u) })
	got, err := rr.RunUnit(ctx, unit(0))
	if err != nil {
		t.Fatal(err)
	}
	local := localExecutor(Options{RunID: "local", Seed: seed, GroupSize: 3}, &ScriptedPolicy{MistakeRate: 0.2}, openStore(t))
	want, err := local.RunUnit(ctx, unit(0))
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Groups) != 8 || len(got.Groups) != len(want.Groups) {
		t.Fatalf("%d groups, in-process %d", len(got.Groups), len(want.Groups))
	}
	for i := range got.Groups {
		g, w := got.Groups[i], want.Groups[i]
		if g.PolicyVersion != 5 {
			t.Fatalf("group %d played with policy %d, want the published 5", i, g.PolicyVersion)
		}
		if w.Instance != nil || w.Local == nil {
			t.Fatalf("in-process group %d: %d bytes of instance JSON, instance %v; want the instance itself only", i, len(w.Instance), w.Local)
		}
		var in env.Instance
		if err := json.Unmarshal(g.Instance, &in); err != nil || !reflect.DeepEqual(&in, w.Local) {
			t.Fatalf("remote group %d carries instance JSON %s (%v), not the in-process group's instance", i, g.Instance, err)
		}
		g.PolicyVersion, g.Instance = w.PolicyVersion, nil
		if !reflect.DeepEqual(g, w) {
			t.Fatalf("group %d differs from the in-process run", i)
		}
	}
	if len(logs) != 1 || logs[0].PolicyVersion != 5 || logs[0].Lag != 0 || logs[0].Result.UnitID != "remote/s0/u0" {
		t.Fatalf("unit logs %+v", logs)
	}
	// The same unit again (a re-issue): applied once.
	if _, err := rr.RunUnit(ctx, unit(0)); err != nil {
		t.Fatal(err)
	}
	if n, err := st.UnitsApplied(ctx, "remote", 0, store.SplitTrain); err != nil || n != 1 {
		t.Fatalf("%d units applied, %v; want 1", n, err)
	}
	if !reflect.DeepEqual(logs[0].Result.Buckets, logs[1].Result.Buckets) {
		t.Fatal("a re-run unit gave another result")
	}
	// The learner heard at 7 while 5 is the newest published: lag 2. Then 7
	// is published and the next unit plays it.
	learnerAt := int64(7)
	rr.SetLearnerVersion(func() int64 { return learnerAt })
	if _, err := rr.RunUnit(ctx, unit(1)); err != nil {
		t.Fatal(err)
	}
	if l := logs[2]; l.PolicyVersion != 5 || l.LearnerVersion != 7 || l.Lag != 2 {
		t.Fatalf("unit log %+v, want version 5, learner 7, lag 2", l)
	}
	if err := ps.Publish(ctx, "remote", 7, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := rr.RunUnit(ctx, unit(2)); err != nil {
		t.Fatal(err)
	}
	if l := logs[3]; l.PolicyVersion != 7 || l.Lag != 0 {
		t.Fatalf("unit log %+v, want version 7, lag 0", l)
	}
	s := rr.Stats()
	if s.Units != 4 || s.PolicyLoads != 2 || s.PolicyLagSum != 2 || s.PolicyLagMax != 2 || s.Failed != 0 {
		t.Fatalf("stats %+v", s)
	}
	// A run without a spec fails its units (they are re-issued elsewhere).
	bad := unit(3)
	bad.RunID = "nospec"
	if _, err := rr.RunUnit(ctx, bad); !errors.Is(err, ErrNoSpec) {
		t.Fatalf("unit of a run without spec: %v", err)
	}
}

// TestRunPublishesForOtherNodes runs a scripted run that listens for other
// nodes and publishes to a PolicyStore: the spec and the final policy
// version are in Redis, and Started saw a listening system.
func TestRunPublishesForOtherNodes(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	st := openStore(t)
	ps := openPolicyStore(t, st)
	var addr string
	opt := Options{RunID: "pub", Stages: 2, Seed: seed, Config: smallConfig(), InstancesPerUnit: 8, GroupSize: 3,
		LearnerBatch: 4, ValPerSize: 1, EvalPerSize: 1,
		Cluster: Cluster{Node: "n1", Listen: "127.0.0.1:0", Policies: ps, Started: func(s *actors.System) error {
			addr = s.Host().Address()
			return nil
		}}}
	res, err := Run(ctx, opt, &ScriptedPolicy{MistakeRate: 0.1}, st)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("Started saw address %q", addr)
	}
	spec, err := ps.Spec(ctx, "pub")
	if err != nil || spec.Seed != seed || spec.GroupSize != 3 || spec.Policy != "scripted" || spec.MistakeRate != 0.1 {
		t.Fatalf("spec %+v, %v", spec, err)
	}
	v, err := ps.Latest(ctx, "pub")
	if err != nil || v != res.Actors.Learner.Version || v == 0 {
		t.Fatalf("latest published %d, %v; learner ended at %d", v, err, res.Actors.Learner.Version)
	}
	for _, r := range res.Actors.Rollouts {
		if r.Node != "n1" {
			t.Fatalf("local rollout reports node %q, want n1", r.Node)
		}
	}
	// Without local rollouts the run must listen.
	bad := opt
	bad.Cluster = Cluster{RemoteOnly: true}
	if _, err := Run(ctx, bad, &ScriptedPolicy{}, st); !errors.Is(err, ErrOptions) {
		t.Fatalf("remote-only run without Listen: %v", err)
	}
}

// BenchmarkPolicyPublishLoad measures one policy version's trip through
// Redis at the default gridnet size (hidden 128,128): the learner's
// publication (encode + write) and a rollout node's load (read + decode).
func BenchmarkPolicyPublishLoad(b *testing.B) {
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	ps, err := OpenPolicyStore(ctx, st.URL(), "")
	if err != nil {
		b.Fatal(err)
	}
	defer ps.Close()
	newPol := func() *GridPolicy {
		net, err := gridnet.New("cpu", gridnet.DefaultConfig(env.ObsSize(env.ObsRadius)), learner.DefaultGRPOConfig())
		if err != nil {
			b.Fatal(err)
		}
		return &GridPolicy{Net: net, Rollout: gridnet.DefaultRolloutConfig()}
	}
	lp, rp := newPol(), newPol()
	w, err := EncodeWeights(lp)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("weights: %d bytes", len(w))
	b.Run("publish", func(b *testing.B) {
		for range b.N {
			if err := ps.PublishPolicy(ctx, "bench", lp); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("load", func(b *testing.B) {
		for range b.N {
			if _, err := ps.LoadLatest(ctx, "bench", rp, -1); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestRemoteRunnerTakesUpVersions: a rollout node's runner plays at least
// the version a unit was issued at, takes up a version published while a
// unit plays at its next chunk (each group carries the version it was
// played with), and loads an announced version in the background
// (Prefetch) so that the next unit starts with it.
func TestRemoteRunnerTakesUpVersions(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	st := openStore(t)
	ps := openPolicyStore(t, st)
	if err := ps.PutSpec(ctx, RunSpec{RunID: "up", Seed: seed, GroupSize: 2, Policy: "scripted"}); err != nil {
		t.Fatal(err)
	}
	publish := func(v int64) {
		t.Helper()
		if err := ps.Publish(ctx, "up", v, nil); err != nil {
			t.Fatal(err)
		}
	}
	publish(1)
	cfgJSON, _ := json.Marshal(smallConfig())
	unit := func(i int, issuedAt int64) actors.WorkUnit {
		return actors.WorkUnit{UnitID: fmt.Sprintf("up/s0/u%d", i), RunID: "up", ConfigVersion: "c0", ConfigJSON: cfgJSON,
			Seed: seed + uint64(i), Lo: 8 * i, Hi: 8 * (i + 1), PolicyVersion: issuedAt}
	}
	rr := NewRemoteRunner(st, ps, "cpu", nil, nil)
	rr.SetChunk(4)
	// The learner is heard at 1; version 2 is published as the second
	// chunk asks for the policy.
	calls := 0
	rr.SetLearnerVersion(func() int64 {
		calls++
		if calls == 2 {
			publish(2)
			return 2
		}
		return min(int64(calls), 2)
	})
	d, err := rr.RunUnit(ctx, unit(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	var versions []int64
	for _, g := range d.Groups {
		versions = append(versions, g.PolicyVersion)
	}
	if !slices.Equal(versions, []int64{1, 1, 1, 1, 2, 2, 2, 2}) {
		t.Fatalf("groups played versions %v, want the first chunk at 1 and the second at 2", versions)
	}
	if s := rr.Stats(); s.Refreshes != 1 || s.PolicyLoads != 2 {
		t.Fatalf("stats %+v, want one unit refreshed mid-unit and 2 loads", s)
	}
	// A unit issued at version 3, which this node has not heard of: it
	// loads 3 before playing.
	rr.SetLearnerVersion(func() int64 { return 2 })
	publish(3)
	if d, err = rr.RunUnit(ctx, unit(1, 3)); err != nil {
		t.Fatal(err)
	}
	if d.Groups[0].PolicyVersion != 3 {
		t.Fatalf("unit issued at 3 played %d", d.Groups[0].PolicyVersion)
	}
	// An announced version loads in the background.
	publish(4)
	rr.Prefetch(4)
	deadline := time.Now().Add(10 * time.Second)
	for rr.Stats().PolicyLoads < 4 { // Redis is a network edge: poll it
		if time.Now().After(deadline) {
			t.Fatalf("version 4 not prefetched: %+v", rr.Stats())
		}
		waitTick(5 * time.Millisecond)
	}
	rr.Prefetch(4) // held already: nothing to do
	if d, err = rr.RunUnit(ctx, unit(2, 0)); err != nil || d.Groups[0].PolicyVersion != 4 {
		t.Fatalf("unit after the prefetch: %v, version %d", err, d.Groups[0].PolicyVersion)
	}
	if s := rr.Stats(); s.PolicyLoads != 4 {
		t.Fatalf("%d loads, want 4", s.PolicyLoads)
	}
}

// waitTick blocks for d: the poll interval at a network edge.
func waitTick(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	<-t.C
}
