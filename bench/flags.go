package bench

import (
	"flag"
	"fmt"

	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Register binds s to the model flags of `t2t bench grpo|decode`: --preset (default
// qwen3.PresetTiny), --model, --seed (default 1) and the --preset shape overrides.
func (s *Source) Register(fs *flag.FlagSet) {
	fs.StringVar(&s.Preset, "preset", hfmodel.PresetTiny, "random-weight model of a preset shape: tiny, 0.6b-shape or 4b-shape (built in memory, nothing written)")
	fs.StringVar(&s.Dir, "model", "", "a checkpoint directory instead of --preset")
	fs.Uint64Var(&s.Seed, "seed", 1, "seed of the random weights and the synthetic batch")
	sh := &s.Shape
	fs.IntVar(&sh.Layers, "layers", 0, "--preset: decoder layers (0: the preset's)")
	fs.IntVar(&sh.Hidden, "hidden", 0, "--preset: hidden size (0: the preset's)")
	fs.IntVar(&sh.Intermediate, "intermediate", 0, "--preset: MLP intermediate size (0: the preset's)")
	fs.IntVar(&sh.Heads, "heads", 0, "--preset: query heads; head_dim = hidden / heads (0: the preset's)")
	fs.IntVar(&sh.KVHeads, "kv-heads", 0, "--preset: key-value heads (0: the preset's, or --heads/2 with --heads)")
	fs.IntVar(&sh.Vocab, "vocab", 0, fmt.Sprintf("--preset: vocabulary size (0: the preset's; tiny: %d, the tiny tokenizer's, as t2t model init writes it)", textpolicy.DefaultTinyVocab))
}

// Register binds o to the flags of `t2t bench grpo`, o's values being the defaults (start
// from DefaultGRPOOptions). Seed is not a flag of its own: it is the model's --seed.
func (o *GRPOOptions) Register(fs *flag.FlagSet) {
	fs.IntVar(&o.Batch, "batch", o.Batch, "sequences per GRPO step")
	fs.IntVar(&o.PromptLen, "prompt-len", o.PromptLen, "prompt tokens per sequence")
	fs.IntVar(&o.CompletionLen, "completion-len", o.CompletionLen, "completion (trained) tokens per sequence")
	fs.IntVar(&o.MicroBatch, "micro-batch", o.MicroBatch, "rows per forward/backward pass (gradients accumulate over micro-batches); the text policy's default")
	fs.IntVar(&o.LoRARank, "lora-rank", o.LoRARank, "train LoRA adapters of this rank (α = 2·rank, all seven projections) instead of all weights; 0: full fine-tuning")
	fs.IntVar(&o.Steps, "steps", o.Steps, "timed GRPO steps after one warm-up step")
	fs.Float64Var(&o.PeakTFLOPS, "peak-tflops", o.PeakTFLOPS, "the device's peak FLOP/s in TFLOPS for MFU (0: no MFU)")
	fs.StringVar(&o.PeakLabel, "peak-label", o.PeakLabel, "what --peak-tflops is, for the report (e.g. \"H200 bf16 dense\")")
	fs.Float64Var(&o.LR, "lr", o.LR, "AdamW learning rate")
}

// Register binds o to the flags of `t2t bench decode`, o's values being the defaults (start
// from DefaultDecodeOptions). Seed is not a flag of its own: it is the model's --seed.
func (o *DecodeOptions) Register(fs *flag.FlagSet) {
	fs.IntVar(&o.Batch, "batch", o.Batch, "sequences decoded together")
	fs.IntVar(&o.PromptLen, "prompt-len", o.PromptLen, "prompt tokens per sequence (random ids)")
	fs.IntVar(&o.NewTokens, "new-tokens", o.NewTokens, "tokens generated per sequence (no stop token: every row runs to the end); ≥ 2")
	fs.Float64Var(&o.Temperature, "temperature", o.Temperature, "sampling temperature (the policy samples at 1; 0: greedy)")
	fs.IntVar(&o.Concurrency, "concurrency", o.Concurrency, "independent requests of --batch rows each, run at once through one continuous-batching scheduler (0: one direct generation, no scheduler)")
}
