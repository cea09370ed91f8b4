package qwen3

import (
	"bytes"
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
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// qwenCheckpoint writes a tiny random checkpoint (sharp weights) into a temp dir and returns it.
func qwenCheckpoint(t testing.TB, cfg hfmodel.Config, seed uint64) string {
	t.Helper()
	dir := t.TempDir()
	if _, err := hfmodel.WriteRandomCheckpoint(dir, cfg, seed, ""); err != nil {
		t.Fatal(err)
	}
	// Replace the weights with sharper ones in the same layout.
	ts := qwenSharpWeights(t, cfg, seed)
	if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	return dir
}

func qwenPrompts(rng *rand.Rand, vocab int, lens ...int) [][]int32 {
	var out [][]int32
	for _, n := range lens {
		p := make([]int32, n)
		for i := range p {
			p[i] = int32(rng.IntN(vocab))
		}
		out = append(out, p)
	}
	return out
}

func qwenArgmax(row []float32) (int32, float32) {
	best := 0
	for i, x := range row {
		if x > row[best] {
			best = i
		}
	}
	second := float32(math.Inf(-1))
	for i, x := range row {
		if i != best && x > second {
			second = x
		}
	}
	return int32(best), row[best] - second
}

func TestGenerateGreedyMatchesRecompute(t *testing.T) {
	seed := qwenTestSeed(t)
	cfg := qwenTiny(t)
	m, err := Load(qwenBackend(t), qwenCheckpoint(t, cfg, seed))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 6))
	prompts := qwenPrompts(rng, cfg.VocabSize, 3, 9, 1)
	const steps = 16
	gen, err := m.Generate(prompts, engine.SampleConfig{MaxNewTokens: steps}, nil)
	if err != nil {
		t.Fatal(err)
	}
	seqs := make([][]int32, len(prompts))
	for i := range prompts {
		seqs[i] = slices.Clone(prompts[i])
		if len(gen.Tokens[i]) != steps || gen.Stopped[i] {
			t.Fatalf("prompt %d: %d tokens, stopped=%v; want %d", i, len(gen.Tokens[i]), gen.Stopped[i], steps)
		}
	}
	v := cfg.VocabSize
	live := []bool{true, true, true}
	for step := range steps {
		logits, err := m.Logits(seqs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range seqs {
			if !live[i] {
				continue
			}
			last := logits[i][(len(seqs[i])-1)*v:]
			want, gap := qwenArgmax(last)
			got := gen.Tokens[i][step]
			if got != want {
				if gap < 1e-4 { // a near-tie that float rounding may break either way
					t.Logf("prompt %d step %d: near-tie (gap %.2g), comparison stops here", i, step, gap)
					live[i] = false
					continue
				}
				t.Fatalf("prompt %d step %d: KV-cache greedy token %d, full recompute %d (gap %.3g)", i, step, got, want, gap)
			}
			var lse float64
			mx := float64(last[want])
			for _, x := range last {
				lse += math.Exp(float64(x) - mx)
			}
			wantLP := float64(last[want]) - mx - math.Log(lse)
			if d := math.Abs(float64(gen.LogProbs[i][step]) - wantLP); d > 1e-4 {
				t.Errorf("prompt %d step %d: log-prob %v, recompute %v", i, step, gen.LogProbs[i][step], wantLP)
			}
			seqs[i] = append(seqs[i], got)
		}
	}
	// Stop tokens end a row and are included.
	stop := gen.Tokens[0][4]
	gen2, err := m.Generate(prompts[:1], engine.SampleConfig{MaxNewTokens: steps, StopTokens: []int32{stop}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k := slices.Index(gen.Tokens[0], stop)
	if !gen2.Stopped[0] || !slices.Equal(gen2.Tokens[0], gen.Tokens[0][:k+1]) {
		t.Errorf("stop token %d: got %v stopped=%v, want %v", stop, gen2.Tokens[0], gen2.Stopped[0], gen.Tokens[0][:k+1])
	}
}

func TestSaveLoadRoundTrip(t *testing.T) {
	seed := qwenTestSeed(t)
	backend := qwenBackend(t)
	cfg := qwenTiny(t)
	cfg.TieWordEmbeddings = false
	src := qwenCheckpoint(t, cfg, seed)
	if err := os.WriteFile(filepath.Join(src, "tokenizer.json"), []byte(`{"tok":1}`), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := Load(backend, src)
	if err != nil {
		t.Fatal(err)
	}
	dst := t.TempDir()
	if err := m.Save(dst); err != nil {
		t.Fatal(err)
	}
	a, _, err := safetensors.ReadFile(filepath.Join(src, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	b, meta, err := safetensors.ReadFile(filepath.Join(dst, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	if meta["format"] != "pt" || len(a) != len(b) {
		t.Fatalf("saved %d tensors with metadata %v, source had %d", len(b), meta, len(a))
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].DType != b[i].DType || !slices.Equal(a[i].Shape, b[i].Shape) || string(a[i].Data) != string(b[i].Data) {
			t.Fatalf("tensor %s differs after Save", a[i].Name)
		}
	}
	if tj, err := os.ReadFile(filepath.Join(dst, "tokenizer.json")); err != nil || string(tj) != `{"tok":1}` {
		t.Errorf("tokenizer.json not copied: %q, %v", tj, err)
	}
	var cj map[string]any
	js, _ := os.ReadFile(filepath.Join(dst, hfmodel.ConfigFile))
	if err := json.Unmarshal(js, &cj); err != nil {
		t.Fatal(err)
	}
	if cj["model_type"] != "qwen3" || cj["architectures"].([]any)[0] != "Qwen3ForCausalLM" || cj["torch_dtype"] != "float32" || cj["tie_word_embeddings"] != false {
		t.Errorf("config.json: %v", cj)
	}
	m2, err := Load(backend, dst)
	if err != nil {
		t.Fatal(err)
	}
	seq := [][]int32{{1, 2, 3, 4, 5}}
	l1, _ := m.Logits(seq)
	l2, _ := m2.Logits(seq)
	if !slices.Equal(l1[0], l2[0]) {
		t.Error("logits differ after Save → Load")
	}

	// bfloat16: saved rounded, loads as float32, logits close.
	bdir := t.TempDir()
	if err := m.SaveAs(bdir, safetensors.BF16); err != nil {
		t.Fatal(err)
	}
	mb, err := Load(backend, bdir)
	if err != nil {
		t.Fatal(err)
	}
	bt, _, _ := safetensors.ReadFile(filepath.Join(bdir, "model.safetensors"))
	for _, x := range bt {
		if x.DType != safetensors.BF16 {
			t.Fatalf("%s saved as %s", x.Name, x.DType)
		}
	}
	wq, err := varFloats(mb.layers[1][modQ])
	if err != nil {
		t.Fatal(err)
	}
	orig, _ := varFloats(m.layers[1][modQ])
	for i := range wq {
		if wq[i] != safetensors.BF16ToF32(safetensors.F32ToBF16(orig[i])) {
			t.Fatalf("bf16 load: weight %d is %v, want bf16(%v)", i, wq[i], orig[i])
		}
	}
	lb, _ := mb.Logits(seq)
	if rel := qwenRelErr(lb[0], qwenToF64(l1[0], cfg.VocabSize)); rel > 0.05 || rel == 0 {
		t.Errorf("bf16 logits relative difference %.3g (want small but non-zero)", rel)
	}
	var cb map[string]any
	js, _ = os.ReadFile(filepath.Join(bdir, hfmodel.ConfigFile))
	_ = json.Unmarshal(js, &cb)
	if cb["torch_dtype"] != "bfloat16" {
		t.Errorf("bf16 config torch_dtype %v", cb["torch_dtype"])
	}
}

func qwenToF64(f []float32, v int) [][]float64 {
	out := make([][]float64, len(f)/v)
	for t := range out {
		out[t] = make([]float64, v)
		for i := range v {
			out[t][i] = float64(f[t*v+i])
		}
	}
	return out
}

func TestLoadShardedAndErrors(t *testing.T) {
	seed := qwenTestSeed(t)
	backend := qwenBackend(t)
	cfg := qwenTiny(t)
	ts := qwenSharpWeights(t, cfg, seed)
	write := func(dir string, ts []safetensors.Tensor) {
		t.Helper()
		if _, err := hfmodel.WriteRandomCheckpoint(dir, cfg, seed, ""); err != nil {
			t.Fatal(err)
		}
		if err := safetensors.WriteFile(filepath.Join(dir, "model.safetensors"), ts, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Sharded: two files and an index, loads to the same logits as the single file.
	single := t.TempDir()
	write(single, ts)
	sharded := t.TempDir()
	write(sharded, ts)
	os.Remove(filepath.Join(sharded, "model.safetensors"))
	half := len(ts) / 2
	idx := map[string]any{"metadata": map[string]any{}, "weight_map": map[string]string{}}
	for i, part := range [][]safetensors.Tensor{ts[:half], ts[half:]} {
		name := []string{"model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"}[i]
		if err := safetensors.WriteFile(filepath.Join(sharded, name), part, nil); err != nil {
			t.Fatal(err)
		}
		for _, x := range part {
			idx["weight_map"].(map[string]string)[x.Name] = name
		}
	}
	js, _ := json.Marshal(idx)
	if err := os.WriteFile(filepath.Join(sharded, safetensors.IndexFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	m1, err := Load(backend, single)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := Load(backend, sharded)
	if err != nil {
		t.Fatal(err)
	}
	seq := [][]int32{{7, 8, 9}}
	l1, _ := m1.Logits(seq)
	l2, _ := m2.Logits(seq)
	if !slices.Equal(l1[0], l2[0]) {
		t.Error("sharded checkpoint loads differently")
	}

	q1 := hfmodel.LayerName(1, "self_attn.q_proj")
	cases := []struct {
		name    string
		edit    func([]safetensors.Tensor) []safetensors.Tensor
		tensor  string
		problem string
	}{
		{"missing", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return slices.DeleteFunc(ts, func(x safetensors.Tensor) bool { return x.Name == q1 })
		}, q1, hfmodel.ProblemMissing},
		{"extra", func(ts []safetensors.Tensor) []safetensors.Tensor {
			return append(ts, safetensors.F32Tensor("model.layers.9.mlp.up_proj.weight", []int{2}, []float32{1, 2}))
		}, "model.layers.9.mlp.up_proj.weight", hfmodel.ProblemUnexpected},
		{"shape", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i, x := range ts {
				if x.Name == q1 {
					ts[i] = safetensors.F32Tensor(q1, []int{32, 64}, make([]float32, 32*64))
				}
			}
			return ts
		}, q1, hfmodel.ProblemShape},
		{"dtype", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i, x := range ts {
				if x.Name == hfmodel.NameNorm {
					ts[i] = safetensors.I64Tensor(hfmodel.NameNorm, []int{64}, make([]int64, 64))
				}
			}
			return ts
		}, hfmodel.NameNorm, hfmodel.ProblemDType},
		{"nan", func(ts []safetensors.Tensor) []safetensors.Tensor {
			for i, x := range ts {
				if x.Name == hfmodel.NameEmbed {
					f, _ := x.Float32(nil)
					f[17] = float32(math.NaN())
					ts[i] = safetensors.F32Tensor(x.Name, x.Shape, f)
				}
			}
			return ts
		}, hfmodel.NameEmbed, hfmodel.ProblemNonFinite},
	}
	for _, c := range cases {
		dir := t.TempDir()
		write(dir, c.edit(slices.Clone(ts)))
		_, err := Load(backend, dir)
		var we *hfmodel.WeightError
		if !errors.As(err, &we) || we.Tensor != c.tensor || we.Problem != c.problem ||
			!errors.Is(err, hfmodel.ErrWeights) || !errors.Is(err, learner.ErrCheckpointMismatch) {
			t.Errorf("%s: got %v, want a %s WeightError for %s", c.name, err, c.problem, c.tensor)
		}
	}
	// A tied checkpoint may carry lm_head.weight: it is ignored.
	dir := t.TempDir()
	write(dir, append(slices.Clone(ts), safetensors.F32Tensor(hfmodel.NameLMHead, []int{cfg.VocabSize, cfg.HiddenSize}, make([]float32, cfg.VocabSize*cfg.HiddenSize))))
	if _, err := Load(backend, dir); err != nil {
		t.Errorf("tied checkpoint with lm_head.weight: %v", err)
	}
}

func TestEstimateMemory(t *testing.T) {
	c4, _ := hfmodel.Preset(hfmodel.Preset4BShape)
	c06, _ := hfmodel.Preset(hfmodel.Preset06BShape)
	// Parameter counts of Qwen3-4B and Qwen3-0.6B (embedding counted once: tied).
	if n := c4.NumParams(); n != 4022468096 {
		t.Errorf("4b-shape NumParams = %d, want 4022468096", n)
	}
	if n := c06.NumParams(); n != 596049920 {
		t.Errorf("0.6b-shape NumParams = %d, want 596049920", n)
	}
	full := hfmodel.EstimateMemory(c4, 1, 1024, false)
	lora := hfmodel.EstimateMemory(c4, 1, 1024, true)
	t.Logf("4b full: %v", full)
	t.Logf("4b lora: %v", lora)
	if full.Weights != 4*full.Params || full.Gradients+full.Optimizer != 16*full.Params {
		t.Errorf("full fine-tuning budget: %+v", full)
	}
	if lora.TrainableParams >= full.Params/50 || lora.Total() >= full.Total()/2 {
		t.Errorf("LoRA budget not much smaller: %v vs %v", lora, full)
	}
	lc := hfmodel.DefaultLoRAConfig()
	// q: 16·(2560+4096), k,v: 16·(2560+1024) each, o: 16·(4096+2560), gate/up: 16·(2560+9728), down: 16·(9728+2560).
	want := int64(36 * 16 * ((2560 + 4096) + 2*(2560+1024) + (4096 + 2560) + 3*(2560+9728)))
	if got := c4.LoRAParams(lc); got != want {
		t.Errorf("LoRAParams = %d, want %d", got, want)
	}
	if full.KVCache != 2*36*1024*8*128*4 {
		t.Errorf("KV cache %d", full.KVCache)
	}
}

func TestNewSeqBatch(t *testing.T) {
	b, err := engine.NewSeqBatch([]engine.Sample{
		{Prompt: []int32{1, 2}, Completion: []int32{3, 4}, LogProbs: []float32{-0.5, -0.25}, Advantage: 1},
		{Prompt: []int32{5}, Completion: []int32{6}, LogProbs: []float32{-1}, Advantage: -1},
	})
	if err != nil {
		t.Fatal(err)
	}
	if b.Rows != 2 || b.T != 3 || b.Tail != 2 {
		t.Fatalf("rows %d T %d tail %d", b.Rows, b.T, b.Tail)
	}
	want := map[string][]float32{ // left-padded: completions end at the row's end
		"tokens":  {1, 2, 3, 0, 0, 5},
		"valid":   {1, 1, 1, 0, 0, 1},
		"actions": {2, 3, 4, 0, 0, 6},
		"mask":    {0, 1, 1, 0, 0, 1},
		"lp":      {0, -0.5, -0.25, 0, 0, -1},
	}
	got := map[string][]float32{"mask": b.Mask, "lp": b.BehaviourLogProbs}
	for k, src := range map[string][]int32{"tokens": b.Inputs[0].I32, "valid": b.Inputs[1].I32, "actions": b.Actions} {
		for _, x := range src {
			got[k] = append(got[k], float32(x))
		}
	}
	for k := range want {
		if !slices.Equal(got[k], want[k]) {
			t.Errorf("%s = %v, want %v", k, got[k], want[k])
		}
	}
	if !slices.Equal(b.Advantages, []float32{1, -1}) {
		t.Errorf("advantages %v", b.Advantages)
	}
	for _, bad := range [][]engine.Sample{
		nil,
		{{Prompt: nil, Completion: []int32{1}}},
		{{Prompt: []int32{1}, Completion: []int32{1}, LogProbs: []float32{1, 2}}},
		{{Prompt: []int32{1}, Completion: []int32{1}, RefLogProbs: []float32{0}}, {Prompt: []int32{1}, Completion: []int32{1}}},
	} {
		if _, err := engine.NewSeqBatch(bad); !errors.Is(err, learner.ErrBadBatch) {
			t.Errorf("NewSeqBatch(%v) = %v", bad, err)
		}
	}
}

func TestSampler(t *testing.T) {
	rng := rand.New(rand.NewPCG(qwenTestSeed(t), 8))
	logits := []float32{2, 1, 0, -1, 3, 0.5}
	var z float64
	for _, x := range logits {
		z += math.Exp(float64(x))
	}
	p := func(i int) float64 { return math.Exp(float64(logits[i])) / z }
	cases := []struct {
		sc      engine.SampleConfig
		allowed []int
	}{
		{engine.SampleConfig{MaxNewTokens: 1, Temperature: 1}, []int{0, 1, 2, 3, 4, 5}},
		{engine.SampleConfig{MaxNewTokens: 1, Temperature: 1, TopK: 2}, []int{4, 0}},
		// probabilities sorted: 4 (.58), 0 (.21), 1 (.08), 5 (.05)…: top-p .7 keeps {4, 0}
		{engine.SampleConfig{MaxNewTokens: 1, Temperature: 1, TopP: 0.7}, []int{4, 0}},
		{engine.SampleConfig{MaxNewTokens: 1, Temperature: 1, TopK: 3, TopP: 0.95}, []int{4, 0, 1}},
		{engine.SampleConfig{MaxNewTokens: 1, Temperature: 0.5, TopP: 0.5}, []int{4}},
	}
	for _, c := range cases {
		s := engine.NewSampler(c.sc, len(logits))
		counts := make([]int, len(logits))
		const n = 20000
		for range n {
			tok, lp := s.Sample(logits, rng)
			counts[tok]++
			// The log-prob is under softmax(logits/T) over the whole vocabulary.
			var zt float64
			for _, x := range logits {
				zt += math.Exp(float64(x) / c.sc.Temperature)
			}
			if want := float64(logits[tok])/c.sc.Temperature - math.Log(zt); math.Abs(float64(lp)-want) > 1e-6 {
				t.Fatalf("%+v: log-prob %v, want %v", c.sc, lp, want)
			}
		}
		var mass float64
		for _, i := range c.allowed {
			mass += math.Pow(p(i), 1/c.sc.Temperature)
		}
		for i, k := range counts {
			if !slices.Contains(c.allowed, i) {
				if k > 0 {
					t.Errorf("%+v: token %d sampled %d times, should be excluded", c.sc, i, k)
				}
				continue
			}
			want := math.Pow(p(i), 1/c.sc.Temperature) / mass
			got := float64(k) / n
			if math.Abs(got-want) > 4*math.Sqrt(want*(1-want)/n)+1e-3 {
				t.Errorf("%+v: token %d frequency %.4f, want %.4f", c.sc, i, got, want)
			}
		}
	}
	// Greedy: argmax, log-prob at temperature 1; ties go to the lowest id.
	s := engine.NewSampler(engine.SampleConfig{MaxNewTokens: 1}, 4)
	if tok, _ := s.Sample([]float32{1, 5, 5, 0}, nil); tok != 1 {
		t.Errorf("greedy tie → %d, want 1", tok)
	}
	for _, bad := range []engine.SampleConfig{{}, {MaxNewTokens: 1, Temperature: -1}, {MaxNewTokens: 1, TopK: -1}, {MaxNewTokens: 1, TopP: 1.5}} {
		if err := bad.Validate(); !errors.Is(err, learner.ErrInvalidConfig) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
}

// NewRandom draws straight into float32 slices: the same weights as New(InitRandom).
func TestNewRandomMatchesInitRandom(t *testing.T) {
	be := qwenBackend(t)
	cfg := qwenTiny(t)
	cfg.TieWordEmbeddings = false // the untied head is drawn last
	ts, err := hfmodel.InitRandom(cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(be, cfg, ts)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewRandom(be, cfg, 5)
	if err != nil {
		t.Fatal(err)
	}
	wa, err := a.weightTensors()
	if err != nil {
		t.Fatal(err)
	}
	wb, err := b.weightTensors()
	if err != nil {
		t.Fatal(err)
	}
	if len(wa) != len(wb) {
		t.Fatalf("%d vs %d tensors", len(wa), len(wb))
	}
	for i := range wa {
		if wa[i].Name != wb[i].Name || !bytes.Equal(wa[i].Data, wb[i].Data) {
			t.Fatalf("tensor %s differs", wa[i].Name)
		}
	}
}
