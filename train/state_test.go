package train

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/learner"
)

// TestRunStateRecorded runs three scripted stages and checks the run
// states the run recorded: starting, then training and evaluating for each
// stage in order, then done; policy versions never go back; each training
// state names the stage's config version; Redis holds the last state.
func TestRunStateRecorded(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	var (
		mu     sync.Mutex
		states []store.RunState
	)
	opt := Options{RunID: "state", Stages: 3, Seed: seed, Config: smallConfig(), InstancesPerUnit: 8, GroupSize: 4,
		LearnerBatch: 3, ValPerSize: 1, EvalPerSize: 1,
		OnState: func(s store.RunState) {
			mu.Lock()
			states = append(states, s)
			mu.Unlock()
		}}
	res, err := Run(context.Background(), opt, &ScriptedPolicy{MistakeRate: 0.1}, st)
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(states) == 0 || states[0].Phase != PhaseStarting {
		t.Fatalf("first state %+v, want phase %q", states, PhaseStarting)
	}
	// The phase changes, updates folded away.
	type step struct {
		stage int
		phase string
	}
	var steps []step
	var lastVersion int64
	for i, s := range states {
		if s.RunID != "state" {
			t.Fatalf("state %d names run %q", i, s.RunID)
		}
		if s.PolicyVersion < lastVersion {
			t.Fatalf("state %d: policy version %d after %d", i, s.PolicyVersion, lastVersion)
		}
		lastVersion = s.PolicyVersion
		if n := len(steps); n == 0 || steps[n-1] != (step{s.Stage, s.Phase}) {
			steps = append(steps, step{s.Stage, s.Phase})
		}
		if s.Phase == PhaseTraining && s.ConfigVersion != res.Stages[s.Stage].ConfigVersion {
			t.Fatalf("training state of stage %d has config %s, the stage ran %s", s.Stage, s.ConfigVersion, res.Stages[s.Stage].ConfigVersion)
		}
	}
	want := []step{{0, PhaseStarting}}
	for s := range 3 {
		want = append(want, step{s, PhaseTraining}, step{s, PhaseEvaluating})
	}
	want = append(want, step{2, PhaseDone})
	if len(steps) != len(want) {
		t.Fatalf("phases %v, want %v", steps, want)
	}
	for i := range want {
		if steps[i] != want[i] {
			t.Fatalf("phases %v, want %v", steps, want)
		}
	}
	last := states[len(states)-1]
	if last.PolicyVersion != res.Stages[2].Policy || last.PolicyVersion == 0 {
		t.Fatalf("final policy version %d, the last stage reported %d", last.PolicyVersion, res.Stages[2].Policy)
	}
	got, ok, err := st.RunState(context.Background(), "state")
	if err != nil || !ok {
		t.Fatalf("RunState: %v %v", ok, err)
	}
	if got.Stage != last.Stage || got.Phase != last.Phase || got.PolicyVersion != last.PolicyVersion || got.ConfigVersion != last.ConfigVersion || got.UpdatedUnixMs == 0 {
		t.Fatalf("Redis has %+v, the run's last state was %+v", got, last)
	}
	if runs, err := st.Runs(context.Background()); err != nil || len(runs) != 1 || runs[0] != "state" {
		t.Fatalf("Runs: %v %v", runs, err)
	}
}

// TestRunStateInterrupted: a run whose context ends mid-run records
// "interrupted".
func TestRunStateInterrupted(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	opt := Options{RunID: "cut", Stages: 5, Seed: seed, Config: smallConfig(), InstancesPerUnit: 8, GroupSize: 2,
		ValPerSize: 1, EvalPerSize: 1,
		OnState: func(s store.RunState) {
			if s.Phase == PhaseEvaluating && s.Stage == 0 {
				cancel()
			}
		}}
	if _, err := Run(ctx, opt, &ScriptedPolicy{}, st); err == nil {
		t.Fatal("a cancelled run returned no error")
	}
	got, ok, err := st.RunState(context.Background(), "cut")
	if err != nil || !ok || got.Phase != PhaseInterrupted {
		t.Fatalf("RunState %+v %v %v, want phase %q", got, ok, err, PhaseInterrupted)
	}
}

// TestCheckpointIndexed: with CheckpointDir a gridnet run saves a
// checkpoint per stage and indexes it in Redis with the SHA-256 of its
// manifest.
func TestCheckpointIndexed(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	dir := t.TempDir()
	cfg := smallConfig()
	cfg.Instances = 8
	opt := Options{RunID: "ckpt", Stages: 2, Seed: seed, Config: cfg, InstancesPerUnit: 4, GroupSize: 4,
		LearnerBatch: 2, ValPerSize: 1, EvalPerSize: 1, CheckpointDir: dir}
	res, err := Run(context.Background(), opt, gridTestPolicy(t, seed), st)
	if err != nil {
		t.Fatal(err)
	}
	cks, err := st.Checkpoints(context.Background(), "ckpt")
	if err != nil {
		t.Fatal(err)
	}
	if len(cks) != 2 {
		t.Fatalf("%d checkpoints indexed, want 2: %+v", len(cks), cks)
	}
	for i, c := range cks {
		b, err := os.ReadFile(filepath.Join(c.Path, learner.CheckpointManifestFile))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if c.SHA256 != hex.EncodeToString(sum[:]) || c.Step != int64(i) || c.Version != res.Stages[i].Policy {
			t.Fatalf("checkpoint %d: %+v (stage report policy %d)", i, c, res.Stages[i].Policy)
		}
		if _, err := learner.ReadCheckpoint(c.Path); err != nil {
			t.Fatalf("checkpoint %d: %v", i, err)
		}
	}
}
