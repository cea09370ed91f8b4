package torch

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// loadTorch loads dir on the torch engine with cfg as its train config.
func loadTorch(t *testing.T, dir string, gc learner.GRPOConfig) *Model {
	t.Helper()
	tm, err := Load(context.Background(), engine.Spec{Kind: engine.Torch, Log: func(l string) { t.Log("worker: " + l) }}, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close() })
	if err := tm.SetTrainConfig(gc); err != nil {
		t.Fatal(err)
	}
	return tm
}

func steps(t *testing.T, tm *Model, b *learner.SeqBatch, n int) {
	t.Helper()
	for i := 0; i < n; i++ {
		if _, err := tm.Step(engine.StepGRPO, b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestOptimizerResumeBitExact: 2 steps, save (weights + AdamW state), a fresh worker loads both
// and takes 2 more steps: its logits equal those of 4 uninterrupted steps bit for bit. A corrupt
// optimizer file is refused as bad_checkpoint before that and changes nothing.
func TestOptimizerResumeBitExact(t *testing.T) {
	requireTorch(t)
	const seed = 41
	t.Logf("seed %d", seed)
	dir := checkpoint(t, fourLayerConfig(t), seed)
	gc := learner.DefaultGRPOConfig()
	gc.LR, gc.MicroBatch, gc.WeightDecay = 1e-2, 2, 0.01
	seqs := randomSeqs(rand.New(rand.NewPCG(seed, 3)), 512, 7, 11)

	full := loadTorch(t, dir, gc)
	b := grpoBatch(t, full, rand.New(rand.NewPCG(seed, 2)))
	steps(t, full, b, 4)
	want, err := full.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}

	half := loadTorch(t, dir, gc)
	steps(t, half, b, 2)
	mid := filepath.Join(t.TempDir(), "mid")
	if err := half.Save(mid, safetensors.F32); err != nil {
		t.Fatal(err)
	}
	if err := half.SaveOptimizer(filepath.Join(mid, OptimizerFile)); err != nil {
		t.Fatal(err)
	}

	resumed := loadTorch(t, mid, gc)
	bad := filepath.Join(t.TempDir(), "bad.safetensors")
	if err := os.WriteFile(bad, []byte("not a safetensors file"), 0o644); err != nil {
		t.Fatal(err)
	}
	var re *RemoteError
	if err := resumed.LoadOptimizer(bad); !errors.As(err, &re) || re.Kind != "bad_checkpoint" {
		t.Fatalf("corrupt optimizer file: err = %v, want a bad_checkpoint RemoteError", err)
	}
	if err := resumed.LoadOptimizer(filepath.Join(mid, OptimizerFile)); err != nil {
		t.Fatal(err)
	}
	steps(t, resumed, b, 2)
	got, err := resumed.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if d, _ := maxDiff(want[i], got[i]); d != 0 {
			t.Fatalf("resumed after 2 steps: logits of sequence %d differ from 4 steps' by %g", i, d)
		}
	}
}
