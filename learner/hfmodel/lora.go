package hfmodel

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// LoRA target module names (PEFT's target_modules for Qwen3).
var LoRATargets = []string{"q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"}

// loraModules maps a LoRA target to its per-layer module name.
var loraModules = map[string]string{
	"q_proj": "self_attn.q_proj", "k_proj": "self_attn.k_proj", "v_proj": "self_attn.v_proj", "o_proj": "self_attn.o_proj",
	"gate_proj": "mlp.gate_proj", "up_proj": "mlp.up_proj", "down_proj": "mlp.down_proj",
}

// PEFT adapter file names.
const (
	AdapterConfigFile  = "adapter_config.json"
	AdapterWeightsFile = "adapter_model.safetensors"
)

// LoRAConfig configures low-rank adapters: each target projection W [out, in] gains
// (α/r)·B·A with A [r, in] and B [out, r]; only A and B train.
type LoRAConfig struct {
	Rank    int      // r; default 16; must be ≥ 1
	Alpha   float64  // α; default 32; must be > 0
	Targets []string // default LoRATargets (all seven projections)
}

// DefaultLoRAConfig returns r = 16, α = 32 on all seven projections.
func DefaultLoRAConfig() LoRAConfig {
	return LoRAConfig{Rank: 16, Alpha: 32, Targets: slices.Clone(LoRATargets)}
}

// Validate returns a *fielderr.Error naming the first bad field.
func (c LoRAConfig) Validate() error {
	bad := func(field string, v any, reason string) error {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "LoRAConfig." + field, Value: v, Reason: reason}
	}
	switch {
	case c.Rank < 1:
		return bad("Rank", c.Rank, "must be ≥ 1")
	case math.IsNaN(c.Alpha) || math.IsInf(c.Alpha, 0) || c.Alpha <= 0:
		return bad("Alpha", c.Alpha, "must be finite and > 0")
	case len(c.Targets) == 0:
		return bad("Targets", c.Targets, "must name at least one module")
	}
	for _, t := range c.Targets {
		if _, ok := loraModules[t]; !ok {
			return bad("Targets", c.Targets, fmt.Sprintf("unknown module %q (want some of %v)", t, LoRATargets))
		}
	}
	return nil
}

// PEFTName is the PEFT tensor name of an adapter matrix ("A" or "B").
func PEFTName(l, mod int, which string) string {
	return fmt.Sprintf("base_model.model.model.layers.%d.%s.lora_%s.weight", l, LayerModules[mod], which)
}

// PEFTConfig is the part of PEFT's adapter_config.json this package writes and reads.
type PEFTConfig struct {
	PeftType          string   `json:"peft_type"`
	TaskType          string   `json:"task_type"`
	R                 int      `json:"r"`
	LoraAlpha         float64  `json:"lora_alpha"`
	LoraDropout       float64  `json:"lora_dropout"`
	TargetModules     []string `json:"target_modules"`
	Bias              string   `json:"bias"`
	FanInFanOut       bool     `json:"fan_in_fan_out"`
	InferenceMode     bool     `json:"inference_mode"`
	InitLoraWeights   bool     `json:"init_lora_weights"`
	UseRSLoRA         bool     `json:"use_rslora"`
	UseDoRA           bool     `json:"use_dora"`
	BaseModelNameOrPa string   `json:"base_model_name_or_path"`
	ModulesToSave     []string `json:"modules_to_save"`
	RankPattern       struct{} `json:"rank_pattern"`
	AlphaPattern      struct{} `json:"alpha_pattern"`
}

// ParseAdapterConfig reads an adapter_config.json: plain LoRA only, its
// settings validated.
func ParseAdapterConfig(js []byte) (LoRAConfig, error) {
	var pc PEFTConfig
	if err := json.Unmarshal(js, &pc); err != nil {
		return LoRAConfig{}, fmt.Errorf("qwen3: %s: %w: %w", AdapterConfigFile, learner.ErrInvalidConfig, err)
	}
	if pc.PeftType != "LORA" || pc.UseDoRA || pc.UseRSLoRA || (pc.Bias != "" && pc.Bias != "none") {
		return LoRAConfig{}, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: AdapterConfigFile, Value: fmt.Sprintf("peft_type=%s dora=%v rslora=%v bias=%s", pc.PeftType, pc.UseDoRA, pc.UseRSLoRA, pc.Bias), Reason: "only plain LoRA without biases is supported"}
	}
	cfg := LoRAConfig{Rank: pc.R, Alpha: pc.LoraAlpha, Targets: pc.TargetModules}
	if err := cfg.Validate(); err != nil {
		return LoRAConfig{}, err
	}
	return cfg, nil
}
