package train

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"strings"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
)

var trainSeed = flag.Uint64("trainseed", 0, "seed for the train tests (0: a fixed default)")

func testSeed(t *testing.T) uint64 {
	s := *trainSeed
	if s == 0 {
		s = 7
	}
	t.Logf("seed %d (replay with -trainseed %d)", s, s)
	return s
}

func smallConfig() env.Config {
	cfg := env.Config{Agents: 2, Instances: 40}
	for s := 3; s <= 6; s++ {
		cfg.Sizes = append(cfg.Sizes, env.SizeConfig{Size: s, DataRatio: 0.25, HoleRatio: 0.2, WaitRatio: 0.25})
	}
	return cfg
}

func openStore(t *testing.T) *store.Store { return openStoreB(t) }

func openStoreB(t testing.TB) *store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestScriptedRunAggregatesExact runs three stages of the scripted policy
// through the actor runtime and checks that the Redis aggregates of every
// stage equal the sum of the outcomes of its units, each unit counted once.
func TestScriptedRunAggregatesExact(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	var (
		mu    sync.Mutex
		units = map[string]store.UnitResult{}
	)
	var out bytes.Buffer
	opt := Options{
		RunID: "agg", Stages: 3, Seed: seed, Config: smallConfig(), InstancesPerUnit: 7, GroupSize: 4,
		LearnerBatch: 5, ValPerSize: 2, EvalPerSize: 1, Out: &out,
		OnUnit: func(u UnitLog) {
			r := u.Result
			mu.Lock()
			defer mu.Unlock()
			if _, dup := units[r.UnitID]; !dup {
				units[r.UnitID] = r
			}
		},
	}
	res, err := Run(context.Background(), opt, &ScriptedPolicy{MistakeRate: 0.1}, st)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if len(res.Stages) != 3 {
		t.Fatalf("%d stage reports, want 3", len(res.Stages))
	}
	ctx := context.Background()
	val, eval := env.ValidationSpec(2026, 2), env.PaperEvalSpec(2026, 1)
	for stage := range 3 {
		// Every split's aggregates in Redis are the sum of its units: the
		// training units and the evaluation units the rollouts played.
		for _, sp := range []struct {
			split           string
			units, episodes int
		}{{store.SplitTrain, 6, 40 * 4}, {store.SplitVal, (val.Len() + 6) / 7, val.Len()}, {store.SplitEvalPaper, (eval.Len() + 6) / 7, eval.Len()}} {
			want := map[store.Key]store.Counts{}
			nUnits := 0
			for _, u := range units {
				if u.Stage != stage || u.Split != sp.split {
					continue
				}
				nUnits++
				for k, c := range u.Buckets {
					want[k] = want[k].Add(c)
				}
			}
			if nUnits != sp.units { // ceil(instances/7)
				t.Fatalf("stage %d %s: %d units ran, want %d", stage, sp.split, nUnits, sp.units)
			}
			got, err := st.Aggregates(ctx, "agg", stage, sp.split)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("stage %d %s: %d buckets in Redis, %d from the units", stage, sp.split, len(got), len(want))
			}
			var episodes int64
			for k, w := range want {
				g := got[k]
				episodes += g.Episodes
				if g.Episodes != w.Episodes || g.Valid != w.Valid || g.Optimal != w.Optimal {
					t.Fatalf("stage %d %s bucket %+v: Redis %+v, units %+v", stage, sp.split, k, g, w)
				}
				for cat, n := range w.Categories {
					if g.Categories[cat] != n {
						t.Fatalf("stage %d %s bucket %+v category %s: Redis %d, units %d", stage, sp.split, k, cat, g.Categories[cat], n)
					}
				}
			}
			if episodes != int64(sp.episodes) {
				t.Fatalf("stage %d %s: %d episodes, want %d", stage, sp.split, episodes, sp.episodes)
			}
			if sp.split == store.SplitVal && res.Stages[stage].Val != store.SumSplit(got).All.Rates() {
				t.Fatalf("stage %d: report val %+v, Redis %+v", stage, res.Stages[stage].Val, store.SumSplit(got).All.Rates())
			}
		}
		if n, _ := st.UnitsApplied(ctx, "agg", stage, store.SplitTrain); n != 6 {
			t.Fatalf("stage %d: %d units applied in Redis, want 6", stage, n)
		}
		if sd := res.Actors.Stages[stage]; sd.Completed != 6 || sd.Units != 6 {
			t.Fatalf("stage %d: coordinator completed %d of %d units", stage, sd.Completed, sd.Units)
		}
	}
	cfgs, err := st.Configs(ctx, "agg")
	if err != nil || len(cfgs) != 3 {
		t.Fatalf("config history: %d records, %v", len(cfgs), err)
	}
	for i, c := range cfgs {
		var cfg env.Config
		if err := json.Unmarshal(c.JSON, &cfg); err != nil || cfg.Validate() != nil || cfg.Hash() != c.Version || c.Stage != i {
			t.Fatalf("config record %d invalid: %+v", i, c)
		}
	}
	if !strings.Contains(out.String(), "init") || strings.Count(out.String(), "\n") < 5 {
		t.Fatalf("progress table missing:\n%s", out.String())
	}
}

// TestScriptedPerfectPolicyMatchesRegeneration checks the aggregates
// against an independent count: with no mistakes every episode is valid and
// optimal, so each (size, agents) bucket holds GroupSize episodes per
// instance of that size in the regenerated stage.
func TestScriptedPerfectPolicyMatchesRegeneration(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	opt := Options{RunID: "perfect", Stages: 2, Seed: seed, Config: smallConfig(), InstancesPerUnit: 16, GroupSize: 3, ValPerSize: 1, EvalPerSize: 1}
	res, err := Run(context.Background(), opt, &ScriptedPolicy{}, st)
	if err != nil {
		t.Fatal(err)
	}
	if res.Stages[1].Val.Valid != 1 || res.Stages[1].Eval[5].Optimal != 1 {
		t.Fatalf("a perfect policy scored %+v", res.Stages[1])
	}
	ctx := context.Background()
	cfgs, _ := st.Configs(ctx, "perfect")
	for stage := range 2 {
		var cfg env.Config
		json.Unmarshal(cfgs[stage].JSON, &cfg)
		ins, err := env.Generate(cfg, actors.StageSeed(seed, stage), 0, cfg.Instances)
		if err != nil {
			t.Fatal(err)
		}
		want := map[int]int64{}
		for _, in := range ins {
			want[in.Width] += 3
		}
		got, _ := st.Aggregates(ctx, "perfect", stage, store.SplitTrain)
		for size, n := range want {
			c := got[store.Key{Size: size, Agents: 2}]
			if c.Episodes != n || c.Valid != n || c.Optimal != n || len(c.Categories) != 0 {
				t.Fatalf("stage %d size %d: %+v, want %d valid optimal episodes", stage, size, c, n)
			}
		}
	}
}

func TestOptionsRejected(t *testing.T) {
	st := openStore(t)
	bad := smallConfig()
	bad.Sizes[0].HoleRatio = 2
	for _, opt := range []Options{{Stages: -1}, {GroupSize: 999}, {Config: bad}} {
		if _, err := Run(context.Background(), opt, &ScriptedPolicy{}, st); err == nil {
			t.Fatalf("options %+v accepted", opt)
		}
	}
	if runs, _ := st.Runs(context.Background()); len(runs) != 0 {
		t.Fatalf("rejected runs wrote state: %v", runs)
	}
}

// historyRecorder keeps the engineer's view of the run and keeps the config.
type historyRecorder struct{ seen *engineer.History }

func (r *historyRecorder) Name() string { return "recorder" }

func (r *historyRecorder) Propose(_ context.Context, h *engineer.History) (engineer.Proposal, error) {
	r.seen = h
	last := h.Stages[len(h.Stages)-1].Config
	return engineer.Proposal{Config: last, Rationale: "keep", Attempts: []engineer.Attempt{{Accepted: true}}}, nil
}

// TestRunEpochs: with Epochs 2 every stage plays its instances twice (twice
// the units and episodes of one epoch, each counted once in Redis), and the
// engineer's bookkeeping says 2 epochs per stage.
func TestRunEpochs(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	rec := &historyRecorder{}
	var out bytes.Buffer
	opt := Options{
		RunID: "epochs", Stages: 2, Epochs: 2, Seed: seed, Config: smallConfig(), InstancesPerUnit: 7, GroupSize: 4,
		LearnerBatch: 5, ValPerSize: 1, EvalPerSize: 1, Strategy: rec, Out: &out,
	}
	res, err := Run(context.Background(), opt, &ScriptedPolicy{MistakeRate: 0.1}, st)
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	ctx := context.Background()
	for stage := range 2 {
		if sd := res.Actors.Stages[stage]; sd.Completed != 12 || sd.Units != 12 { // 2 × ceil(40/7)
			t.Fatalf("stage %d: coordinator completed %d of %d units, want 12", stage, sd.Completed, sd.Units)
		}
		agg, err := st.Aggregates(ctx, "epochs", stage, store.SplitTrain)
		if err != nil {
			t.Fatal(err)
		}
		var episodes int64
		for _, c := range agg {
			episodes += c.Episodes
		}
		if episodes != 2*40*4 {
			t.Fatalf("stage %d: %d training episodes, want %d", stage, episodes, 2*40*4)
		}
	}
	if h := rec.seen; h == nil || h.Budget.EpochsPerStage != 2 || len(h.Stages) != 1 || h.Stages[0].Epochs != 2 {
		t.Fatalf("engineer history %+v: want 2 epochs per stage", rec.seen)
	}
	bad := opt
	bad.Epochs = 101
	if _, err := Run(ctx, bad, &ScriptedPolicy{}, st); err == nil || !strings.Contains(err.Error(), "epochs = 101") {
		t.Fatalf("epochs 101: %v", err)
	}
}
