package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/torch"
)

func runBench(args []string, stdout, stderr io.Writer) error {
	return subcommands("bench", []command{
		{"grpo", "time GRPO steps of a Qwen3 model (random weights of a preset shape, or a checkpoint): tokens/s, FLOPs, MFU, memory", benchGRPO},
		{"decode", "time batched KV-cache decoding (gomlx or torch engine): prefill, decode tokens/s, memory", benchDecode},
		{"cluster", "simulate a coordinator, a learner and R = 1…1,024 rollout actors: episodes/s fed to the learner, discards, where it saturates", benchCluster},
	}, args, stdout, stderr)
}

// benchModelFlags are the flags both benchmarks share: which model, on which device.
type benchModelFlags struct {
	preset, model, device string
	seed                  uint64
	json, force           bool
	eng                   *engineFlags
	// Shape overrides of the preset (0: the preset's).
	layers, hidden, intermediate, heads, kvHeads, vocab int
}

func (f *benchModelFlags) register(fs interface {
	StringVar(*string, string, string, string)
	Uint64Var(*uint64, string, uint64, string)
	BoolVar(*bool, string, bool, string)
}) {
	fs.StringVar(&f.preset, "preset", qwen3.PresetTiny, "random-weight model of a preset shape: tiny, 0.6b-shape or 4b-shape (built in memory, nothing written)")
	fs.StringVar(&f.model, "model", "", "a checkpoint directory instead of --preset")
	fs.StringVar(&f.device, "device", learner.DeviceCPU, "compute device: gomlx engine: cpu, or xla:/abs/path/pjrt_plugin.so[,nopreallocate][,tf32] (cgo builds); torch engine: cpu, cuda or cuda:N")
	fs.Uint64Var(&f.seed, "seed", 1, "seed of the random weights and the synthetic batch")
	fs.BoolVar(&f.json, "json", false, "print one JSON object instead of a table")
	fs.BoolVar(&f.force, "force", false, "run on the CPU even when the memory estimate exceeds the machine's available memory")
}

// registerEngine adds the engine and shape flags.
func (f *benchModelFlags) registerEngine(fs *flag.FlagSet) {
	f.eng = addEngineFlags(fs)
	fs.IntVar(&f.layers, "layers", 0, "--preset: decoder layers (0: the preset's)")
	fs.IntVar(&f.hidden, "hidden", 0, "--preset: hidden size (0: the preset's)")
	fs.IntVar(&f.intermediate, "intermediate", 0, "--preset: MLP intermediate size (0: the preset's)")
	fs.IntVar(&f.heads, "heads", 0, "--preset: query heads; head_dim = hidden / heads (0: the preset's)")
	fs.IntVar(&f.kvHeads, "kv-heads", 0, "--preset: key-value heads (0: the preset's, or --heads/2 with --heads)")
	fs.IntVar(&f.vocab, "vocab", 0, "--preset: vocabulary size (0: the preset's)")
}

// config returns the model configuration the flags name (reading only config.json for --model).
func (f *benchModelFlags) config() (qwen3.Config, error) {
	if f.model != "" {
		c, err := qwen3.LoadConfig(f.model)
		if err != nil {
			return c, badInput("--model: %v", err)
		}
		return c, nil
	}
	c, err := qwen3.Preset(f.preset)
	if err != nil {
		return c, badInput("--preset: %v", err)
	}
	if min(f.layers, f.hidden, f.intermediate, f.heads, f.kvHeads, f.vocab) < 0 {
		return c, badInput("--layers, --hidden, --intermediate, --heads, --kv-heads and --vocab must be ≥ 0")
	}
	if f.heads > 0 {
		c.NumAttentionHeads, c.NumKeyValueHeads = f.heads, max(1, f.heads/2)
	}
	if f.kvHeads > 0 {
		c.NumKeyValueHeads = f.kvHeads
	}
	if f.hidden > 0 {
		c.HiddenSize = f.hidden
	}
	if f.hidden > 0 || f.heads > 0 {
		if c.HiddenSize%c.NumAttentionHeads != 0 {
			return c, badInput("--hidden %d is not a multiple of %d heads", c.HiddenSize, c.NumAttentionHeads)
		}
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if f.layers > 0 {
		c.NumHiddenLayers = f.layers
	}
	if f.intermediate > 0 {
		c.IntermediateSize = f.intermediate
	}
	if f.vocab > 0 {
		c.VocabSize = f.vocab
	}
	if err := c.Validate(); err != nil {
		return c, badInput("%v", err)
	}
	return c, nil
}

// name is the model's label in reports.
func (f *benchModelFlags) name() string {
	if f.model != "" {
		return f.model
	}
	return f.preset
}

// checkHostMemory refuses a CPU run whose estimate exceeds the memory available now.
func (f *benchModelFlags) checkHostMemory(need int64) error {
	if (f.device != learner.DeviceCPU && f.device != "") || f.force {
		return nil
	}
	avail := memAvailable()
	if avail > 0 && need > avail {
		return badInput("the estimate (%.1f GiB) exceeds the memory available on this machine (%.1f GiB): pick a smaller preset or batch, or pass --force",
			float64(need)/(1<<30), float64(avail)/(1<<30))
	}
	return nil
}

// build loads or builds the model on the chosen engine and device.
func (f *benchModelFlags) build(cfg qwen3.Config, stderr io.Writer) (engine.Model, error) {
	spec, err := f.eng.spec(f.device, stderr)
	if err != nil {
		return nil, err
	}
	var m engine.Model
	if f.model != "" {
		m, err = textpolicy.OpenModel(context.Background(), spec, f.model)
	} else {
		m, err = textpolicy.NewRandomModel(context.Background(), spec, cfg, f.seed)
	}
	if err != nil {
		return nil, engineErr("--model/--preset", err)
	}
	return m, nil
}

// backendName describes where the math runs, for the report.
func backendName(m engine.Model) string {
	return m.Engine() + ": " + m.Device()
}

// probeLogits are the logits of a fixed short sequence: compared before and after the timed
// steps, they show that the steps changed the weights, on any engine.
func probeLogits(m engine.Model) ([]float32, error) {
	v := int32(m.Config().VocabSize)
	out, err := m.Logits([][]int32{{1 % v, 2 % v, 3 % v, 4 % v}})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// TrainFLOPsPerToken is the model FLOPs of one trained token of a sequence of seqLen tokens:
// the PaLM (Chowdhery et al. 2022, appendix B) count
//
//	6·N + 12·L·(heads·head_dim)·seqLen
//
// 6·N: each weight multiplies each token once forward (2 FLOPs, a multiply and an add) and
// twice backward (the activation and the weight gradient). N is the number of weights that
// multiply activations: every parameter but the input embedding table, which is a lookup
// (tied models: the table counts once, as the LM head; norm weights are counted too, a
// negligible excess). The attention term: per layer the scores Q·Kᵀ and the weighted sum P·V
// cost 2·(heads·head_dim)·seqLen FLOPs each forward, times 3 for forward and backward.
// heads·head_dim is the hidden size in most models; in Qwen3-4B it is 4096 against a hidden
// size of 2560, and the attention matmuls are that wide. Causal masking is not discounted:
// the model computes the whole score matrix. With LoRA the frozen base weights get no weight
// gradient: 4·N for them plus 6 per adapter parameter.
func TrainFLOPsPerToken(c qwen3.Config, seqLen int, loraParams int64) float64 {
	n := float64(matmulParams(c))
	dense := 6 * n
	if loraParams > 0 {
		dense = 4*n + 6*float64(loraParams)
	}
	return dense + 12*float64(c.NumHiddenLayers)*float64(c.NumAttentionHeads*c.HeadDim)*float64(seqLen)
}

// matmulParams is N of TrainFLOPsPerToken: the parameters that multiply activations.
func matmulParams(c qwen3.Config) int64 {
	n := c.NumParams()
	if !c.TieWordEmbeddings {
		n -= int64(c.VocabSize) * int64(c.HiddenSize)
	}
	return n
}

// memoryReport is the memory seen during a benchmark.
type memoryReport struct {
	// HostPeakRSS is the process's peak resident set (VmHWM of /proc/self/status), bytes; 0 where
	// that file does not exist.
	HostPeakRSS int64 `json:"host_peak_rss_bytes"`
	// GoSys is the memory the Go runtime obtained from the OS (runtime.MemStats.Sys, which does
	// not shrink: about the Go heap's peak); on the CPU backend the tensors live there.
	GoSys int64 `json:"go_sys_bytes"`
	// GoHeapPeak is the largest HeapInuse sampled after each timed call.
	GoHeapPeak int64 `json:"go_heap_peak_bytes"`
	// Device says what is known about accelerator memory.
	Device string `json:"device_memory"`
	// WorkerPeakRSS and CUDAMaxAllocated are the torch worker's (0 on the gomlx engine).
	WorkerPeakRSS    int64 `json:"worker_peak_rss_bytes,omitempty"`
	CUDAMaxAllocated int64 `json:"cuda_max_allocated_bytes,omitempty"`
}

// memSampler tracks the Go heap's high-water mark between calls.
type memSampler struct{ heapPeak uint64 }

func (s *memSampler) sample() {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	s.heapPeak = max(s.heapPeak, ms.HeapInuse)
}

func (s *memSampler) report(m engine.Model) memoryReport {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r := memoryReport{HostPeakRSS: procStatusBytes("VmHWM"), GoSys: int64(ms.Sys), GoHeapPeak: int64(max(s.heapPeak, ms.HeapInuse))}
	switch m := m.(type) {
	case *torch.Model:
		st, err := m.Stats()
		if err != nil {
			r.Device = "worker stats failed: " + err.Error()
			break
		}
		r.WorkerPeakRSS, r.CUDAMaxAllocated = st.PeakRSSBytes, st.CUDAMaxAllocated
		if strings.HasPrefix(m.Device(), "cuda") {
			r.Device = fmt.Sprintf("torch.cuda.max_memory_allocated %.3f GiB", float64(st.CUDAMaxAllocated)/(1<<30))
		} else {
			r.Device = fmt.Sprintf("none (torch on the CPU: the worker's peak RSS is %.3f GiB)", float64(st.PeakRSSBytes)/(1<<30))
		}
	case *engine.GoMLXModel:
		if learner.IsXLA(m.Qwen3().Backend()) {
			r.Device = "not exposed: go-xla v0.1.4 wraps no PJRT_Device_MemoryStats; sample nvidia-smi --query-gpu=memory.used (with ,nopreallocate the pool grows to about the peak)"
		} else {
			r.Device = "none (CPU backend: tensors are in the Go heap)"
		}
	}
	return r
}

// procStatusBytes reads a "kB" field of /proc/self/status (0 if absent).
func procStatusBytes(field string) int64 {
	return procKB("/proc/self/status", field)
}

// memAvailable is MemAvailable of /proc/meminfo in bytes (0 if unknown).
func memAvailable() int64 { return procKB("/proc/meminfo", "MemAvailable") }

func procKB(path, field string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || name != field {
			continue
		}
		fs := strings.Fields(rest)
		if len(fs) == 0 {
			return 0
		}
		kb, err := strconv.ParseInt(fs[0], 10, 64)
		if err != nil {
			return 0
		}
		return kb << 10
	}
	return 0
}

// grpoReport is the result of t2t bench grpo (its --json output).
type grpoReport struct {
	Bench        string  `json:"bench"` // "grpo"
	Model        string  `json:"model"`
	Device       string  `json:"device"`
	Backend      string  `json:"backend"`
	Params       int64   `json:"params"`
	Trainable    int64   `json:"trainable_params"`
	LoRARank     int     `json:"lora_rank,omitempty"`
	Batch        int     `json:"batch"`
	PromptLen    int     `json:"prompt_len"`
	CompLen      int     `json:"completion_len"`
	MicroBatch   int     `json:"micro_batch"`
	PaddedShape  [2]int  `json:"padded_shape"` // [rows, T] of one micro-batch after bucketing
	EstimateB    int64   `json:"memory_estimate_bytes"`
	BuildSec     float64 `json:"build_s"`  // building (or loading) the model
	WarmupSec    float64 `json:"warmup_s"` // the first step: compiling and running
	Steps        int     `json:"steps"`
	StepSec      float64 `json:"step_s"`       // mean over the timed steps
	StepMinSec   float64 `json:"step_min_s"`   // fastest timed step
	TokensPerSec float64 `json:"tokens_per_s"` // batch·(prompt+completion) / step_s
	FLOPsPerStep float64 `json:"model_flops_per_step"`
	FLOPsFormula string  `json:"flops_formula"`
	AchievedTF   float64 `json:"achieved_tflops"`
	PeakTFLOPS   float64 `json:"peak_tflops,omitempty"`
	PeakLabel    string  `json:"peak_label,omitempty"`
	MFU          float64 `json:"mfu,omitempty"`
	Loss         float64 `json:"loss"`
	GradNorm     float64 `json:"grad_norm"`
	// ParamDelta is the largest |change| of the logits of a fixed probe sequence over the timed
	// steps: non-zero means the steps were applied.
	ParamDelta float64      `json:"probe_logit_max_abs_change"`
	Memory     memoryReport `json:"memory"`
}

func benchGRPO(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t bench grpo", "t2t bench grpo [--preset P | --model DIR] [--device D] --batch B --prompt-len P --completion-len C [flags]", stderr)
	var mf benchModelFlags
	mf.register(fs)
	mf.registerEngine(fs)
	batch := fs.Int("batch", 8, "sequences per GRPO step")
	promptLen := fs.Int("prompt-len", 64, "prompt tokens per sequence")
	compLen := fs.Int("completion-len", 64, "completion (trained) tokens per sequence")
	micro := fs.Int("micro-batch", textpolicy.DefaultOptions().GRPO.MicroBatch, "rows per forward/backward pass (gradients accumulate over micro-batches); the text policy's default")
	loraRank := fs.Int("lora-rank", 0, "train LoRA adapters of this rank (α = 2·rank, all seven projections) instead of all weights; 0: full fine-tuning")
	steps := fs.Int("steps", 3, "timed GRPO steps after one warm-up step")
	peak := fs.Float64("peak-tflops", 0, "the device's peak FLOP/s in TFLOPS for MFU (0: no MFU)")
	peakLabel := fs.String("peak-label", "", "what --peak-tflops is, for the report (e.g. \"H200 bf16 dense\")")
	lr := fs.Float64("lr", textpolicy.DefaultOptions().GRPO.LR, "AdamW learning rate")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *batch < 1:
		return badInput("--batch %d: must be ≥ 1", *batch)
	case *promptLen < 1:
		return badInput("--prompt-len %d: must be ≥ 1", *promptLen)
	case *compLen < 1:
		return badInput("--completion-len %d: must be ≥ 1", *compLen)
	case *micro < 1:
		return badInput("--micro-batch %d: must be ≥ 1", *micro)
	case *loraRank < 0:
		return badInput("--lora-rank %d: must be ≥ 0", *loraRank)
	case *steps < 1:
		return badInput("--steps %d: must be ≥ 1", *steps)
	case math.IsNaN(*peak) || math.IsInf(*peak, 0) || *peak < 0:
		return badInput("--peak-tflops %v: must be ≥ 0", *peak)
	}
	cfg, err := mf.config()
	if err != nil {
		return err
	}
	if n := *promptLen + *compLen; n > cfg.MaxPositionEmbeddings {
		return badInput("--prompt-len + --completion-len = %d exceeds the model's %d positions", n, cfg.MaxPositionEmbeddings)
	}
	gcfg := textpolicy.DefaultOptions().GRPO
	gcfg.MicroBatch = *micro
	gcfg.LR = *lr
	if err := gcfg.Validate(); err != nil {
		return badInput("%v", err)
	}
	seqLen := *promptLen + *compLen
	mb := min(*micro, *batch)
	est := qwen3.EstimateMemory(cfg, mb, seqLen, *loraRank > 0)
	rep := grpoReport{Bench: "grpo", Model: mf.name(), Device: mf.device, Params: cfg.NumParams(), LoRARank: *loraRank,
		Batch: *batch, PromptLen: *promptLen, CompLen: *compLen, MicroBatch: *micro, EstimateB: est.Total(), Steps: *steps,
		PeakTFLOPS: *peak, PeakLabel: *peakLabel}
	loraNote := ""
	if *loraRank > 0 {
		loraNote = " (adapters counted at r16)"
	}
	fmt.Fprintf(stderr, "t2t bench grpo: %s, %.4gM parameters; memory estimate per micro-batch of %d × %d tokens%s: %s\n",
		rep.Model, float64(rep.Params)/1e6, mb, seqLen, loraNote, est)
	if err := mf.checkHostMemory(est.Total()); err != nil {
		return err
	}

	t0 := time.Now()
	m, err := mf.build(cfg, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	rep.Backend = backendName(m)
	cfg = m.Config()
	var loraParams int64
	if *loraRank > 0 {
		lc := qwen3.LoRAConfig{Rank: *loraRank, Alpha: float64(2 * *loraRank), Targets: qwen3.LoRATargets}
		if err := lc.Validate(); err != nil {
			return badInput("--lora-rank: %v", err)
		}
		if err := m.AddLoRA(lc, mf.seed); err != nil {
			return err
		}
		loraParams = cfg.LoRAParams(lc)
	}
	if err := m.SetTrainConfig(gcfg); err != nil {
		return badInput("%v", err)
	}
	rep.BuildSec = time.Since(t0).Seconds()
	rep.Trainable = cfg.NumParams()
	if loraParams > 0 {
		rep.Trainable = loraParams
	}

	sb, err := syntheticGRPOBatch(cfg.VocabSize, *batch, *promptLen, *compLen, mf.seed)
	if err != nil {
		return err
	}
	padRows, padT := gcfg.PaddedShape(mb, sb.T)
	rep.PaddedShape = [2]int{padRows, padT}
	var mem memSampler
	t0 = time.Now()
	if _, err := m.Step(engine.StepGRPO, sb); err != nil {
		return fmt.Errorf("warm-up step: %w", err)
	}
	rep.WarmupSec = time.Since(t0).Seconds()
	mem.sample()
	before, err := probeLogits(m)
	if err != nil {
		return err
	}
	var total time.Duration
	rep.StepMinSec = math.Inf(1)
	for range *steps {
		t := time.Now()
		st, err := m.Step(engine.StepGRPO, sb)
		if err != nil {
			return fmt.Errorf("step: %w", err)
		}
		d := time.Since(t)
		total += d
		rep.StepMinSec = min(rep.StepMinSec, d.Seconds())
		rep.Loss, rep.GradNorm = st.Loss, st.GradNorm
		mem.sample()
	}
	after, err := probeLogits(m)
	if err != nil {
		return err
	}
	for i := range before {
		rep.ParamDelta = max(rep.ParamDelta, math.Abs(float64(after[i])-float64(before[i])))
	}
	rep.StepSec = total.Seconds() / float64(*steps)
	tokens := float64(*batch * seqLen)
	rep.TokensPerSec = tokens / rep.StepSec
	rep.FLOPsPerStep = TrainFLOPsPerToken(cfg, seqLen, loraParams) * tokens
	rep.FLOPsFormula = "(6·N + 12·layers·heads·head_dim·(P+C))·B·(P+C), N = parameters but the input embedding (tied: counted once); LoRA: 4·N + 6·N_lora"
	rep.AchievedTF = rep.FLOPsPerStep / rep.StepSec / 1e12
	if *peak > 0 {
		rep.MFU = rep.AchievedTF / *peak
	}
	rep.Memory = mem.report(m)
	if math.IsNaN(rep.Loss) || math.IsInf(rep.Loss, 0) {
		return fmt.Errorf("the GRPO loss is %v", rep.Loss)
	}
	if mf.json {
		return json.NewEncoder(stdout).Encode(rep)
	}
	rows := [][2]string{
		{"model", fmt.Sprintf("%s (%d layers, hidden %d, %d/%d heads × %d, vocab %d)", rep.Model, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.VocabSize)},
		{"device", fmt.Sprintf("%s (backend %s)", rep.Device, rep.Backend)},
		{"parameters", fmt.Sprintf("%d (trainable %d)", rep.Params, rep.Trainable)},
		{"batch", fmt.Sprintf("%d × (%d prompt + %d completion) tokens, micro-batch %d, padded [%d, %d]", rep.Batch, rep.PromptLen, rep.CompLen, rep.MicroBatch, rep.PaddedShape[0], rep.PaddedShape[1])},
		{"build / warm-up", fmt.Sprintf("%.2f s / %.2f s", rep.BuildSec, rep.WarmupSec)},
		{"GRPO step", fmt.Sprintf("%.4f s mean, %.4f s min over %d steps", rep.StepSec, rep.StepMinSec, rep.Steps)},
		{"tokens/s", fmt.Sprintf("%.1f", rep.TokensPerSec)},
		{"model FLOPs/step", fmt.Sprintf("%.4g (%s)", rep.FLOPsPerStep, rep.FLOPsFormula)},
		{"achieved", fmt.Sprintf("%.4g TFLOP/s", rep.AchievedTF)},
	}
	if *peak > 0 {
		rows = append(rows, [2]string{"MFU", fmt.Sprintf("%.2f%% of %g TFLOPS %s", 100*rep.MFU, *peak, *peakLabel)})
	} else {
		rows = append(rows, [2]string{"MFU", "not computed (pass --peak-tflops)"})
	}
	rows = append(rows,
		[2]string{"loss / grad norm", fmt.Sprintf("%.6g / %.6g", rep.Loss, rep.GradNorm)},
		[2]string{"weights moved", fmt.Sprintf("max |Δlogit| %.3g on a probe sequence", rep.ParamDelta)},
	)
	rows = append(rows, memRows(rep.Memory, rep.EstimateB)...)
	return printRows(stdout, "t2t bench grpo", rows)
}

// syntheticGRPOBatch is a GRPO batch of random prompts and completions, built by the same
// qwen3.NewSeqBatch the text policy uses: behaviour log-probs near a uniform policy's
// (−ln V ± 0.1, so the ratios are near 1 and few positions clip) and advantages N(0, 1).
func syntheticGRPOBatch(vocab, batch, promptLen, compLen int, seed uint64) (*learner.SeqBatch, error) {
	rng := rand.New(rand.NewPCG(seed, 0xbe4c))
	ids := func(n int) []int32 {
		s := make([]int32, n)
		for i := range s {
			s[i] = int32(rng.IntN(vocab))
		}
		return s
	}
	uniform := -math.Log(float64(vocab))
	samples := make([]qwen3.Sample, batch)
	for i := range samples {
		lp := make([]float32, compLen)
		for j := range lp {
			lp[j] = float32(uniform + 0.1*rng.NormFloat64())
		}
		samples[i] = qwen3.Sample{Prompt: ids(promptLen), Completion: ids(compLen), LogProbs: lp, Advantage: float32(rng.NormFloat64())}
	}
	return qwen3.NewSeqBatch(samples)
}

// decodeReport is the result of t2t bench decode (its --json output).
type decodeReport struct {
	Bench        string       `json:"bench"` // "decode"
	Model        string       `json:"model"`
	Device       string       `json:"device"`
	Backend      string       `json:"backend"`
	Params       int64        `json:"params"`
	Batch        int          `json:"batch"`
	PromptLen    int          `json:"prompt_len"`
	NewTokens    int          `json:"new_tokens"`
	Temperature  float64      `json:"temperature"`
	EstimateB    int64        `json:"memory_estimate_bytes"` // float32 weights + KV cache
	BuildSec     float64      `json:"build_s"`
	WarmupSec    float64      `json:"warmup_s"`  // a short generation of the same shapes: compiling
	PrefillSec   float64      `json:"prefill_s"` // prompt pass and the first token (time to first token)
	DecodeSec    float64      `json:"decode_s"`  // the remaining new_tokens − 1 steps
	TotalSec     float64      `json:"total_s"`
	DecodeTokPS  float64      `json:"decode_tokens_per_s"` // batch·(new_tokens − 1) / decode_s
	PerTokenMS   float64      `json:"ms_per_decode_step"`  // decode_s / (new_tokens − 1), the whole batch
	PrefillTokPS float64      `json:"prefill_tokens_per_s"`
	Generated    int          `json:"generated_tokens"` // tokens returned (all rows run to new_tokens)
	Memory       memoryReport `json:"memory"`
}

func benchDecode(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t bench decode", "t2t bench decode [--preset P | --model DIR] [--device D] --batch B --prompt-len P --new-tokens T [flags]", stderr)
	var mf benchModelFlags
	mf.register(fs)
	mf.registerEngine(fs)
	batch := fs.Int("batch", 4, "sequences decoded together")
	promptLen := fs.Int("prompt-len", 64, "prompt tokens per sequence (random ids)")
	newTokens := fs.Int("new-tokens", 64, "tokens generated per sequence (no stop token: every row runs to the end); ≥ 2")
	temp := fs.Float64("temperature", 1, "sampling temperature (the policy samples at 1; 0: greedy)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	switch {
	case *batch < 1:
		return badInput("--batch %d: must be ≥ 1", *batch)
	case *promptLen < 1:
		return badInput("--prompt-len %d: must be ≥ 1", *promptLen)
	case *newTokens < 2:
		return badInput("--new-tokens %d: must be ≥ 2 (the first token comes from the prefill)", *newTokens)
	case math.IsNaN(*temp) || math.IsInf(*temp, 0) || *temp < 0:
		return badInput("--temperature %v: must be finite and ≥ 0", *temp)
	}
	cfg, err := mf.config()
	if err != nil {
		return err
	}
	if n := *promptLen + *newTokens; n > cfg.MaxPositionEmbeddings {
		return badInput("--prompt-len + --new-tokens = %d exceeds the model's %d positions", n, cfg.MaxPositionEmbeddings)
	}
	est := qwen3.EstimateMemory(cfg, *batch, *promptLen+*newTokens, false)
	rep := decodeReport{Bench: "decode", Model: mf.name(), Device: mf.device, Params: cfg.NumParams(), Batch: *batch,
		PromptLen: *promptLen, NewTokens: *newTokens, Temperature: *temp, EstimateB: est.Weights + est.KVCache}
	fmt.Fprintf(stderr, "t2t bench decode: %s, %.4gM parameters; memory estimate: weights %.2f GiB + KV cache %.2f GiB\n",
		rep.Model, float64(rep.Params)/1e6, float64(est.Weights)/(1<<30), float64(est.KVCache)/(1<<30))
	if err := mf.checkHostMemory(rep.EstimateB); err != nil {
		return err
	}
	t0 := time.Now()
	m, err := mf.build(cfg, stderr)
	if err != nil {
		return err
	}
	defer m.Close()
	rep.Backend = backendName(m)
	cfg = m.Config()
	rep.BuildSec = time.Since(t0).Seconds()

	rng := rand.New(rand.NewPCG(mf.seed, 0xdec0de))
	prompts := make([][]int32, *batch)
	for i := range prompts {
		prompts[i] = make([]int32, *promptLen)
		for j := range prompts[i] {
			prompts[i][j] = int32(rng.IntN(cfg.VocabSize))
		}
	}
	// No stop tokens: every row decodes all new tokens, whatever it samples.
	sc := qwen3.SampleConfig{MaxNewTokens: *newTokens, Temperature: *temp}
	// Warm-up: the fewest new tokens that run the same shapes (prefill and decode) compile every
	// graph the timed generation runs.
	warm := sc
	warm.MaxNewTokens = warmupTokens(*batch, *promptLen, *newTokens)
	var mem memSampler
	t0 = time.Now()
	if _, err := m.GenerateStream(prompts, warm, 0, rng, nil); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}
	rep.WarmupSec = time.Since(t0).Seconds()
	mem.sample()
	var first time.Time
	t0 = time.Now()
	gen, err := m.GenerateStream(prompts, sc, 0, rng, func(ev qwen3.TokenEvent) bool {
		if first.IsZero() {
			first = time.Now()
		}
		return false
	})
	if err != nil {
		return err
	}
	end := time.Now()
	mem.sample()
	for _, t := range gen.Tokens {
		rep.Generated += len(t)
	}
	if rep.Generated != *batch**newTokens {
		return fmt.Errorf("generated %d tokens, want %d × %d", rep.Generated, *batch, *newTokens)
	}
	rep.PrefillSec = first.Sub(t0).Seconds()
	rep.DecodeSec = end.Sub(first).Seconds()
	rep.TotalSec = end.Sub(t0).Seconds()
	steps := float64(*newTokens - 1)
	rep.DecodeTokPS = float64(*batch) * steps / rep.DecodeSec
	rep.PerTokenMS = 1000 * rep.DecodeSec / steps
	rep.PrefillTokPS = float64(*batch**promptLen) / rep.PrefillSec
	rep.Memory = mem.report(m)
	if mf.json {
		return json.NewEncoder(stdout).Encode(rep)
	}
	rows := [][2]string{
		{"model", fmt.Sprintf("%s (%d layers, hidden %d, %d/%d heads × %d, vocab %d)", rep.Model, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.VocabSize)},
		{"device", fmt.Sprintf("%s (backend %s)", rep.Device, rep.Backend)},
		{"batch", fmt.Sprintf("%d × %d prompt tokens, %d new tokens each, temperature %g, no stop token", rep.Batch, rep.PromptLen, rep.NewTokens, rep.Temperature)},
		{"build / warm-up", fmt.Sprintf("%.2f s / %.2f s", rep.BuildSec, rep.WarmupSec)},
		{"prefill (first token)", fmt.Sprintf("%.4f s (%.1f prompt tokens/s)", rep.PrefillSec, rep.PrefillTokPS)},
		{"decode", fmt.Sprintf("%.4f s for %d steps: %.2f ms/step", rep.DecodeSec, *newTokens-1, rep.PerTokenMS)},
		{"decode tokens/s", fmt.Sprintf("%.1f (batch × steps / decode time)", rep.DecodeTokPS)},
	}
	rows = append(rows, memRows(rep.Memory, rep.EstimateB)...)
	return printRows(stdout, "t2t bench decode", rows)
}

// warmupTokens is the fewest new tokens (at least 2, so that a decode step runs; at most
// newTokens ≥ 2) whose generation of batch prompts of promptLen tokens runs the same padded
// shapes (qwen3.GenerateShape) as one of newTokens, so it compiles the same prefill and decode
// graphs.
func warmupTokens(batch, promptLen, newTokens int) int {
	_, _, s := qwen3.GenerateShape(batch, promptLen, newTokens)
	w := 2
	for w < newTokens {
		if _, _, ws := qwen3.GenerateShape(batch, promptLen, w); ws == s {
			break
		}
		w++
	}
	return w
}

func memRows(m memoryReport, estimate int64) [][2]string {
	gib := func(b int64) string { return fmt.Sprintf("%.3f GiB", float64(b)/(1<<30)) }
	return [][2]string{
		{"memory estimate", gib(estimate)},
		{"host peak RSS", gib(m.HostPeakRSS)},
		{"Go runtime", fmt.Sprintf("%s obtained from the OS, heap peak %s", gib(m.GoSys), gib(m.GoHeapPeak))},
		{"device memory", m.Device},
	}
}

func printRows(w io.Writer, title string, rows [][2]string) error {
	fmt.Fprintln(w, title)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, r := range rows {
		fmt.Fprintf(tw, "  %s\t%s\n", r[0], r[1])
	}
	return tw.Flush()
}
