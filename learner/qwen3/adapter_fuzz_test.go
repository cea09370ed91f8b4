package qwen3

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// FuzzParseAdapterConfig: an adapter_config.json never panics the reader;
// a refusal wraps learner.ErrInvalidConfig or is a *fielderr.Error;
// what it accepts validates.
func FuzzParseAdapterConfig(f *testing.F) {
	good, err := json.Marshal(hfmodel.PEFTConfig{PeftType: "LORA", TaskType: "CAUSAL_LM", R: 8, LoraAlpha: 16, TargetModules: hfmodel.LoRATargets, Bias: "none"})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	for _, s := range []string{
		`{}`, `null`, `{"peft_type":"LORA","r":8,"lora_alpha":16,"target_modules":["q_proj","nope"]}`,
		`{"peft_type":"LORA","r":0,"lora_alpha":16,"target_modules":["q_proj"]}`,
		`{"peft_type":"LORA","r":4,"lora_alpha":1e999,"target_modules":["q_proj"]}`,
		`{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":"all-linear"}`,
		`{"peft_type":"LORA","r":4,"lora_alpha":8,"target_modules":["q_proj"],"use_dora":true}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		cfg, err := hfmodel.ParseAdapterConfig(js)
		if err != nil {
			var ce *fielderr.Error
			if !errors.Is(err, learner.ErrInvalidConfig) && !errors.As(err, &ce) {
				t.Fatalf("error %v", err)
			}
			return
		}
		if err := cfg.Validate(); err != nil {
			t.Fatalf("accepted an invalid adapter config: %v", err)
		}
	})
}
