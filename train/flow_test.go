package train

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestRunFlowRecord: a run reports what became of its groups per stage and
// in all, to Options.OnFlow, in Redis and in its output; with the default
// pacing nothing is discarded.
func TestRunFlowRecord(t *testing.T) {
	seed := testSeed(t)
	ctx := context.Background()
	st := openStore(t)
	var (
		mu   sync.Mutex
		seen []FlowRecord
	)
	var out bytes.Buffer
	opt := Options{RunID: "flow", Stages: 2, Seed: seed, Config: smallConfig(), InstancesPerUnit: 8, GroupSize: 3,
		LearnerBatch: 4, ValPerSize: 1, EvalPerSize: 1, Rollouts: 3, Out: &out,
		OnFlow: func(f FlowRecord) { mu.Lock(); seen = append(seen, f); mu.Unlock() }}
	res, err := Run(ctx, opt, &ScriptedPolicy{MistakeRate: 0.1}, st)
	if err != nil {
		t.Fatal(err)
	}
	f := res.Flow()
	groups := uint64(2 * smallConfig().Instances)
	if f.Arrived != groups || f.Discarded() != 0 || f.Used+res.Actors.Learner.Pending != groups || f.Updates != res.Actors.Learner.Updates {
		t.Fatalf("flow %+v (learner %+v), want %d groups, none discarded", f, res.Actors.Learner, groups)
	}
	var sum FlowStats
	for i, s := range res.Stages {
		if s.Flow.Arrived == 0 {
			t.Errorf("stage %d: flow %+v", i, s.Flow)
		}
		sum.Arrived += s.Flow.Arrived
	}
	if sum.Arrived != f.Arrived {
		t.Errorf("stages' flows sum to %d groups, the run's to %d", sum.Arrived, f.Arrived)
	}
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last.RunID != "flow" || len(last.Stages) != 2 || last.Total.Arrived != groups || last.MaxLag != DefaultMaxLag ||
		last.StalenessK != 4 || last.KeepLateK != 8 {
		t.Fatalf("last OnFlow record %+v", last)
	}
	ps := openPolicyStore(t, st)
	rec, ok, err := ps.Flow(ctx, "flow")
	if err != nil || !ok || rec.Total.Arrived != groups || len(rec.Stages) != 2 {
		t.Fatalf("flow in Redis: %+v %v %v", rec, ok, err)
	}
	if _, ok, err := ps.Flow(ctx, "none"); ok || err != nil {
		t.Fatalf("flow of an unknown run: %v %v", ok, err)
	}
	if !strings.Contains(out.String(), "      flow: ") || !strings.Contains(out.String(), "\nflow: ") || strings.Contains(out.String(), "WARNING") {
		t.Fatalf("output:\n%s", out.String())
	}
	// Pacing beyond the learner's bound is refused.
	bad := opt
	bad.MaxLag, bad.StalenessK = 3, 2
	if _, err := Run(ctx, bad, &ScriptedPolicy{}, st); !errors.Is(err, ErrOptions) {
		t.Fatalf("max lag over K: %v", err)
	}
}

func TestFlowStatsWarning(t *testing.T) {
	f := FlowStats{Arrived: 100, Used: 94, DiscardedStale: 4, DiscardedDuplicate: 2, Updates: 3, LearnerWait: 1500 * time.Millisecond}
	if !f.Warn() || f.DiscardShare() != 0.06 {
		t.Fatalf("share %v warn %v", f.DiscardShare(), f.Warn())
	}
	var b bytes.Buffer
	printFlowTotal(&b, f)
	want := "flow: 100 groups: 94 used (0 kept late); 6 discarded (6.0%: stale 4, late stage 0, duplicate 2); 3 updates; dispatch waited 1.5s for the learner\n" +
		"WARNING: 6.0% of the groups were discarded (more than 5%: stale 4, late stage 0, duplicate 2)"
	if !strings.HasPrefix(b.String(), want) {
		t.Fatalf("got:\n%s\nwant prefix:\n%s", b.String(), want)
	}
	line := DoneLine("r", 2600*time.Millisecond, "redis://h:6379/0", f)
	if want := "run r done in 3s; Redis redis://h:6379/0; " + f.String() + "; WARNING: " + DiscardWarning(f); line != want {
		t.Fatalf("done line %q, want %q", line, want)
	}
	f.DiscardedDuplicate = 1
	if f.Warn() {
		t.Fatal("5% warns")
	}
	if line := DoneLine("r", time.Second, "redis://h:6379/0", f); strings.Contains(line, "WARNING") {
		t.Fatalf("done line %q warns", line)
	}
}
