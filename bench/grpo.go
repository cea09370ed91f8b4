package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// GRPOOptions configure the GRPO benchmark. DefaultGRPOOptions gives the defaults named per
// field; Validate names the first field out of bounds.
type GRPOOptions struct {
	// Batch is the number of sequences per GRPO step. Default 8; must be ≥ 1.
	Batch int
	// PromptLen and CompletionLen are the prompt and completion (trained) tokens per sequence.
	// Default 64 each; must be ≥ 1, and together fit the model's positions.
	PromptLen, CompletionLen int
	// MicroBatch is the rows per forward/backward pass (gradients accumulate over
	// micro-batches). Default: the text policy's; must be ≥ 1.
	MicroBatch int
	// LoRARank trains LoRA adapters of this rank (α = 2·rank, all seven projections) instead of
	// all weights. Default 0 (full fine-tuning); must be ≥ 0.
	LoRARank int
	// Steps is the number of timed steps after one warm-up step. Default 3; must be ≥ 1.
	Steps int
	// LR is the AdamW learning rate. Default: the text policy's; learner.GRPOConfig bounds it.
	LR float64
	// PeakTFLOPS is the device's peak FLOP/s in TFLOPS, for the MFU; PeakLabel says what it is
	// (e.g. "H200 bf16 dense"). Default 0: no MFU; must be finite and ≥ 0.
	PeakTFLOPS float64
	PeakLabel  string
	// Seed seeds the synthetic batch and the LoRA adapters. Default 1.
	Seed uint64
}

// DefaultGRPOOptions returns the documented defaults.
func DefaultGRPOOptions() GRPOOptions {
	g := textpolicy.DefaultOptions().GRPO
	return GRPOOptions{Batch: 8, PromptLen: 64, CompletionLen: 64, MicroBatch: g.MicroBatch, Steps: 3, LR: g.LR, Seed: 1}
}

// Validate returns a *fielderr.Error naming the first field out of bounds (as
// "GRPOOptions.<Field>", or the learner.GRPOConfig field that LR or MicroBatch breaks).
func (o GRPOOptions) Validate() error {
	bad := func(field string, v any, reason string) error { return optionError("GRPOOptions", field, v, reason) }
	switch {
	case o.Batch < 1:
		return bad("Batch", o.Batch, "must be ≥ 1")
	case o.PromptLen < 1:
		return bad("PromptLen", o.PromptLen, "must be ≥ 1")
	case o.CompletionLen < 1:
		return bad("CompletionLen", o.CompletionLen, "must be ≥ 1")
	case o.MicroBatch < 1:
		return bad("MicroBatch", o.MicroBatch, "must be ≥ 1")
	case o.LoRARank < 0:
		return bad("LoRARank", o.LoRARank, "must be ≥ 0")
	case o.Steps < 1:
		return bad("Steps", o.Steps, "must be ≥ 1")
	case math.IsNaN(o.PeakTFLOPS) || math.IsInf(o.PeakTFLOPS, 0) || o.PeakTFLOPS < 0:
		return bad("PeakTFLOPS", o.PeakTFLOPS, "must be ≥ 0")
	}
	if o.LoRARank > 0 {
		if err := o.lora().Validate(); err != nil {
			return err
		}
	}
	return o.trainConfig().Validate()
}

// fits checks the sequences against the model's positions.
func (o GRPOOptions) fits(cfg hfmodel.Config) error {
	if n := o.PromptLen + o.CompletionLen; n > cfg.MaxPositionEmbeddings {
		return optionError("GRPOOptions", "PromptLen+CompletionLen", n, fmt.Sprintf("exceeds the model's %d positions", cfg.MaxPositionEmbeddings))
	}
	return nil
}

// trainConfig is the text policy's GRPO configuration with MicroBatch and LR.
func (o GRPOOptions) trainConfig() learner.GRPOConfig {
	g := textpolicy.DefaultOptions().GRPO
	g.MicroBatch, g.LR = o.MicroBatch, o.LR
	return g
}

func (o GRPOOptions) lora() hfmodel.LoRAConfig {
	return hfmodel.LoRAConfig{Rank: o.LoRARank, Alpha: float64(2 * o.LoRARank), Targets: hfmodel.LoRATargets}
}

// estimate is the memory of one micro-batch.
func (o GRPOOptions) estimate(cfg hfmodel.Config, layout hfmodel.TrainLayout) hfmodel.MemoryEstimate {
	return hfmodel.EstimateTrainMemory(cfg, min(o.MicroBatch, o.Batch), o.PromptLen+o.CompletionLen, o.lora(), layout)
}

// GRPOFLOPsFormula is GRPOReport.FLOPsFormula: qwen3.Config.TrainFLOPsPerToken over a step's
// tokens.
const GRPOFLOPsFormula = "(6·N + 12·layers·heads·head_dim·(P+C))·B·(P+C), N = parameters but the input embedding (tied: counted once); LoRA: 4·N + 6·N_lora"

// GRPOReport is the result of the GRPO benchmark (the --json output of t2t bench grpo).
type GRPOReport struct {
	Bench      string `json:"bench"` // "grpo"
	Model      string `json:"model"`
	Device     string `json:"device"`
	Backend    string `json:"backend"`
	Params     int64  `json:"params"`
	Trainable  int64  `json:"trainable_params"`
	LoRARank   int    `json:"lora_rank,omitempty"`
	Batch      int    `json:"batch"`
	PromptLen  int    `json:"prompt_len"`
	CompLen    int    `json:"completion_len"`
	MicroBatch int    `json:"micro_batch"`
	// ActivationCheckpointing: the torch worker ran each decoder layer again in the backward
	// pass (engine.Spec.ActivationCheckpointing).
	ActivationCheckpointing bool    `json:"activation_checkpointing,omitempty"`
	PaddedShape             [2]int  `json:"padded_shape"` // [rows, T] of one micro-batch after bucketing
	EstimateB               int64   `json:"memory_estimate_bytes"`
	BuildSec                float64 `json:"build_s"`  // building (or loading) the model
	WarmupSec               float64 `json:"warmup_s"` // the first step: compiling and running
	Steps                   int     `json:"steps"`
	StepSec                 float64 `json:"step_s"`       // mean over the timed steps
	StepMinSec              float64 `json:"step_min_s"`   // fastest timed step
	TokensPerSec            float64 `json:"tokens_per_s"` // batch·(prompt+completion) / step_s
	FLOPsPerStep            float64 `json:"model_flops_per_step"`
	FLOPsFormula            string  `json:"flops_formula"`
	AchievedTF              float64 `json:"achieved_tflops"`
	PeakTFLOPS              float64 `json:"peak_tflops,omitempty"`
	PeakLabel               string  `json:"peak_label,omitempty"`
	MFU                     float64 `json:"mfu,omitempty"`
	Loss                    float64 `json:"loss"`
	GradNorm                float64 `json:"grad_norm"`
	// ParamDelta is the largest |change| of the logits of a fixed probe sequence over the timed
	// steps: non-zero means the steps were applied.
	ParamDelta float64      `json:"probe_logit_max_abs_change"`
	Memory     MemoryReport `json:"memory"`
	// Config is the model's architecture (shown by WriteText, not in the JSON).
	Config hfmodel.Config `json:"-"`
}

// RunGRPO resolves s.Source, checks o against it, logs the memory estimate, refuses a CPU run
// that does not fit (*MemoryError), builds the model and runs GRPO on it. BuildSec counts the
// build too.
func RunGRPO(ctx context.Context, s Setup, o GRPOOptions) (*GRPOReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg, err := s.Source.Config()
	if err != nil {
		return nil, err
	}
	if err := o.fits(cfg); err != nil {
		return nil, err
	}
	est := o.estimate(cfg, s.Engine.TrainLayout())
	note := ""
	if o.LoRARank > 0 {
		note = fmt.Sprintf(" (LoRA r%d adapters)", o.LoRARank)
	}
	s.logf("%s, %.4gM parameters; memory estimate per micro-batch of %d × %d tokens%s: %s",
		s.Source.Name(), float64(cfg.NumParams())/1e6, min(o.MicroBatch, o.Batch), o.PromptLen+o.CompletionLen, note, est)
	m, open, err := s.open(ctx, cfg, est.Total())
	if err != nil {
		return nil, err
	}
	defer m.Close()
	rep, err := GRPO(m, o)
	if err != nil {
		return nil, err
	}
	rep.Model, rep.Device = s.Source.Name(), s.Engine.Device
	rep.ActivationCheckpointing = s.Engine.ActivationCheckpointing
	rep.BuildSec += open.Seconds()
	return rep, nil
}

// GRPO times o.Steps GRPO steps of m, after one warm-up step, on a synthetic batch: tokens/s,
// model FLOPs (qwen3.Config.TrainFLOPsPerToken), MFU against o.PeakTFLOPS, memory, and the
// change of a probe's logits, which shows that the steps moved the weights. It first attaches
// LoRA adapters (o.LoRARank > 0) and sets the training configuration (BuildSec). The report's
// Model and Device are left empty (RunGRPO fills them).
func GRPO(m engine.Model, o GRPOOptions) (*GRPOReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg := m.Config()
	if err := o.fits(cfg); err != nil {
		return nil, err
	}
	rep := &GRPOReport{Bench: "grpo", Backend: backendName(m), Params: cfg.NumParams(), Trainable: cfg.NumParams(), LoRARank: o.LoRARank,
		Batch: o.Batch, PromptLen: o.PromptLen, CompLen: o.CompletionLen, MicroBatch: o.MicroBatch,
		Steps: o.Steps, PeakTFLOPS: o.PeakTFLOPS, PeakLabel: o.PeakLabel, FLOPsFormula: GRPOFLOPsFormula, Config: cfg}
	t0 := time.Now()
	var loraParams int64
	if o.LoRARank > 0 {
		if err := m.AddLoRA(o.lora(), o.Seed); err != nil {
			return nil, err
		}
		loraParams = cfg.LoRAParams(o.lora())
		rep.Trainable = loraParams
	}
	rep.EstimateB = m.Memory(min(o.MicroBatch, o.Batch), o.PromptLen+o.CompletionLen).Total() // the engine's layout
	gcfg := o.trainConfig()
	if err := m.SetTrainConfig(gcfg); err != nil {
		return nil, err
	}
	rep.BuildSec = time.Since(t0).Seconds()
	sb, err := syntheticGRPOBatch(cfg.VocabSize, o.Batch, o.PromptLen, o.CompletionLen, o.Seed)
	if err != nil {
		return nil, err
	}
	padRows, padT := gcfg.PaddedShape(min(o.MicroBatch, o.Batch), sb.T)
	rep.PaddedShape = [2]int{padRows, padT}
	var mem memSampler
	if err := timeGRPO(m, sb, o.Steps, rep, &mem); err != nil {
		return nil, err
	}
	seqLen := o.PromptLen + o.CompletionLen
	tokens := float64(o.Batch * seqLen)
	rep.TokensPerSec = tokens / rep.StepSec
	rep.FLOPsPerStep = cfg.TrainFLOPsPerToken(seqLen, loraParams) * tokens
	rep.AchievedTF = rep.FLOPsPerStep / rep.StepSec / 1e12
	if o.PeakTFLOPS > 0 {
		rep.MFU = rep.AchievedTF / o.PeakTFLOPS
	}
	rep.Memory = mem.report(m)
	if math.IsNaN(rep.Loss) || math.IsInf(rep.Loss, 0) {
		return nil, fmt.Errorf("the GRPO loss is %v", rep.Loss)
	}
	return rep, nil
}

// timeGRPO runs the warm-up step and the timed steps, filling the report's timings, loss,
// gradient norm and probe change.
func timeGRPO(m engine.Model, sb *learner.SeqBatch, steps int, rep *GRPOReport, mem *memSampler) error {
	t0 := time.Now()
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
	for range steps {
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
	rep.StepSec = total.Seconds() / float64(steps)
	return nil
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
	samples := make([]engine.Sample, batch)
	for i := range samples {
		lp := make([]float32, compLen)
		for j := range lp {
			lp[j] = float32(uniform + 0.1*rng.NormFloat64())
		}
		samples[i] = engine.Sample{Prompt: ids(promptLen), Completion: ids(compLen), LogProbs: lp, Advantage: float32(rng.NormFloat64())}
	}
	return engine.NewSeqBatch(samples)
}

// WriteText writes the report as the table t2t bench grpo prints, under title.
func (r *GRPOReport) WriteText(w io.Writer, title string) error {
	rows := [][2]string{
		modelRow(r.Model, r.Config),
		{"device", fmt.Sprintf("%s (backend %s)", r.Device, r.Backend)},
		{"parameters", fmt.Sprintf("%d (trainable %d)", r.Params, r.Trainable)},
		{"batch", fmt.Sprintf("%d × (%d prompt + %d completion) tokens, micro-batch %d, padded [%d, %d]%s", r.Batch, r.PromptLen, r.CompLen, r.MicroBatch, r.PaddedShape[0], r.PaddedShape[1],
			map[bool]string{true: ", activation checkpointing"}[r.ActivationCheckpointing])},
		{"build / warm-up", fmt.Sprintf("%.2f s / %.2f s", r.BuildSec, r.WarmupSec)},
		{"GRPO step", fmt.Sprintf("%.4f s mean, %.4f s min over %d steps", r.StepSec, r.StepMinSec, r.Steps)},
		{"tokens/s", fmt.Sprintf("%.1f", r.TokensPerSec)},
		{"model FLOPs/step", fmt.Sprintf("%.4g (%s)", r.FLOPsPerStep, r.FLOPsFormula)},
		{"achieved", fmt.Sprintf("%.4g TFLOP/s", r.AchievedTF)},
	}
	if r.PeakTFLOPS > 0 {
		rows = append(rows, [2]string{"MFU", fmt.Sprintf("%.2f%% of %g TFLOPS %s", 100*r.MFU, r.PeakTFLOPS, r.PeakLabel)})
	} else {
		rows = append(rows, [2]string{"MFU", "not computed (pass --peak-tflops)"})
	}
	rows = append(rows,
		[2]string{"loss / grad norm", fmt.Sprintf("%.6g / %.6g", r.Loss, r.GradNorm)},
		[2]string{"weights moved", fmt.Sprintf("max |Δlogit| %.3g on a probe sequence", r.ParamDelta)},
	)
	rows = append(rows, memRows(r.Memory, r.EstimateB)...)
	return printRows(w, title, rows)
}
