package hfmodel

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

func TestConfigValidateAndParse(t *testing.T) {
	good, err := Preset(PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field string
		edit  func(*Config)
	}{
		{"hidden_size", func(c *Config) { c.HiddenSize = 0 }},
		{"num_key_value_heads", func(c *Config) { c.NumKeyValueHeads = 3 }},
		{"head_dim", func(c *Config) { c.HeadDim = 15 }},
		{"vocab_size", func(c *Config) { c.VocabSize = 0 }},
		{"rope_theta", func(c *Config) { c.RopeTheta = math.NaN() }},
		{"rms_norm_eps", func(c *Config) { c.RMSNormEps = 0 }},
		{"max_position_embeddings", func(c *Config) { c.MaxPositionEmbeddings = 0 }},
		{"torch_dtype", func(c *Config) { c.TorchDType = "int8" }},
	}
	for _, c := range cases {
		cfg := good
		c.edit(&cfg)
		var ce *fielderr.Error
		if err := cfg.Validate(); !errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, learner.ErrInvalidConfig) {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
	// A Qwen3-4B style config.json (transformers 5 spelling of rope θ and dtype).
	js := `{"architectures":["Qwen3ForCausalLM"],"model_type":"qwen3","hidden_size":2560,"num_hidden_layers":36,
		"num_attention_heads":32,"num_key_value_heads":8,"head_dim":128,"intermediate_size":9728,"vocab_size":151936,
		"rope_parameters":{"rope_theta":1000000,"rope_type":"default"},"rms_norm_eps":1e-6,"tie_word_embeddings":true,
		"max_position_embeddings":40960,"dtype":"bfloat16","hidden_act":"silu","attention_bias":false,"custom_field":7}`
	cfg, err := ParseConfig([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	want, _ := Preset(Preset4BShape)
	cfg.raw, want.raw = nil, nil
	if !jsonEqual(t, cfg, want) {
		t.Errorf("parsed %+v, want %+v", cfg, want)
	}
	cfg, _ = ParseConfig([]byte(js))
	out, err := cfg.configJSON("float32")
	if err != nil || !strings.Contains(string(out), `"custom_field": 7`) || !strings.Contains(string(out), `"rope_theta": 1000000`) {
		t.Errorf("configJSON lost fields: %s %v", out, err)
	}
	for _, bad := range []string{
		`{"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":8,"vocab_size":8,"rope_theta":10000,"rms_norm_eps":1e-6,"max_position_embeddings":8,"rope_scaling":{"type":"yarn"}}`,
		`{"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":8,"vocab_size":8,"rope_theta":10000,"rms_norm_eps":1e-6,"max_position_embeddings":8,"hidden_act":"gelu"}`,
		`{"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":8,"vocab_size":8,"rope_theta":10000,"rms_norm_eps":1e-6,"max_position_embeddings":8,"use_sliding_window":true}`,
		`{"hidden_size":64`,
	} {
		if _, err := ParseConfig([]byte(bad)); !errors.Is(err, learner.ErrInvalidConfig) {
			t.Errorf("ParseConfig(%s) = %v, want ErrInvalidConfig", bad, err)
		}
	}
	// head_dim and num_key_value_heads default as in transformers.
	c, err := ParseConfig([]byte(`{"hidden_size":64,"num_hidden_layers":1,"num_attention_heads":4,"intermediate_size":8,"vocab_size":8,"rope_theta":10000,"rms_norm_eps":1e-6,"max_position_embeddings":8}`))
	if err != nil || c.HeadDim != 16 || c.NumKeyValueHeads != 4 {
		t.Errorf("defaults: %+v %v", c, err)
	}
	if _, err := Preset("7b"); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Errorf("unknown preset: %v", err)
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return string(ja) == string(jb)
}
