package hfmodel

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// ErrNeedsForce: Init was asked for a checkpoint too large to write without InitOptions.Force
// (see *LargeCheckpointError).
var ErrNeedsForce = errors.New("qwen3: checkpoint too large to write without Force")

// LargeCheckpointError refuses, without InitOptions.Force, a 4b-shape checkpoint and any shape
// whose float32 weights do not fit in the memory available (Available > 0: they are built in
// memory before they are written). It wraps ErrNeedsForce.
type LargeCheckpointError struct {
	Preset    string
	Bytes     int64 // float32 weights
	Available int64 // learner.MemAvailable when that was the reason, else 0
}

func (e *LargeCheckpointError) Error() string {
	if e.Available > 0 {
		return fmt.Sprintf("qwen3: the checkpoint is %.1f GiB of float32 weights, more than the %.1f GiB of memory available: set Force to write it anyway",
			float64(e.Bytes)/(1<<30), float64(e.Available)/(1<<30))
	}
	return fmt.Sprintf("qwen3: a %s checkpoint is %.1f GiB of float32 weights: set Force to write it", e.Preset, float64(e.Bytes)/(1<<30))
}

// Unwrap makes errors.Is(err, ErrNeedsForce) hold.
func (e *LargeCheckpointError) Unwrap() error { return ErrNeedsForce }

// InitOptions describe a random-weight checkpoint in the Hugging Face layout, as t2t model init
// writes it.
type InitOptions struct {
	// Preset is the architecture (PresetTiny, Preset06BShape or Preset4BShape) and Shape its
	// overrides.
	Preset string
	Shape  Shape
	// Seed seeds the weight initialisation (InitRandom).
	Seed uint64
	// TokenizerPath is a tokenizer.json to copy in, with the tokenizer_config.json beside it if
	// there is one; the vocabulary grows to fit it.
	TokenizerPath string
	// Tokenizer and TokenizerConfig, used when TokenizerPath is empty, are the contents of the
	// tokenizer.json and tokenizer_config.json to write (nil: none). With ExactVocab the
	// vocabulary becomes exactly the tokenizer's ids (no id the model can sample decodes to
	// nothing), else it grows to fit them.
	Tokenizer, TokenizerConfig []byte
	ExactVocab                 bool
	// Force allows writing a 4b-shape checkpoint (16 GB of float32 weights).
	Force bool
}

// Config returns the architecture o describes: the preset with its shape overrides and the
// vocabulary fitted to the tokenizer, validated. A bad preset or shape is Preset's or
// Shape.Apply's *fielderr.Error; a tokenizer that does not load is a *fielderr.Error
// naming "InitOptions.TokenizerPath" or "InitOptions.Tokenizer".
func (o InitOptions) Config() (Config, error) {
	cfg, err := Preset(o.Preset)
	if err != nil {
		return Config{}, err
	}
	if cfg, err = o.Shape.Apply(cfg); err != nil {
		return Config{}, err
	}
	var tok *tokenizer.Tokenizer
	switch {
	case o.TokenizerPath != "":
		if tok, err = tokenizer.Load(o.TokenizerPath); err != nil {
			return Config{}, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "InitOptions.TokenizerPath", Value: o.TokenizerPath, Reason: err.Error()}
		}
	case o.Tokenizer != nil:
		if tok, err = tokenizer.Parse(o.Tokenizer); err != nil {
			return Config{}, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "InitOptions.Tokenizer", Value: len(o.Tokenizer), Reason: err.Error()}
		}
	}
	switch {
	case tok == nil:
	case o.ExactVocab && o.TokenizerPath == "":
		cfg.VocabSize = tok.VocabSize()
	default:
		cfg.VocabSize = max(cfg.VocabSize, tok.VocabSize())
	}
	return cfg, nil
}

// Init writes the checkpoint o describes into dir (config.json, model.safetensors and the
// tokenizer files) and returns its configuration. planned, if not nil, gets the configuration
// before anything is written, to show it; a 4b-shape checkpoint without o.Force is then
// refused with a *LargeCheckpointError. Errors of o are those of Config.
func Init(dir string, o InitOptions, planned func(Config)) (Config, error) {
	cfg, err := o.Config()
	if err != nil {
		return Config{}, err
	}
	if planned != nil {
		planned(cfg)
	}
	if bytes := 4 * cfg.NumParams(); !o.Force {
		if o.Preset == Preset4BShape {
			return Config{}, &LargeCheckpointError{Preset: o.Preset, Bytes: bytes}
		}
		if avail := sysmem.MemAvailable(); avail > 0 && bytes > avail {
			return Config{}, &LargeCheckpointError{Preset: o.Preset, Bytes: bytes, Available: avail}
		}
	}
	written, err := WriteRandomCheckpoint(dir, cfg, o.Seed, o.TokenizerPath)
	if err != nil || o.TokenizerPath != "" {
		return written, err
	}
	for name, b := range map[string][]byte{"tokenizer.json": o.Tokenizer, "tokenizer_config.json": o.TokenizerConfig} {
		if b == nil {
			continue
		}
		if err := writeFileAtomic(filepath.Join(dir, name), func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		}); err != nil {
			return written, err
		}
	}
	return written, nil
}

// TokenizerConfigJSON is the tokenizer_config.json of a Qwen3 chat tokenizer
// (Qwen2TokenizerFast; <|im_end|> ends a turn, <|endoftext|> pads), for a tokenizer.json that
// comes without one, such as textpolicy's tiny tokenizer.
const TokenizerConfigJSON = `{
  "tokenizer_class": "Qwen2TokenizerFast",
  "eos_token": "<|im_end|>",
  "pad_token": "<|endoftext|>",
  "bos_token": null,
  "unk_token": null,
  "model_max_length": 40960,
  "clean_up_tokenization_spaces": false
}
`

// WritePlan writes, in two lines as t2t model init prints them before
// Init writes, the checkpoint cfg that o plans: the preset's shape, its
// parameters and float32 weight size, and the GRPO training memory
// estimate at micro-batch 8 × 2048 tokens.
func (o InitOptions) WritePlan(w io.Writer, cfg Config) error {
	name := "preset " + o.Preset
	if o.Shape != (Shape{}) { // the shape flags changed it: say so, the sizes are no longer the preset's
		name += ", reshaped"
	}
	_, err := fmt.Fprintf(w, "%s: %d layers, hidden %d, heads %d/%d × %d, intermediate %d, vocab %d: %.4gM parameters, %.2f GiB of float32 weights\n"+
		"training memory (GRPO, micro-batch 8 × 2048 tokens): %s\n",
		name, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.IntermediateSize, cfg.VocabSize,
		float64(cfg.NumParams())/1e6, float64(4*cfg.NumParams())/(1<<30), EstimateMemory(cfg, 8, 2048, false))
	return err
}
