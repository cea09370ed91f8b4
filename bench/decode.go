package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"time"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// DecodeOptions configure the decoding benchmark. DefaultDecodeOptions gives the defaults
// named per field; Validate names the first field out of bounds.
type DecodeOptions struct {
	// Batch is the number of sequences decoded together. Default 4; must be ≥ 1.
	Batch int
	// PromptLen is the prompt tokens per sequence (random ids). Default 64; must be ≥ 1.
	PromptLen int
	// NewTokens is the tokens generated per sequence (no stop token: every row runs to the
	// end). Default 64; must be ≥ 2 (the first comes from the prefill), and with PromptLen fit
	// the model's positions.
	NewTokens int
	// Temperature is the sampling temperature (the policy samples at 1; 0: greedy). Default 1;
	// must be finite and ≥ 0.
	Temperature float64
	// Seed seeds the prompts and the sampling. Default 1.
	Seed uint64
	// Concurrency, when ≥ 1, runs that many independent requests of Batch rows at once through
	// one engine.Scheduler (a KV pool of Concurrency·Batch slots) and reports their total
	// tokens/s; 0 (the default) times one direct generation of Batch rows. Must be ≥ 0.
	Concurrency int
}

// DefaultDecodeOptions returns the documented defaults.
func DefaultDecodeOptions() DecodeOptions {
	return DecodeOptions{Batch: 4, PromptLen: 64, NewTokens: 64, Temperature: 1, Seed: 1}
}

// Validate returns a *fielderr.Error naming the first field out of bounds, as
// "DecodeOptions.<Field>".
func (o DecodeOptions) Validate() error {
	bad := func(field string, v any, reason string) error { return optionError("DecodeOptions", field, v, reason) }
	switch {
	case o.Batch < 1:
		return bad("Batch", o.Batch, "must be ≥ 1")
	case o.PromptLen < 1:
		return bad("PromptLen", o.PromptLen, "must be ≥ 1")
	case o.NewTokens < 2:
		return bad("NewTokens", o.NewTokens, "must be ≥ 2 (the first token comes from the prefill)")
	case math.IsNaN(o.Temperature) || math.IsInf(o.Temperature, 0) || o.Temperature < 0:
		return bad("Temperature", o.Temperature, "must be finite and ≥ 0")
	case o.Concurrency < 0:
		return bad("Concurrency", o.Concurrency, "must be ≥ 0")
	}
	return nil
}

// fits checks the sequences against the model's positions.
func (o DecodeOptions) fits(cfg hfmodel.Config) error {
	if n := o.PromptLen + o.NewTokens; n > cfg.MaxPositionEmbeddings {
		return optionError("DecodeOptions", "PromptLen+NewTokens", n, fmt.Sprintf("exceeds the model's %d positions", cfg.MaxPositionEmbeddings))
	}
	return nil
}

// estimate is the memory of the float32 weights and the KV cache.
func (o DecodeOptions) estimate(cfg hfmodel.Config) hfmodel.MemoryEstimate {
	return hfmodel.EstimateMemory(cfg, o.Batch*max(o.Concurrency, 1), o.PromptLen+o.NewTokens, false)
}

// DecodeReport is the result of the decoding benchmark (the --json output of t2t bench decode).
type DecodeReport struct {
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
	Memory       MemoryReport `json:"memory"`
	// With Concurrency ≥ 1 (the scheduler path) the prefill/decode split above is not measured;
	// these are.
	Concurrency int              `json:"concurrency,omitempty"`
	Sched       *SchedulerReport `json:"scheduler,omitempty"`
	// Config is the model's architecture (shown by WriteText, not in the JSON).
	Config hfmodel.Config `json:"-"`
}

// RunDecode resolves s.Source, checks o against it, logs the memory estimate, refuses a CPU
// run that does not fit (*MemoryError), builds the model and runs Decode on it.
func RunDecode(ctx context.Context, s Setup, o DecodeOptions) (*DecodeReport, error) {
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
	est := o.estimate(cfg)
	s.logf("%s, %.4gM parameters; memory estimate: weights %.2f GiB + KV cache %.2f GiB",
		s.Source.Name(), float64(cfg.NumParams())/1e6, float64(est.Weights)/(1<<30), float64(est.KVCache)/(1<<30))
	m, open, err := s.open(ctx, cfg, est.Weights+est.KVCache)
	if err != nil {
		return nil, err
	}
	defer m.Close()
	rep, err := Decode(m, o)
	if err != nil {
		return nil, err
	}
	rep.Model, rep.Device, rep.BuildSec = s.Source.Name(), s.Engine.Device, open.Seconds()
	return rep, nil
}

// Decode times a batched KV-cache generation of o.NewTokens tokens from o.Batch random prompts
// on m, after a warm-up generation of the same padded shapes (qwen3.WarmupTokens): the prefill
// (time to the first token), the decode steps, tokens/s and memory. The report's Model, Device
// and BuildSec are left empty (RunDecode fills them).
func Decode(m engine.Model, o DecodeOptions) (*DecodeReport, error) {
	if err := o.Validate(); err != nil {
		return nil, err
	}
	cfg := m.Config()
	if err := o.fits(cfg); err != nil {
		return nil, err
	}
	est := o.estimate(cfg)
	rep := &DecodeReport{Bench: "decode", Backend: backendName(m), Params: cfg.NumParams(), Batch: o.Batch, PromptLen: o.PromptLen,
		NewTokens: o.NewTokens, Temperature: o.Temperature, EstimateB: est.Weights + est.KVCache, Config: cfg}
	rng := rand.New(rand.NewPCG(o.Seed, 0xdec0de))
	if o.Concurrency > 0 {
		rep.Concurrency = o.Concurrency
		return decodeConcurrent(m, o, rng, rep)
	}
	prompts := make([][]int32, o.Batch)
	for i := range prompts {
		prompts[i] = make([]int32, o.PromptLen)
		for j := range prompts[i] {
			prompts[i][j] = int32(rng.IntN(cfg.VocabSize))
		}
	}
	// No stop tokens: every row decodes all new tokens, whatever it samples.
	sc := engine.SampleConfig{MaxNewTokens: o.NewTokens, Temperature: o.Temperature}
	// Warm-up: the fewest new tokens that run the same shapes (prefill and decode) compile every
	// graph the timed generation runs.
	warm := sc
	warm.MaxNewTokens = hfmodel.WarmupTokens(o.Batch, o.PromptLen, o.NewTokens)
	var mem memSampler
	t0 := time.Now()
	if _, err := m.GenerateStream(prompts, warm, 0, rng, nil); err != nil {
		return nil, fmt.Errorf("warm-up: %w", err)
	}
	rep.WarmupSec = time.Since(t0).Seconds()
	mem.sample()
	if err := timeDecode(m, prompts, sc, rng, rep); err != nil {
		return nil, err
	}
	mem.sample()
	rep.Memory = mem.report(m)
	return rep, nil
}

// timeDecode runs the timed generation and fills the report's timings and rates.
func timeDecode(m engine.Model, prompts [][]int32, sc engine.SampleConfig, rng *rand.Rand, rep *DecodeReport) error {
	var first time.Time
	t0 := time.Now()
	gen, err := m.GenerateStream(prompts, sc, 0, rng, func(engine.TokenEvent) bool {
		if first.IsZero() {
			first = time.Now()
		}
		return false
	})
	if err != nil {
		return err
	}
	end := time.Now()
	for _, t := range gen.Tokens {
		rep.Generated += len(t)
	}
	if rep.Generated != rep.Batch*rep.NewTokens {
		return fmt.Errorf("generated %d tokens, want %d × %d", rep.Generated, rep.Batch, rep.NewTokens)
	}
	rep.PrefillSec = first.Sub(t0).Seconds()
	rep.DecodeSec = end.Sub(first).Seconds()
	rep.TotalSec = end.Sub(t0).Seconds()
	steps := float64(rep.NewTokens - 1)
	rep.DecodeTokPS = float64(rep.Batch) * steps / rep.DecodeSec
	rep.PerTokenMS = 1000 * rep.DecodeSec / steps
	rep.PrefillTokPS = float64(rep.Batch*rep.PromptLen) / rep.PrefillSec
	return nil
}

// WriteText writes the report as the table t2t bench decode prints, under title.
func (r *DecodeReport) WriteText(w io.Writer, title string) error {
	if r.Sched != nil {
		return r.writeConcurrent(w, title)
	}
	rows := [][2]string{
		modelRow(r.Model, r.Config),
		{"device", fmt.Sprintf("%s (backend %s)", r.Device, r.Backend)},
		{"batch", fmt.Sprintf("%d × %d prompt tokens, %d new tokens each, temperature %g, no stop token", r.Batch, r.PromptLen, r.NewTokens, r.Temperature)},
		{"build / warm-up", fmt.Sprintf("%.2f s / %.2f s", r.BuildSec, r.WarmupSec)},
		{"prefill (first token)", fmt.Sprintf("%.4f s (%.1f prompt tokens/s)", r.PrefillSec, r.PrefillTokPS)},
		{"decode", fmt.Sprintf("%.4f s for %d steps: %.2f ms/step", r.DecodeSec, r.NewTokens-1, r.PerTokenMS)},
		{"decode tokens/s", fmt.Sprintf("%.1f (batch × steps / decode time)", r.DecodeTokPS)},
	}
	rows = append(rows, memRows(r.Memory, r.EstimateB)...)
	return printRows(w, title, rows)
}
