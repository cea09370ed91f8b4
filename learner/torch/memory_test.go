package torch

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
)

// TestActivationCheckpointingSameSteps: a model loaded with Spec.ActivationCheckpointing (the
// worker says it holds the option; Reload keeps it) takes the same GRPO steps as one without:
// the same losses and gradient norms, and logits after 2 steps within 1e-5.
func TestActivationCheckpointingSameSteps(t *testing.T) {
	requireTorch(t)
	const seed = 43
	t.Logf("seed %d", seed)
	dir := checkpoint(t, fourLayerConfig(t), seed)
	gc := learner.DefaultGRPOConfig()
	gc.LR, gc.MicroBatch = 1e-3, 2
	open := func(ckpt bool) *Model {
		tm, err := Load(context.Background(), engine.Spec{Kind: engine.Torch, ActivationCheckpointing: ckpt}, dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = tm.Close() })
		if err := tm.SetTrainConfig(gc); err != nil {
			t.Fatal(err)
		}
		st, err := tm.Stats()
		if err != nil || st.ActivationCheckpointing != ckpt || st.LogProbChunk != engine.TorchLogProbChunk {
			t.Fatalf("worker stats %+v (%v): want activation checkpointing %v, chunk %d (engine.TorchLogProbChunk)", st, err, ckpt, engine.TorchLogProbChunk)
		}
		return tm
	}
	plain, ck := open(false), open(true)
	if err := ck.Reload(dir); err != nil {
		t.Fatal(err)
	}
	if st, err := ck.Stats(); err != nil || !st.ActivationCheckpointing {
		t.Fatalf("after Reload: stats %+v (%v)", st, err)
	}
	b := grpoBatch(t, plain, rand.New(rand.NewPCG(seed, 2)))
	for i := range 2 {
		a, err := plain.Step(engine.StepGRPO, b)
		if err != nil {
			t.Fatal(err)
		}
		c, err := ck.Step(engine.StepGRPO, b)
		if err != nil {
			t.Fatal(err)
		}
		if d := a.Loss - c.Loss; d > 1e-5 || d < -1e-5 || a.GradNorm-c.GradNorm > 1e-5*a.GradNorm || c.GradNorm-a.GradNorm > 1e-5*a.GradNorm {
			t.Fatalf("step %d: loss %v / grad norm %v plain, %v / %v checkpointed", i, a.Loss, a.GradNorm, c.Loss, c.GradNorm)
		}
	}
	seqs := randomSeqs(rand.New(rand.NewPCG(seed, 3)), 512, 9)
	want, err := plain.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ck.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(want[0], got[0]); d > 1e-5 {
		t.Fatalf("logits after 2 steps differ by %g", d)
	}
}
