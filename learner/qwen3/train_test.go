package qwen3

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// qwenSeqLogProb returns Σ log π(completion) for each sample through the trainer's forward pass.
func qwenSeqLogProb(t testing.TB, tr *gomlxtrain.Trainer, samples []engine.Sample) []float64 {
	t.Helper()
	b, err := engine.NewSeqBatch(samples)
	if err != nil {
		t.Fatal(err)
	}
	lp, err := tr.LogProbs(b, nil)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]float64, len(samples))
	for r := range samples {
		for j := range b.T {
			out[r] += float64(lp[r*b.T+j] * b.Mask[r*b.T+j])
		}
	}
	return out
}

// qwenSampled generates one completion per prompt at temperature 1 and returns them as samples
// with their behaviour log-probs.
func qwenSampled(t testing.TB, m *Model, prompts [][]int32, n int, rng *rand.Rand) []engine.Sample {
	t.Helper()
	gen, err := m.Generate(prompts, engine.SampleConfig{MaxNewTokens: n, Temperature: 1}, rng)
	if err != nil {
		t.Fatal(err)
	}
	var out []engine.Sample
	for i, p := range prompts {
		out = append(out, engine.Sample{Prompt: p, Completion: gen.Tokens[i], LogProbs: gen.LogProbs[i]})
	}
	return out
}

func TestGRPOStepMovesLogProbs(t *testing.T) {
	seed := qwenTestSeed(t)
	cfg := qwenTiny(t)
	m, err := Load(qwenBackend(t), qwenCheckpoint(t, cfg, seed))
	if err != nil {
		t.Fatal(err)
	}
	gc := learner.DefaultGRPOConfig()
	gc.LR = 1e-3
	tr, err := m.NewTrainer(gc)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 9))
	prompt := qwenPrompts(rng, cfg.VocabSize, 6)[0]
	samples := qwenSampled(t, m, [][]int32{prompt, prompt}, 8, rng)
	samples[0].Advantage, samples[1].Advantage = 1, -1

	// The sampler's log-probs at temperature 1 are the trainer's: GRPO's ratio starts at 1.
	before := qwenSeqLogProb(t, tr, samples)
	b, _ := engine.NewSeqBatch(samples)
	lp, _ := tr.LogProbs(b, nil)
	for i := range b.Mask {
		if b.Mask[i] == 1 && math.Abs(float64(lp[i]-b.BehaviourLogProbs[i])) > 1e-4 {
			t.Fatalf("position %d: trainer log-prob %v, sampler %v", i, lp[i], b.BehaviourLogProbs[i])
		}
	}
	st, err := tr.GRPOStep(b)
	if err != nil {
		t.Fatal(err)
	}
	after := qwenSeqLogProb(t, tr, samples)
	t.Logf("step: loss %.4f, grad norm %.3f, ratio %.4f; log π(positive) %.4f → %.4f, log π(negative) %.4f → %.4f",
		st.Loss, st.GradNorm, st.MeanRatio, before[0], after[0], before[1], after[1])
	if math.Abs(st.MeanRatio-1) > 1e-4 || st.Positions != 16 {
		t.Errorf("on-policy step: mean ratio %v over %d positions, want 1 over 16", st.MeanRatio, st.Positions)
	}
	if !(after[0] > before[0]+1e-3) {
		t.Errorf("positively advantaged completion: log-prob %v → %v, want an increase", before[0], after[0])
	}
	if !(after[1] < before[1]-1e-3) {
		t.Errorf("negatively advantaged completion: log-prob %v → %v, want a decrease", before[1], after[1])
	}
	// The model's own Generate sees the updated weights.
	l, err := m.Logits([][]int32{append(slices.Clone(prompt), samples[0].Completion...)})
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	v := cfg.VocabSize
	for k, tok := range samples[0].Completion {
		row := l[0][(len(prompt)-1+k)*v : (len(prompt)+k)*v]
		mx := float64(slices.Max(row))
		var z float64
		for _, x := range row {
			z += math.Exp(float64(x) - mx)
		}
		sum += float64(row[tok]) - mx - math.Log(z)
	}
	if math.Abs(sum-after[0]) > 1e-3 {
		t.Errorf("Model.Logits after the step gives log-prob %v, trainer %v", sum, after[0])
	}
}

func TestLoRA(t *testing.T) {
	seed := qwenTestSeed(t)
	cfg := qwenTiny(t)
	backend := qwenBackend(t)
	dir := qwenCheckpoint(t, cfg, seed)
	m, err := Load(backend, dir)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 10))
	prompts := qwenPrompts(rng, cfg.VocabSize, 5, 5)
	probe := [][]int32{append(slices.Clone(prompts[0]), 1, 2, 3)}
	base, _ := m.Logits(probe)

	lc := hfmodel.LoRAConfig{Rank: 4, Alpha: 8, Targets: []string{"q_proj", "v_proj", "down_proj"}}
	if err := m.AddLoRA(lc, seed); err != nil {
		t.Fatal(err)
	}
	if err := m.AddLoRA(lc, seed); err == nil {
		t.Error("second AddLoRA accepted")
	}
	withZeroB, _ := m.Logits(probe)
	if !slices.Equal(base[0], withZeroB[0]) {
		t.Error("fresh adapters (B = 0) changed the logits")
	}
	snapshot := func() map[string][]float32 {
		out := map[string][]float32{}
		for _, s := range cfg.WeightSpecs() {
			v, _, _ := m.varOf(s.Name)
			out[s.Name], _ = varFloats(v)
		}
		return out
	}
	adapter := func() (a, b []float32) {
		ad := m.lora.adapters[loraKey{1, modQ}]
		a, _ = varFloats(ad.a)
		b, _ = varFloats(ad.b)
		return a, b
	}
	baseW := snapshot()
	a0, b0 := adapter()
	gc := learner.DefaultGRPOConfig()
	gc.LR = 1e-2
	tr, err := m.NewTrainer(gc)
	if err != nil {
		t.Fatal(err)
	}
	samples := qwenSampled(t, m, prompts, 6, rng)
	samples[0].Advantage, samples[1].Advantage = 1, -1
	b, _ := engine.NewSeqBatch(samples)
	for step := range 2 {
		if _, err := tr.GRPOStep(b); err != nil {
			t.Fatal(err)
		}
		a, bb := adapter()
		if slices.Equal(bb, b0) {
			t.Fatalf("step %d: LoRA B unchanged", step)
		}
		if step == 1 && slices.Equal(a, a0) { // A's gradient is 0 while B = 0: it moves from step 2
			t.Fatal("LoRA A unchanged after two steps")
		}
	}
	after := snapshot()
	for name, w := range baseW {
		if !slices.Equal(w, after[name]) {
			t.Fatalf("base weight %s changed under LoRA", name)
		}
	}
	trained, _ := m.Logits(probe)
	if slices.Equal(trained[0], base[0]) {
		t.Fatal("LoRA training did not change the logits")
	}

	// PEFT adapter files.
	adir := t.TempDir()
	if err := m.SaveAdapter(adir); err != nil {
		t.Fatal(err)
	}
	var ac map[string]any
	js, _ := os.ReadFile(filepath.Join(adir, hfmodel.AdapterConfigFile))
	if err := json.Unmarshal(js, &ac); err != nil {
		t.Fatal(err)
	}
	if ac["peft_type"] != "LORA" || ac["r"] != 4.0 || ac["lora_alpha"] != 8.0 || ac["task_type"] != "CAUSAL_LM" || len(ac["target_modules"].([]any)) != 3 {
		t.Errorf("adapter_config.json: %v", ac)
	}
	ts, _, err := safetensors.ReadFile(filepath.Join(adir, hfmodel.AdapterWeightsFile))
	if err != nil {
		t.Fatal(err)
	}
	shapes := map[string][]int{}
	for _, x := range ts {
		shapes[x.Name] = x.Shape
	}
	if len(ts) != 2*3*cfg.NumHiddenLayers {
		t.Errorf("%d adapter tensors, want %d", len(ts), 2*3*cfg.NumHiddenLayers)
	}
	for name, want := range map[string][]int{
		"base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight": {4, 64},
		"base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight": {64, 4},
		"base_model.model.model.layers.1.self_attn.v_proj.lora_B.weight": {32, 4},
		"base_model.model.model.layers.1.mlp.down_proj.lora_A.weight":    {4, 128},
		"base_model.model.model.layers.1.mlp.down_proj.lora_B.weight":    {64, 4},
	} {
		if !slices.Equal(shapes[name], want) {
			t.Errorf("%s: shape %v, want %v", name, shapes[name], want)
		}
	}
	// LoadAdapter on a fresh base model reproduces the trained logits exactly.
	m2, err := Load(backend, dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := m2.LoadAdapter(adir); err != nil {
		t.Fatal(err)
	}
	got, _ := m2.Logits(probe)
	if !slices.Equal(got[0], trained[0]) {
		t.Error("LoadAdapter: logits differ from the trained model's")
	}
	// UnloadAdapter returns to the base model; the adapter attaches again after it. A model
	// a Trainer was built over keeps its adapters.
	if err := m.UnloadAdapter(); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Errorf("UnloadAdapter on a trained model: %v, want ErrInvalidConfig", err)
	}
	for round := range 2 {
		if err := m2.UnloadAdapter(); err != nil {
			t.Fatal(err)
		}
		if _, ok := m2.LoRA(); ok {
			t.Fatal("LoRA() still reports adapters after UnloadAdapter")
		}
		if got, _ := m2.Logits(probe); !slices.Equal(got[0], base[0]) {
			t.Fatalf("round %d: logits after UnloadAdapter differ from the base model's", round)
		}
		if err := m2.LoadAdapter(adir); err != nil {
			t.Fatal(err)
		}
		if got, _ := m2.Logits(probe); !slices.Equal(got[0], trained[0]) {
			t.Fatalf("round %d: logits after reloading the adapter differ from the trained model's", round)
		}
	}
	// Save writes merged weights: close to base + adapter.
	mdir := t.TempDir()
	if err := m.Save(mdir); err != nil {
		t.Fatal(err)
	}
	m3, err := Load(backend, mdir)
	if err != nil {
		t.Fatal(err)
	}
	merged, _ := m3.Logits(probe)
	if rel := qwenRelErr(merged[0], qwenToF64(trained[0], cfg.VocabSize)); rel > 1e-5 {
		t.Errorf("merged checkpoint: relative error %.3g against the adapter model", rel)
	}
}

// BenchmarkGRPOStep: one GRPO optimizer step (forward, backward, AdamW) of the tiny model on
// B=8 sequences of T=64 tokens.
func BenchmarkGRPOStep(b *testing.B) {
	cfg := qwenTiny(b)
	m, err := NewRandom(qwenBackend(b), cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := m.NewTrainer(learner.DefaultGRPOConfig())
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var samples []engine.Sample
	for i := range 8 {
		s := engine.Sample{Prompt: qwenPrompts(rng, cfg.VocabSize, 17)[0], Completion: qwenPrompts(rng, cfg.VocabSize, 48)[0], Advantage: float32(i%2*2 - 1)}
		s.LogProbs = make([]float32, len(s.Completion))
		for j := range s.LogProbs {
			s.LogProbs[j] = -6
		}
		samples = append(samples, s)
	}
	batch, err := engine.NewSeqBatch(samples)
	if err != nil || batch.T != 64 {
		b.Fatalf("batch T=%d: %v", batch.T, err)
	}
	if _, err := tr.GRPOStep(batch); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := tr.GRPOStep(batch); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecode: KV-cache sampling of the tiny model, B=4; reports ms/token (per decode step
// of the whole batch).
func BenchmarkDecode(b *testing.B) {
	cfg := qwenTiny(b)
	m, err := NewRandom(qwenBackend(b), cfg, 1)
	if err != nil {
		b.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 3))
	prompts := qwenPrompts(rng, cfg.VocabSize, 20, 30, 25, 32)
	sc := engine.SampleConfig{MaxNewTokens: 96, Temperature: 1}
	if _, err := m.Generate(prompts, sc, rng); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	tokens := 0
	for range b.N {
		g, err := m.Generate(prompts, sc, rng)
		if err != nil {
			b.Fatal(err)
		}
		tokens += len(g.Tokens[0])
	}
	b.ReportMetric(float64(b.Elapsed().Milliseconds())/float64(tokens), "ms/token")
}

// TestTailLogitsMatchFullLogits checks the trainer's tail window (the output layer on the
// completion positions only) against the full-logits path on the same left-padded batch: the
// same log-probs, losses and updated weights, for GRPO with several micro-batches and for BC.
func TestTailLogitsMatchFullLogits(t *testing.T) {
	seed := qwenTestSeed(t)
	cfg := qwenTiny(t)
	backend := qwenBackend(t)
	dir := qwenCheckpoint(t, cfg, seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	var samples []engine.Sample
	for i, p := range qwenPrompts(rng, cfg.VocabSize, 9, 3, 14, 6, 11) {
		c := qwenPrompts(rng, cfg.VocabSize, 1+(i*4)%9)[0] // 1, 5, 9, 4, 8 tokens
		lp := make([]float32, len(c))
		for k := range lp {
			lp[k] = -1 - rng.Float32()
		}
		samples = append(samples, engine.Sample{Prompt: p, Completion: c, LogProbs: lp, Advantage: float32(i%3) - 1})
	}
	tail, err := engine.NewSeqBatch(samples)
	if err != nil {
		t.Fatal(err)
	}
	if tail.Tail != 9 || tail.T != 14+9-1 {
		t.Fatalf("Tail %d T %d, want 9 and 22", tail.Tail, tail.T)
	}
	full := *tail
	full.Tail = 0 // the same rows, logits at every position
	gc := learner.DefaultGRPOConfig()
	gc.LR, gc.MicroBatch = 1e-2, 2
	type result struct {
		lp      []float32
		grpo    learner.UpdateStats
		bc      learner.UpdateStats
		weights []float32
	}
	run := func(b *learner.SeqBatch) result {
		m, err := Load(backend, dir)
		if err != nil {
			t.Fatal(err)
		}
		tr, err := m.NewTrainer(gc)
		if err != nil {
			t.Fatal(err)
		}
		var r result
		if r.lp, err = tr.LogProbs(b, nil); err != nil {
			t.Fatal(err)
		}
		if r.grpo, err = tr.GRPOStep(b); err != nil {
			t.Fatal(err)
		}
		if r.bc, err = tr.BCStep(b); err != nil {
			t.Fatal(err)
		}
		v, _, _ := m.varOf(hfmodel.NameEmbed) // tied: the head's gradient and the embedding's meet here
		if r.weights, err = varFloats(v); err != nil {
			t.Fatal(err)
		}
		return r
	}
	a, f := run(tail), run(&full)
	for i, m := range tail.Mask {
		if m == 1 && math.Abs(float64(a.lp[i]-f.lp[i])) > 1e-5 {
			t.Fatalf("position %d: tail log-prob %v, full %v", i, a.lp[i], f.lp[i])
		}
	}
	near := func(name string, x, y float64) {
		if math.Abs(x-y) > 1e-5*(1+math.Abs(y)) {
			t.Errorf("%s: tail %v, full %v", name, x, y)
		}
	}
	near("GRPO loss", a.grpo.Loss, f.grpo.Loss)
	near("GRPO grad norm", a.grpo.GradNorm, f.grpo.GradNorm)
	near("GRPO entropy", a.grpo.Entropy, f.grpo.Entropy)
	near("BC loss", a.bc.Loss, f.bc.Loss)
	near("BC accuracy", a.bc.Accuracy, f.bc.Accuracy)
	if a.grpo.Positions != f.grpo.Positions || a.grpo.MicroBatches != 3 {
		t.Errorf("positions %d vs %d, micro-batches %d", a.grpo.Positions, f.grpo.Positions, a.grpo.MicroBatches)
	}
	var worst float64
	for i := range a.weights {
		worst = max(worst, math.Abs(float64(a.weights[i]-f.weights[i])))
	}
	// Adam divides by the gradient's scale, so float rounding in near-zero gradients shows in the
	// update: allow 5% of one step (lr); a wrong window moves weights by whole steps.
	if worst > 0.05*gc.LR {
		t.Errorf("weights after two steps differ by up to %g (lr %g)", worst, gc.LR)
	}
	t.Logf("largest weight difference after two steps: %.3g (lr %g)", worst, gc.LR)

	// A Tail batch that trains a position before its tail is refused.
	bad := *tail
	bad.Mask = slices.Clone(tail.Mask)
	bad.Mask[0] = 1
	m, _ := Load(backend, dir)
	tr, _ := m.NewTrainer(gc)
	if _, err := tr.BCStep(&bad); !errors.Is(err, learner.ErrBadBatch) {
		t.Errorf("mask outside the tail: %v, want ErrBadBatch", err)
	}
}
