package torch

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// requireTorch skips a test that needs torch where no interpreter imports it, and fails it
// when T2T_REQUIRE_TORCH=1 (CI).
func requireTorch(t *testing.T) string {
	t.Helper()
	py, err := FindPython(context.Background(), "")
	if err != nil {
		if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
			t.Fatalf("T2T_REQUIRE_TORCH=1 but %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	return py
}

// checkpoint writes a random Qwen3 of cfg to a temp dir.
func checkpoint(t *testing.T, cfg hfmodel.Config, seed uint64) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ckpt")
	if _, err := hfmodel.WriteRandomCheckpoint(dir, cfg, seed, ""); err != nil {
		t.Fatal(err)
	}
	return dir
}

func tinyConfig(t *testing.T) hfmodel.Config {
	cfg, err := hfmodel.Preset(hfmodel.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// fourLayerConfig is the 4-layer shape (hidden 256, intermediate 768, vocab 512), untied
// to cover the separate head.
func fourLayerConfig(t *testing.T) hfmodel.Config {
	cfg := tinyConfig(t)
	cfg.NumHiddenLayers, cfg.HiddenSize, cfg.IntermediateSize = 4, 256, 768
	cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim = 4, 2, 64
	cfg.TieWordEmbeddings = false
	return cfg
}

// pair loads dir on both engines.
func pair(t *testing.T, dir string) (*qwen3.EngineModel, *Model) {
	t.Helper()
	be, err := gomlxtrain.NewBackend("cpu")
	if err != nil {
		t.Fatal(err)
	}
	g, err := qwen3.LoadEngine(be, dir)
	if err != nil {
		t.Fatal(err)
	}
	tm, err := Load(context.Background(), engine.Spec{Kind: engine.Torch, Log: func(l string) { t.Log("worker: " + l) }}, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close() })
	return g, tm
}

func randomSeqs(rng *rand.Rand, vocab int, lens ...int) [][]int32 {
	out := make([][]int32, len(lens))
	for i, n := range lens {
		out[i] = make([]int32, n)
		for j := range out[i] {
			out[i][j] = int32(rng.IntN(vocab))
		}
	}
	return out
}

// maxDiff returns max |a−b| and max |a|.
func maxDiff(a, b []float32) (diff, scale float64) {
	for i := range a {
		diff = math.Max(diff, math.Abs(float64(a[i])-float64(b[i])))
		scale = math.Max(scale, math.Abs(float64(a[i])))
	}
	return diff, scale
}

func compareLogits(t *testing.T, what string, a, b engine.Model, seqs [][]int32, tol float64) {
	t.Helper()
	la, err := a.Logits(seqs)
	if err != nil {
		t.Fatalf("%s: %s logits: %v", what, a.Engine(), err)
	}
	lb, err := b.Logits(seqs)
	if err != nil {
		t.Fatalf("%s: %s logits: %v", what, b.Engine(), err)
	}
	for i := range seqs {
		if len(la[i]) != len(lb[i]) {
			t.Fatalf("%s: sequence %d: %d vs %d logits", what, i, len(la[i]), len(lb[i]))
		}
		d, s := maxDiff(la[i], lb[i])
		if d > tol {
			t.Errorf("%s: sequence %d (len %d): max |Δlogit| %.3g > %.0g (max |logit| %.3g)", what, i, len(seqs[i]), d, tol, s)
		}
	}
}

func TestParityLogits(t *testing.T) {
	requireTorch(t)
	const seed = 7
	for _, tc := range []struct {
		name string
		cfg  hfmodel.Config
	}{{"tiny", tinyConfig(t)}, {"4-layer", fourLayerConfig(t)}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Logf("seed %d", seed)
			g, tm := pair(t, checkpoint(t, tc.cfg, seed))
			seqs := randomSeqs(rand.New(rand.NewPCG(seed, 1)), tc.cfg.VocabSize, 1, 7, 33)
			compareLogits(t, tc.name, g, tm, seqs, 1e-4)
		})
	}
}

// grpoBatch builds a GRPO batch of samples with behaviour log-probs near the model's own (as
// sampling gives) and advantages of both signs.
func grpoBatch(t *testing.T, m engine.Model, rng *rand.Rand) *learner.SeqBatch {
	t.Helper()
	vocab := m.Config().VocabSize
	var samples []engine.Sample
	for i, pl := range []int{5, 9, 3, 12} {
		seqs := randomSeqs(rng, vocab, pl, 2+i)
		samples = append(samples, engine.Sample{Prompt: seqs[0], Completion: seqs[1], LogProbs: make([]float32, len(seqs[1])), Advantage: float32(i) - 1.5})
	}
	b, err := engine.NewSeqBatch(samples)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := m.LogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range b.Mask {
		if w > 0 {
			b.BehaviourLogProbs[i] = lp[i] + float32(rng.NormFloat64()*0.3)
		}
	}
	return b
}

func TestParityGRPOAndSFTStep(t *testing.T) {
	requireTorch(t)
	const seed = 11
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	dir := checkpoint(t, cfg, seed)
	g, tm := pair(t, dir)
	gc := learner.DefaultGRPOConfig()
	gc.LR, gc.MicroBatch, gc.GroupSize = 1e-2, 2, 4
	gc.WeightDecay = 0.01
	for _, m := range []engine.Model{g, tm} {
		if err := m.SetTrainConfig(gc); err != nil {
			t.Fatal(err)
		}
	}
	b := grpoBatch(t, g, rand.New(rand.NewPCG(seed, 2)))
	lpG, err := g.LogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	lpT, err := tm.LogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range b.Mask {
		if w > 0 && math.Abs(float64(lpG[i]-lpT[i])) > 1e-4 {
			t.Fatalf("log-prob at %d: gomlx %v torch %v", i, lpG[i], lpT[i])
		}
	}
	for _, kind := range []engine.StepKind{engine.StepGRPO, engine.StepBC, engine.StepGRPO} {
		sg, err := g.Step(kind, b)
		if err != nil {
			t.Fatal(err)
		}
		st, err := tm.Step(kind, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: gomlx loss %.6f norm %.6f clip %.3f | torch loss %.6f norm %.6f clip %.3f", kind, sg.Loss, sg.GradNorm, sg.ClipFrac, st.Loss, st.GradNorm, st.ClipFrac)
		for _, c := range []struct {
			name string
			a, b float64
		}{{"loss", sg.Loss, st.Loss}, {"grad norm", sg.GradNorm, st.GradNorm}, {"entropy", sg.Entropy, st.Entropy},
			{"clip frac", sg.ClipFrac, st.ClipFrac}, {"approx KL", sg.ApproxKL, st.ApproxKL}, {"ratio", sg.MeanRatio, st.MeanRatio},
			{"accuracy", sg.Accuracy, st.Accuracy}} {
			if math.Abs(c.a-c.b) > 1e-4*math.Max(1, math.Abs(c.a)) {
				t.Errorf("%s step %s: gomlx %.7g torch %.7g", kind, c.name, c.a, c.b)
			}
		}
		if sg.Positions != st.Positions || sg.MicroBatches != st.MicroBatches || sg.Step != st.Step {
			t.Errorf("%s: positions/micro-batches/step gomlx %d/%d/%d torch %d/%d/%d", kind, sg.Positions, sg.MicroBatches, sg.Step, st.Positions, st.MicroBatches, st.Step)
		}
	}
	// The updated weights agree: saved by each engine, loaded by gomlx, same logits.
	dg, dt := filepath.Join(t.TempDir(), "g"), filepath.Join(t.TempDir(), "t")
	if err := g.Save(dg, safetensors.F32); err != nil {
		t.Fatal(err)
	}
	if err := tm.Save(dt, safetensors.F32); err != nil {
		t.Fatal(err)
	}
	wg, _, err := safetensors.ReadFile(filepath.Join(dg, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	wt, _, err := safetensors.ReadFile(filepath.Join(dt, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]safetensors.Tensor{}
	for _, x := range wt {
		byName[x.Name] = x
	}
	for _, x := range wg {
		y, ok := byName[x.Name]
		if !ok {
			t.Fatalf("torch checkpoint lacks %s", x.Name)
		}
		a, _ := x.Float32(nil)
		c, _ := y.Float32(nil)
		if d, _ := maxDiff(a, c); d > 1e-4 {
			t.Errorf("weight %s after 3 steps: max |Δ| %.3g", x.Name, d)
		}
	}
}

func TestCheckpointsCrossLoad(t *testing.T) {
	requireTorch(t)
	const seed = 13
	t.Logf("seed %d", seed)
	cfg := fourLayerConfig(t)
	cfg.NumHiddenLayers = 2
	_, tm := pair(t, checkpoint(t, cfg, seed))
	gc := learner.DefaultGRPOConfig()
	gc.LR = 1e-2
	if err := tm.SetTrainConfig(gc); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.Step(engine.StepGRPO, grpoBatch(t, tm, rand.New(rand.NewPCG(seed, 3)))); err != nil {
		t.Fatal(err)
	}
	seqs := randomSeqs(rand.New(rand.NewPCG(seed, 4)), cfg.VocabSize, 4, 19)
	for _, dtype := range []safetensors.DType{safetensors.F32, safetensors.BF16} {
		dir := filepath.Join(t.TempDir(), string(dtype))
		if err := tm.Save(dir, dtype); err != nil {
			t.Fatal(err)
		}
		g2, t2 := pair(t, dir)
		compareLogits(t, "torch-saved "+string(dtype)+", both engines", g2, t2, seqs, 1e-4)
		if dtype == safetensors.F32 {
			compareLogits(t, "torch-saved f32 vs the saving model", g2, tm, seqs, 1e-4)
		}
	}
}

func TestParityGreedyAndStream(t *testing.T) {
	requireTorch(t)
	const seed = 17
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	g, tm := pair(t, checkpoint(t, cfg, seed))
	prompts := randomSeqs(rand.New(rand.NewPCG(seed, 5)), cfg.VocabSize, 3, 8, 5)
	sc := engine.SampleConfig{MaxNewTokens: 12, StopTokens: []int32{7}}
	gg, err := g.GenerateStream(prompts, sc, 0, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var events []engine.TokenEvent
	gt, err := tm.GenerateStream(prompts, sc, 3, nil, func(ev engine.TokenEvent) bool {
		events = append(events, ev)
		return ev.Row == 1 && ev.Step == 2 // end row 1 after its third token
	})
	if err != nil {
		t.Fatal(err)
	}
	for r := range prompts {
		want := gg.Tokens[r]
		if r == 1 {
			want = want[:min(3, len(want))]
		}
		if !equalIDs(want, gt.Tokens[r]) {
			t.Errorf("row %d: gomlx greedy %v, torch %v", r, want, gt.Tokens[r])
		}
		for i := range gt.LogProbs[r] {
			if math.Abs(float64(gt.LogProbs[r][i]-gg.LogProbs[r][i])) > 1e-4 {
				t.Errorf("row %d token %d: log-prob gomlx %v torch %v", r, i, gg.LogProbs[r][i], gt.LogProbs[r][i])
			}
		}
	}
	if !gt.Stopped[1] {
		t.Error("row 1 ended by the callback is not reported stopped")
	}
	for _, ev := range events {
		if len(ev.Top) != 3 || ev.Top[0].LogProb < ev.Top[2].LogProb {
			t.Fatalf("event %+v: want 3 alternatives, most likely first", ev)
		}
	}
	// Sampling is reproducible from the rng.
	sc.Temperature, sc.TopK, sc.TopP = 1, 20, 0.9
	a, err := tm.GenerateStream(prompts, sc, 0, rand.New(rand.NewPCG(seed, 6)), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tm.GenerateStream(prompts, sc, 0, rand.New(rand.NewPCG(seed, 6)), nil)
	if err != nil {
		t.Fatal(err)
	}
	for r := range prompts {
		if !equalIDs(a.Tokens[r], b.Tokens[r]) {
			t.Errorf("row %d: the same rng gave %v and %v", r, a.Tokens[r], b.Tokens[r])
		}
	}
}

func equalIDs(a, b []int32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestLoRAAdapterCrossLoad(t *testing.T) {
	requireTorch(t)
	const seed = 19
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	dir := checkpoint(t, cfg, seed)
	g, tm := pair(t, dir)
	lc := hfmodel.LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "down_proj"}}
	if err := tm.AddLoRA(lc, seed); err != nil {
		t.Fatal(err)
	}
	gc := learner.DefaultGRPOConfig()
	gc.LR = 5e-2
	if err := tm.SetTrainConfig(gc); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := tm.Step(engine.StepGRPO, grpoBatch(t, tm, rand.New(rand.NewPCG(seed, 7)))); err != nil {
			t.Fatal(err)
		}
	}
	ad := filepath.Join(t.TempDir(), "adapter")
	if err := tm.SaveAdapter(ad); err != nil {
		t.Fatal(err)
	}
	if err := g.LoadAdapter(ad); err != nil {
		t.Fatal(err)
	}
	seqs := randomSeqs(rand.New(rand.NewPCG(seed, 8)), cfg.VocabSize, 6, 11)
	compareLogits(t, "torch adapter loaded by gomlx", g, tm, seqs, 1e-4)
	merged := filepath.Join(t.TempDir(), "merged")
	if err := tm.Save(merged, safetensors.F32); err != nil {
		t.Fatal(err)
	}
	g2, _ := pair(t, merged)
	compareLogits(t, "merged torch LoRA checkpoint in gomlx", g2, tm, seqs, 1e-4)
}

func TestWorkerKilledMidStep(t *testing.T) {
	requireTorch(t)
	_, tm := pair(t, checkpoint(t, tinyConfig(t), 23))
	done := make(chan error, 1)
	go func() { done <- tm.wk.call("sleep", map[string]any{"seconds": 60.0}, nil, nil) }()
	// The request is in flight once the worker holds it; kill it the hard way.
	time.AfterFunc(500*time.Millisecond, func() { _ = syscall.Kill(tm.wk.PID(), syscall.SIGKILL) })
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("the call did not return after the worker was killed")
	}
	var de *DiedError
	if !errors.As(err, &de) || de.Op != "sleep" || de.Status != "signal: killed" {
		t.Fatalf("err = %v, want a *DiedError for sleep with signal: killed", err)
	}
	if _, err := tm.Logits([][]int32{{1, 2}}); !errors.Is(err, ErrWorkerDied) {
		t.Fatalf("a call after the death: %v, want ErrWorkerDied", err)
	}
}

func TestRemoteErrorChangesNothing(t *testing.T) {
	requireTorch(t)
	cfg := tinyConfig(t)
	_, tm := pair(t, checkpoint(t, cfg, 29))
	seqs := [][]int32{{3, 4, 5, 6}}
	before, err := tm.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	b := grpoBatch(t, tm, rand.New(rand.NewPCG(29, 1)))
	b.Advantages = b.Advantages[:2] // neither Rows nor Rows·T values: the worker refuses it
	_, err = tm.Step(engine.StepGRPO, b)
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != "bad_request" || !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("err = %v, want a bad_request RemoteError wrapping learner.ErrBadBatch", err)
	}
	after, err := tm.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(before[0], after[0]); d != 0 {
		t.Fatalf("a refused step changed the logits by %g", d)
	}
}

// TestStreamEndedAtLastStep ends every row from the callback at the last step, after the worker
// has already finished the generate (the callback waits first), as t2t serve does when a row
// samples its stop token: the cancel then reaches the worker between requests. It must be
// ignored there, not answered: an answer would be read as the next request's reply.
func TestStreamEndedAtLastStep(t *testing.T) {
	requireTorch(t)
	const seed = 23
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	_, tm := pair(t, checkpoint(t, cfg, seed))
	prompts := randomSeqs(rand.New(rand.NewPCG(seed, 5)), cfg.VocabSize, 4, 6)
	sc := engine.SampleConfig{MaxNewTokens: 3}
	pid := tm.wk.PID()
	for i := range 3 {
		_, err := tm.GenerateStream(prompts, sc, 0, nil, func(ev engine.TokenEvent) bool {
			if ev.Step < sc.MaxNewTokens-1 {
				return false
			}
			time.Sleep(50 * time.Millisecond) // the worker replies meanwhile
			return true
		})
		if err != nil {
			t.Fatalf("generate %d: %v", i, err)
		}
	}
	if _, err := tm.GenerateStream(prompts, sc, 0, nil, nil); err != nil {
		t.Fatalf("generate after the late cancels: %v", err)
	}
	if got := tm.wk.PID(); got != pid {
		t.Errorf("the worker was restarted (pid %d, then %d)", pid, got)
	}
}
