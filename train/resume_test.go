package train

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// resInstances, resPerUnit, resBatch and resGroup size the deterministic
// test runs: two units and two updates per stage.
const resInstances, resPerUnit, resBatch, resGroup = 16, 8, 8, 4

// resConfig is a stage config whose instances fill whole units and
// learner batches (a deterministic run needs both).
func resConfig() env.Config {
	cfg := smallConfig()
	cfg.Instances = resInstances
	return cfg
}

// resOptions are the options of a small deterministic gridnet run.
func resOptions(t *testing.T, runID string, seed uint64, stages int) Options {
	return Options{RunID: runID, Stages: stages, Seed: seed, Config: resConfig(), InstancesPerUnit: resPerUnit, GroupSize: resGroup,
		LearnerBatch: resBatch, ValPerSize: 1, EvalPerSize: 1, Deterministic: true, CheckpointDir: t.TempDir()}
}

// resRun runs opt with a fresh gridnet policy and fails the test on error.
func resRun(t *testing.T, ctx context.Context, opt Options, st *store.Store, seed uint64) (*Result, string) {
	t.Helper()
	var out bytes.Buffer
	opt.Out = &out
	res, err := Run(ctx, opt, gridTestPolicy(t, seed), st)
	if err != nil {
		t.Fatalf("run %s: %v\n%s", opt.RunID, err, out.String())
	}
	return res, out.String()
}

// resSameCheckpoint checks that two checkpoints hold the same weights
// (model.safetensors byte for byte) and the same optimizer state (every
// tensor, by name: the file's order follows variable creation).
func resSameCheckpoint(t *testing.T, a, b string) {
	t.Helper()
	wa, err := os.ReadFile(filepath.Join(a, learner.CheckpointWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	wb, err := os.ReadFile(filepath.Join(b, learner.CheckpointWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(wa, wb) {
		t.Fatalf("weights differ: %s and %s", a, b)
	}
	ca, err := learner.ReadCheckpoint(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := learner.ReadCheckpoint(b)
	if err != nil {
		t.Fatal(err)
	}
	if ca.Manifest.PolicyVersion != cb.Manifest.PolicyVersion || ca.Manifest.Step != cb.Manifest.Step {
		t.Fatalf("manifests differ: %+v and %+v", ca.Manifest, cb.Manifest)
	}
	opt := map[string]safetensors.Tensor{}
	for _, ts := range ca.Optimizer {
		opt[ts.Name] = ts
	}
	if len(opt) != len(cb.Optimizer) || len(opt) == 0 {
		t.Fatalf("optimizer tensors: %d and %d", len(opt), len(cb.Optimizer))
	}
	for _, ts := range cb.Optimizer {
		if o, ok := opt[ts.Name]; !ok || !reflect.DeepEqual(o, ts) {
			t.Fatalf("optimizer tensor %s differs", ts.Name)
		}
	}
}

func resStageDir(opt Options, stage int) string {
	return filepath.Join(opt.CheckpointDir, []string{"stage-000", "stage-001", "stage-002"}[stage])
}

// TestDeterministicRunsSameWeights: two deterministic runs with the same
// seed end with the same weights and optimizer state, bit for bit, after
// training; the learner metrics of every stage add up.
func TestDeterministicRunsSameWeights(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	ctx := context.Background()
	a, b := resOptions(t, "det-a", seed, 2), resOptions(t, "det-b", seed, 2)
	var (
		mu    sync.Mutex
		units []UnitLog
	)
	a.OnUnit = func(u UnitLog) {
		mu.Lock()
		defer mu.Unlock()
		units = append(units, u)
	}
	ra, out := resRun(t, ctx, a, st, seed)
	// OnUnit reports each unit with the learner's version: a deterministic
	// unit plays the newest version (no lag), and stage 1's units play what
	// stage 0 trained.
	var newest int64
	for _, u := range units {
		if u.PolicyVersion != u.Result.PolicyVersion || u.LearnerVersion != u.PolicyVersion || u.Lag != 0 || u.Millis < 0 {
			t.Fatalf("unit %s (stage %d, %s) reported %+v", u.Result.UnitID, u.Result.Stage, u.Result.Split, u)
		}
		if u.Result.Stage == 1 {
			newest = max(newest, u.LearnerVersion)
		}
	}
	if want := int64(resInstances / resBatch); len(units) == 0 || newest < want {
		t.Fatalf("%d units reported; stage 1's newest learner version %d, want ≥ %d", len(units), newest, want)
	}
	resRun(t, ctx, b, st, seed)
	resSameCheckpoint(t, resStageDir(a, 1), resStageDir(b, 1))
	init := gridTestPolicy(t, seed)
	w0, err := EncodeWeights(init)
	if err != nil {
		t.Fatal(err)
	}
	w, err := os.ReadFile(filepath.Join(resStageDir(a, 1), learner.CheckpointWeightsFile))
	if err != nil || bytes.Equal(w, w0) {
		t.Fatalf("the runs did not train (%v)", err)
	}
	for _, s := range ra.Stages {
		l := s.Learn
		// Units of one batch each sample the version their batch trains
		// (no lag).
		if l.Updates != resInstances/resBatch || l.Groups != resInstances || l.Samples != resInstances*resGroup || l.Decisions <= 0 || l.LagMin != 0 || l.LagMax != 0 ||
			l.ValidRate < 0 || l.ValidRate > 1 || l.ZeroShare < 0 || l.ZeroShare > 1 || l.DecisionsPerSec() <= 0 ||
			s.Updates != l.Updates || s.MeanLoss != l.MeanLoss {
			t.Fatalf("stage %d learner stats %+v", s.Stage, l)
		}
	}
	if v := ra.Stages[1].Policy; v != 2*resInstances/resBatch {
		t.Fatalf("policy version %d after two stages, want %d", v, 2*resInstances/resBatch)
	}
	if !strings.Contains(out, fmt.Sprintf("learner: %d updates", resInstances/resBatch)) {
		t.Fatalf("no learner line in the progress output:\n%s", out)
	}
}

// resSameOutcomes checks that two runs recorded the same outcomes in Redis,
// every unit once.
func resSameOutcomes(t *testing.T, st *store.Store, a, b string, stages, units int) {
	t.Helper()
	ctx := context.Background()
	for stage := range stages {
		for _, split := range []string{store.SplitTrain, store.SplitVal, store.SplitEvalPaper} {
			ga, err := st.Aggregates(ctx, a, stage, split)
			if err != nil {
				t.Fatal(err)
			}
			gb, err := st.Aggregates(ctx, b, stage, split)
			if err != nil {
				t.Fatal(err)
			}
			if len(ga) == 0 || !reflect.DeepEqual(ga, gb) {
				t.Fatalf("stage %d %s: run %s recorded %v, run %s %v", stage, split, a, ga, b, gb)
			}
		}
		var episodes int64
		agg, _ := st.Aggregates(ctx, b, stage, store.SplitTrain)
		for _, c := range agg {
			episodes += c.Episodes
		}
		na, _ := st.UnitsApplied(ctx, a, stage, store.SplitTrain)
		nb, _ := st.UnitsApplied(ctx, b, stage, store.SplitTrain)
		if na != int64(units) || nb != int64(units) || episodes != resInstances*resGroup {
			t.Fatalf("stage %d: units applied %d and %d, want %d; %d episodes, want %d", stage, na, nb, units, episodes, resInstances*resGroup)
		}
	}
	ca, _ := st.Configs(ctx, a)
	cb, _ := st.Configs(ctx, b)
	if len(ca) != stages || len(cb) != stages {
		t.Fatalf("config histories: %d and %d records", len(ca), len(cb))
	}
	for i := range ca {
		if ca[i].Version != cb[i].Version {
			t.Fatalf("stage %d configs %s and %s", i, ca[i].Version, cb[i].Version)
		}
	}
}

// TestResumeEqualsUninterrupted interrupts a deterministic run in stage 1
// (after its first unit was recorded) and resumes it; and stops another
// after stage 1 and resumes it for a third stage (its stage-2 config was
// never proposed). Both end with the weights of an uninterrupted run and
// the same outcomes in Redis, every unit counted once.
func TestResumeEqualsUninterrupted(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	ctx := context.Background()
	u := resOptions(t, "res-u", seed, 3)
	resRun(t, ctx, u, st, seed)

	k := resOptions(t, "res-k", seed, 3)
	kctx, cancel := context.WithCancel(ctx)
	var once sync.Once
	k.OnUnit = func(u UnitLog) {
		if u.Result.Stage == 1 {
			once.Do(cancel)
		}
	}
	var out bytes.Buffer
	k.Out = &out
	if _, err := Run(kctx, k, gridTestPolicy(t, seed), st); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v\n%s", err, out.String())
	}
	cancel()
	// Units run one at a time, and none starts once the run is cancelled.
	if n, _ := st.UnitsApplied(ctx, "res-k", 1, store.SplitTrain); n != 1 {
		t.Fatalf("the interrupted run recorded %d stage-1 units, want 1", n)
	}
	k.OnUnit, k.Resume = nil, true
	res, text := resRun(t, ctx, k, st, seed)
	if res.FirstStage != 1 || len(res.Stages) != 2 || res.Stages[0].Stage != 1 ||
		!strings.Contains(text, fmt.Sprintf("resuming run res-k after stage 0 (policy version %d)", resInstances/resBatch)) {
		t.Fatalf("resumed run: first stage %d, %d stages\n%s", res.FirstStage, len(res.Stages), text)
	}
	resSameCheckpoint(t, resStageDir(u, 2), resStageDir(k, 2))
	resSameOutcomes(t, st, "res-u", "res-k", 3, resInstances/resPerUnit)

	p := resOptions(t, "res-p", seed, 2)
	resRun(t, ctx, p, st, seed)
	if _, err := st.Config(ctx, "res-p", 2); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a 2-stage run recorded a stage-2 config: %v", err)
	}
	p.Stages, p.Resume = 3, true
	res, text = resRun(t, ctx, p, st, seed)
	if res.FirstStage != 2 || !strings.Contains(text, fmt.Sprintf("resuming run res-p after stage 1 (policy version %d)", 2*resInstances/resBatch)) ||
		!strings.Contains(text, "engineer (learnability) → stage 2") {
		t.Fatalf("resumed run:\n%s", text)
	}
	resSameCheckpoint(t, resStageDir(u, 2), resStageDir(p, 2))
	resSameOutcomes(t, st, "res-u", "res-p", 3, resInstances/resPerUnit)

	// A finished run has nothing left to do.
	res, text = resRun(t, ctx, p, st, seed)
	if res.FirstStage != 3 || len(res.Stages) != 0 || !strings.Contains(text, "all 3 stages were done") {
		t.Fatalf("resuming a finished run:\n%s", text)
	}
}

func TestResumeAndDeterministicRefused(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	ctx := context.Background()
	bad := func(name string, opt Options, pol Policy, want error) {
		t.Helper()
		_, err := Run(ctx, opt, pol, st)
		if !errors.Is(err, want) {
			t.Errorf("%s: %v, want %v", name, err, want)
		}
	}
	opt := resOptions(t, "ref", seed, 2)
	o := opt
	o.Config.Instances = resInstances + resPerUnit/2
	bad("instances not a multiple of the unit", o, gridTestPolicy(t, seed), ErrOptions)
	o = opt
	o.InstancesPerUnit, o.LearnerBatch = 4, 16
	o.Config.Instances = 40
	bad("instances not a multiple of the batch", o, gridTestPolicy(t, seed), ErrOptions)
	o = opt
	o.Cluster.Listen = "127.0.0.1:0"
	bad("deterministic cluster", o, gridTestPolicy(t, seed), ErrOptions)
	o = opt
	o.Resume, o.CheckpointDir = true, ""
	bad("resume without checkpoints", o, gridTestPolicy(t, seed), ErrOptions)
	o = opt
	o.Resume = true
	bad("resume a scripted policy", o, &ScriptedPolicy{}, ErrOptions)
	bad("resume a run Redis does not know", o, gridTestPolicy(t, seed), ErrResume)
	var oe *fielderr.Error
	if _, err := Run(ctx, Options{Deterministic: true, Config: resConfig(), InstancesPerUnit: 8, LearnerBatch: 12}, &ScriptedPolicy{}, st); !errors.As(err, &oe) || oe.Flag != "learner-batch" {
		t.Errorf("learner batch not dividing the instances: %v", err)
	}

	// A run resumed with another stage-0 config is refused.
	o = opt
	o.Stages = 1
	resRun(t, ctx, o, st, seed)
	o.Stages, o.Resume = 2, true
	o.Config.Sizes[0].HoleRatio = 0.1
	bad("resume with other flags", o, gridTestPolicy(t, seed), ErrResume)
}

// TestLearnStatsSum checks the per-update and per-stage learner numbers on
// hand-made batches.
func TestLearnStatsSum(t *testing.T) {
	grp := func(version int64, rewards ...float32) actors.Group {
		g := actors.Group{PolicyVersion: version}
		for i, r := range rewards {
			g.Samples = append(g.Samples, actors.Sample{Tokens: make([]int32, i+1), Reward: r, Valid: r > 0})
		}
		return g
	}
	b1 := []actors.Group{grp(5, 1, 0), grp(3, 0.5, 0.5)} // trained at version 5: lags 0 and 2
	c1 := countBatch(b1, 5)
	m := updateMetrics(c1, learner.UpdateStats{Loss: 0.5, ClipFrac: 0.25, ApproxKL: 0.01}, learner.SignalStats{Groups: 2, ZeroSignal: 1}, 6, 2e9)
	if m.Groups != 2 || m.Samples != 4 || m.Decisions != 6 || m.MeanReward != 0.5 || m.ValidRate != 0.75 ||
		m.LagMin != 0 || m.LagMax != 2 || m.LagMean != 1 || m.ZeroShare != 0.5 || m.DecisionsPerSec() != 3 || m.KL != 0.01 {
		t.Fatalf("update metrics %+v", m)
	}
	var acc learnAcc
	acc.add(c1, learner.UpdateStats{Loss: 0.5, ClipFrac: 0.25, ApproxKL: 0.01}, learner.SignalStats{Groups: 2, ZeroSignal: 1}, 2e9)
	c2 := countBatch([]actors.Group{grp(4, 0, 0, 0, 0)}, 6) // lag 2, 10 decisions
	acc.add(c2, learner.UpdateStats{Loss: 1.5, ClipFrac: 0.75, ApproxKL: 0.03}, learner.SignalStats{Groups: 1, ZeroSignal: 1}, 2e9)
	s := acc.stats()
	if s.Updates != 2 || s.Groups != 3 || s.Samples != 8 || s.Decisions != 16 || s.MeanLoss != 1 || s.ClipFrac != 0.5 ||
		s.KL != 0.02 || s.MeanReward != 0.25 || s.ValidRate != 0.375 || s.LagMin != 0 || s.LagMax != 2 ||
		s.LagMean != 4.0/3 || s.ZeroShare != 2.0/3 || s.DecisionsPerSec() != 4 {
		t.Fatalf("stage stats %+v", s)
	}
	var out bytes.Buffer
	printLearn(&out, &s)
	if !strings.Contains(out.String(), "2 updates") || !strings.Contains(out.String(), "lag 0/1.33/2") {
		t.Fatalf("learner line %q", out.String())
	}
}

// TestNoteFreshOptimizer: resuming from a checkpoint without optimizer.safetensors says so in
// one line; with the file, nothing.
func TestNoteFreshOptimizer(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	noteFreshOptimizer(&out, dir)
	if got := out.String(); strings.Count(got, "\n") != 1 || !strings.Contains(got, dir) || !strings.Contains(got, "AdamW restarts with fresh moments") {
		t.Fatalf("without the file: %q", got)
	}
	out.Reset()
	if err := os.WriteFile(filepath.Join(dir, learner.CheckpointOptimizerFile), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	noteFreshOptimizer(&out, dir)
	if out.Len() != 0 {
		t.Fatalf("with the file: %q", out.String())
	}
}
