package hfmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"slices"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/learner"
)

// ConfigFile is the name of a model directory's configuration.
const ConfigFile = "config.json"

// Config is the architecture of a Qwen3 model: the fields of a Hugging Face config.json that
// the model uses. Other fields of a loaded config.json are kept and written back by Save.
type Config struct {
	HiddenSize            int     `json:"hidden_size"`
	NumHiddenLayers       int     `json:"num_hidden_layers"`
	NumAttentionHeads     int     `json:"num_attention_heads"`
	NumKeyValueHeads      int     `json:"num_key_value_heads"`
	HeadDim               int     `json:"head_dim"`
	IntermediateSize      int     `json:"intermediate_size"`
	VocabSize             int     `json:"vocab_size"`
	RopeTheta             float64 `json:"rope_theta"`
	RMSNormEps            float64 `json:"rms_norm_eps"`
	TieWordEmbeddings     bool    `json:"tie_word_embeddings"`
	MaxPositionEmbeddings int     `json:"max_position_embeddings"`
	// TorchDType is the dtype the checkpoint's weights were saved in ("bfloat16", "float32",
	// "float16"); the model computes in float32 whatever it is.
	TorchDType string `json:"torch_dtype"`

	// raw holds every field of the config.json this was loaded from.
	raw map[string]json.RawMessage
}

// Preset names accepted by Preset.
const (
	PresetTiny      = "tiny"
	Preset06BShape  = "0.6b-shape"
	Preset4BShape   = "4b-shape"
	tinyVocabSize   = 512
	qwenVocabSize   = 151936
	qwenMaxPosition = 40960
)

// Preset returns a named configuration:
//
//   - "tiny": 2 layers, hidden 64, 4 query / 2 key-value heads of 16, intermediate 128, vocab
//     512 (set VocabSize to a tokenizer's VocabSize to use a real tokenizer), θ 1e6, tied.
//     `t2t model init --preset tiny` and `t2t bench --preset tiny` set it to the tiny
//     tokenizer's 1,228 ids (textpolicy.DefaultTinyVocab), so the CLI's tiny model is one shape.
//   - "0.6b-shape": Qwen3-0.6B's shape (28 layers, hidden 1024, 16/8 heads of 128, intermediate
//     3072, vocab 151936, tied).
//   - "4b-shape": Qwen3-4B's shape (36 layers, hidden 2560, 32/8 heads of 128, intermediate
//     9728, vocab 151936, tied).
//
// All use RoPE θ = 1e6, RMSNorm ε = 1e-6 and 40960 positions. The -shape presets are for
// random weights and memory planning: real weights come from a checkpoint directory.
func Preset(name string) (Config, error) {
	c := Config{RopeTheta: 1e6, RMSNormEps: 1e-6, TieWordEmbeddings: true, MaxPositionEmbeddings: qwenMaxPosition, TorchDType: "bfloat16"}
	switch name {
	case PresetTiny:
		c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim = 2, 64, 4, 2, 16
		c.IntermediateSize, c.VocabSize, c.TorchDType = 128, tinyVocabSize, "float32"
	case Preset06BShape:
		c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim = 28, 1024, 16, 8, 128
		c.IntermediateSize, c.VocabSize = 3072, qwenVocabSize
	case Preset4BShape:
		c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim = 36, 2560, 32, 8, 128
		c.IntermediateSize, c.VocabSize = 9728, qwenVocabSize
	default:
		return Config{}, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "preset", Value: name, Reason: fmt.Sprintf("want one of %q, %q, %q", PresetTiny, Preset06BShape, Preset4BShape)}
	}
	return c, nil
}

// Validate returns a *fielderr.Error (wrapping learner.ErrInvalidConfig) naming the first
// bad field by its config.json name.
func (c Config) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: field, Value: v, Reason: reason}
	}
	finite := func(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }
	switch {
	case c.HiddenSize < 1:
		return bad("hidden_size", c.HiddenSize, "must be ≥ 1")
	case c.NumHiddenLayers < 1:
		return bad("num_hidden_layers", c.NumHiddenLayers, "must be ≥ 1")
	case c.NumAttentionHeads < 1:
		return bad("num_attention_heads", c.NumAttentionHeads, "must be ≥ 1")
	case c.NumKeyValueHeads < 1 || c.NumAttentionHeads%c.NumKeyValueHeads != 0:
		return bad("num_key_value_heads", c.NumKeyValueHeads, fmt.Sprintf("must be ≥ 1 and divide num_attention_heads=%d", c.NumAttentionHeads))
	case c.HeadDim < 2 || c.HeadDim%2 != 0:
		return bad("head_dim", c.HeadDim, "must be even and ≥ 2 (RoPE rotates pairs)")
	case c.IntermediateSize < 1:
		return bad("intermediate_size", c.IntermediateSize, "must be ≥ 1")
	case c.VocabSize < 1 || c.VocabSize > math.MaxInt32:
		return bad("vocab_size", c.VocabSize, "must be in [1, 2³¹)")
	case !finite(c.RopeTheta) || c.RopeTheta <= 1:
		return bad("rope_theta", c.RopeTheta, "must be finite and > 1")
	case !finite(c.RMSNormEps) || c.RMSNormEps <= 0 || c.RMSNormEps >= 1:
		return bad("rms_norm_eps", c.RMSNormEps, "must be in (0, 1)")
	case c.MaxPositionEmbeddings < 1:
		return bad("max_position_embeddings", c.MaxPositionEmbeddings, "must be ≥ 1")
	case paramCount[float64](c) > maxParams:
		return bad("shape", fmt.Sprintf("%.3g parameters", paramCount[float64](c)), fmt.Sprintf("must be at most %g parameters (hidden_size, intermediate_size, layers, heads or vocab_size too large)", float64(maxParams)))
	case !slices.Contains([]string{"", "float32", "bfloat16", "float16"}, c.TorchDType):
		return bad("torch_dtype", c.TorchDType, `must be "float32", "bfloat16" or "float16"`)
	}
	return nil
}

// maxParams bounds a shape's parameter count, 16 times the largest open
// models (about 1e12 parameters): NumParams and the memory estimates built
// on it are exact int64 products below it.
const maxParams = 1 << 44

// paramCount counts c's parameters in T: int64 for NumParams, float64
// (which cannot overflow) to check the shape against maxParams.
func paramCount[T int64 | float64](c Config) T {
	h, d := T(c.HiddenSize), T(c.HeadDim)
	q, kv := T(c.NumAttentionHeads)*d, T(c.NumKeyValueHeads)*d
	perLayer := 2*h + h*q + 2*h*kv + q*h + 2*d + 3*h*T(c.IntermediateSize)
	n := T(c.NumHiddenLayers)*perLayer + h + T(c.VocabSize)*h
	if !c.TieWordEmbeddings {
		n += T(c.VocabSize) * h
	}
	return n
}

// NumParams is the number of parameters (the embedding counted once when tied).
func (c Config) NumParams() int64 { return paramCount[int64](c) }

// LoadConfig reads dir/config.json. head_dim defaults to hidden_size/num_attention_heads and
// num_key_value_heads to num_attention_heads, as in transformers; rope_theta may also be given
// as rope_parameters.rope_theta (transformers 5) and torch_dtype as dtype. Settings this
// implementation does not support (rope scaling, sliding-window attention, attention biases,
// an activation other than SiLU) are rejected with a *fielderr.Error. The result is
// validated.
func LoadConfig(dir string) (Config, error) {
	js, err := limits.ReadRegularFile(filepath.Join(dir, ConfigFile), limits.Config)
	if err != nil {
		return Config{}, fmt.Errorf("qwen3: %w", err)
	}
	return ParseConfig(js)
}

// ParseConfig parses the contents of a config.json; see LoadConfig.
func ParseConfig(js []byte) (Config, error) {
	var c Config
	if err := json.Unmarshal(js, &c); err != nil {
		return Config{}, fmt.Errorf("qwen3: config.json: %w: %w", learner.ErrInvalidConfig, err)
	}
	if err := json.Unmarshal(js, &c.raw); err != nil {
		return Config{}, fmt.Errorf("qwen3: config.json: %w: %w", learner.ErrInvalidConfig, err)
	}
	var extra configExtra
	if err := json.Unmarshal(js, &extra); err != nil {
		return Config{}, fmt.Errorf("qwen3: config.json: %w: %w", learner.ErrInvalidConfig, err)
	}
	unsupported := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: field, Value: v, Reason: reason}
	}
	if c.HeadDim == 0 && c.NumAttentionHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumAttentionHeads
	}
	if c.NumKeyValueHeads == 0 {
		c.NumKeyValueHeads = c.NumAttentionHeads
	}
	if p := extra.RopeParameters; p != nil {
		if p.RopeType != "" && p.RopeType != "default" {
			return Config{}, unsupported("rope_parameters.rope_type", p.RopeType, `only "default" RoPE is implemented`)
		}
		if c.RopeTheta == 0 {
			c.RopeTheta = p.RopeTheta
		}
	}
	if c.TorchDType == "" {
		c.TorchDType = extra.DType
	}
	if err := extra.check(); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// configExtra holds the config.json fields that ParseConfig checks but
// Config does not keep.
type configExtra struct {
	RopeParameters *struct {
		RopeTheta float64 `json:"rope_theta"`
		RopeType  string  `json:"rope_type"`
	} `json:"rope_parameters"`
	RopeScaling      json.RawMessage `json:"rope_scaling"`
	DType            string          `json:"dtype"`
	HiddenAct        *string         `json:"hidden_act"`
	AttentionBias    *bool           `json:"attention_bias"`
	UseSlidingWindow *bool           `json:"use_sliding_window"`
	ModelType        *string         `json:"model_type"`
	LayerTypes       []string        `json:"layer_types"`
}

// check refuses the features the model does not implement.
func (x *configExtra) check() error {
	unsupported := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: field, Value: v, Reason: reason}
	}
	switch {
	case len(x.RopeScaling) > 0 && string(x.RopeScaling) != "null":
		return unsupported("rope_scaling", string(x.RopeScaling), "RoPE scaling is not implemented")
	case x.HiddenAct != nil && *x.HiddenAct != "silu":
		return unsupported("hidden_act", *x.HiddenAct, `only "silu" is implemented`)
	case x.AttentionBias != nil && *x.AttentionBias:
		return unsupported("attention_bias", true, "attention biases are not implemented")
	case x.UseSlidingWindow != nil && *x.UseSlidingWindow:
		return unsupported("use_sliding_window", true, "sliding-window attention is not implemented")
	case x.ModelType != nil && *x.ModelType != "qwen3":
		return unsupported("model_type", *x.ModelType, `want "qwen3"`)
	}
	for i, lt := range x.LayerTypes {
		if lt != "full_attention" {
			return unsupported(fmt.Sprintf("layer_types[%d]", i), lt, `only "full_attention" is implemented`)
		}
	}
	return nil
}

// configJSON renders c as a Hugging Face config.json for Qwen3ForCausalLM: the fields of the
// config it was loaded from, with the architecture fields (and dtype) set from c.
func (c Config) configJSON(dtype string) ([]byte, error) {
	out := map[string]any{}
	for k, v := range c.raw {
		out[k] = v
	}
	set := map[string]any{
		"architectures":           []string{"Qwen3ForCausalLM"},
		"model_type":              "qwen3",
		"hidden_size":             c.HiddenSize,
		"num_hidden_layers":       c.NumHiddenLayers,
		"num_attention_heads":     c.NumAttentionHeads,
		"num_key_value_heads":     c.NumKeyValueHeads,
		"head_dim":                c.HeadDim,
		"intermediate_size":       c.IntermediateSize,
		"vocab_size":              c.VocabSize,
		"rope_theta":              c.RopeTheta,
		"rms_norm_eps":            c.RMSNormEps,
		"tie_word_embeddings":     c.TieWordEmbeddings,
		"max_position_embeddings": c.MaxPositionEmbeddings,
		"torch_dtype":             dtype,
		"hidden_act":              "silu",
		"attention_bias":          false,
		"attention_dropout":       0.0,
		"rope_scaling":            nil,
		"use_sliding_window":      false,
	}
	if _, ok := out["rope_parameters"]; ok {
		out["rope_parameters"] = map[string]any{"rope_theta": c.RopeTheta, "rope_type": "default"}
	}
	if _, ok := out["dtype"]; ok {
		out["dtype"] = dtype
	}
	defaults := map[string]any{
		"bos_token_id": 151643, "eos_token_id": 151645, "initializer_range": 0.02, "use_cache": true,
		"sliding_window": nil, "max_window_layers": c.NumHiddenLayers,
	}
	for k, v := range set {
		out[k] = v
	}
	for k, v := range defaults {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	return json.MarshalIndent(out, "", "  ")
}
