package qwen3

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// loraModule maps a target name to its module index.
var loraModule = map[string]int{
	"q_proj": modQ, "k_proj": modK, "v_proj": modV, "o_proj": modO,
	"gate_proj": modGate, "up_proj": modUp, "down_proj": modDown,
}

type loraKey struct{ layer, mod int }

type loraAdapter struct {
	a, b *context.Variable // A [r, in], B [out, r]
}

type loraState struct {
	cfg      hfmodel.LoRAConfig
	scale    float64 // α / r
	adapters map[loraKey]loraAdapter
}

// mergeInto adds scale·B·A to w ([out, in], row-major).
func (ad loraAdapter) mergeInto(w []float32, shape []int, scale float64) error {
	a, err := varFloats(ad.a)
	if err != nil {
		return err
	}
	b, err := varFloats(ad.b)
	if err != nil {
		return err
	}
	out, in := shape[0], shape[1]
	r := len(a) / in
	for o := range out {
		row := w[o*in : (o+1)*in]
		for k := range r {
			c := float32(scale) * b[o*r+k]
			if c == 0 {
				continue
			}
			ak := a[k*in : (k+1)*in]
			for i := range row {
				row[i] += c * ak[i]
			}
		}
	}
	return nil
}

// LoRA returns the adapter configuration, if adapters are attached.
func (m *Model) LoRA() (hfmodel.LoRAConfig, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora == nil {
		return hfmodel.LoRAConfig{}, false
	}
	c := m.lora.cfg
	c.Targets = slices.Clone(c.Targets)
	return c, true
}

// AddLoRA attaches adapters to every layer's target projections and freezes the base weights
// (they stop being trainable variables, so a Trainer neither updates them nor keeps optimizer
// state for them). A is drawn from seed as PEFT does (Kaiming-uniform, bound 1/√in) and B is
// zero, so the model's outputs are unchanged until a step trains them. Call it before
// NewTrainer; adapters can be attached once.
func (m *Model) AddLoRA(cfg hfmodel.LoRAConfig, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora != nil {
		return fmt.Errorf("qwen3: AddLoRA: %w: adapters are already attached", learner.ErrInvalidConfig)
	}
	if m.trained {
		return fmt.Errorf("qwen3: AddLoRA: %w: a Trainer was already built over the full weights", learner.ErrInvalidConfig)
	}
	rng := rand.New(rand.NewPCG(seed, 0x6c6f7261))
	values := map[loraKey][2][]float32{}
	for l := range m.cfg.NumHiddenLayers {
		for _, t := range cfg.Targets {
			mod := loraModule[t]
			shape := m.cfg.ModuleShape(hfmodel.LayerModules[mod])
			out, in := shape[0], shape[1]
			a := make([]float32, cfg.Rank*in)
			bound := 1 / math.Sqrt(float64(in))
			for i := range a {
				a[i] = float32((2*rng.Float64() - 1) * bound)
			}
			values[loraKey{l, mod}] = [2][]float32{a, make([]float32, out*cfg.Rank)}
		}
	}
	return m.attachLoRA(cfg, values)
}

// attachLoRA creates the adapter variables with the given values and freezes the base weights.
func (m *Model) attachLoRA(cfg hfmodel.LoRAConfig, values map[loraKey][2][]float32) error {
	st := &loraState{cfg: cfg, scale: cfg.Alpha / float64(cfg.Rank), adapters: map[loraKey]loraAdapter{}}
	st.cfg.Targets = slices.Clone(cfg.Targets)
	err := gomlxtrain.Catch(func() {
		ctx := m.ctx.Checked(false)
		for k, v := range values {
			shape := m.cfg.ModuleShape(hfmodel.LayerModules[k.mod])
			out, in := shape[0], shape[1]
			c := ctx.InAbsPath(fmt.Sprintf("/lora/layers/%d/%s", k.layer, hfmodel.LayerModules[k.mod]))
			st.adapters[k] = loraAdapter{
				a: c.VariableWithValue("A", tensors.FromFlatDataAndDimensions(v[0], cfg.Rank, in)),
				b: c.VariableWithValue("B", tensors.FromFlatDataAndDimensions(v[1], out, cfg.Rank)),
			}
		}
	})
	if err != nil {
		return err
	}
	m.setBaseTrainable(false)
	m.lora = st
	m.resetExecs()
	return nil
}

func (m *Model) setBaseTrainable(on bool) {
	m.embed.SetTrainable(on)
	m.norm.SetTrainable(on)
	if m.lmHead != nil {
		m.lmHead.SetTrainable(on)
	}
	for l := range m.layers {
		for _, v := range m.layers[l] {
			v.SetTrainable(on)
		}
	}
}

// SaveAdapter writes the LoRA adapters as a PEFT adapter directory: adapter_config.json and
// adapter_model.safetensors with PEFT's names
// (base_model.model.model.layers.N.self_attn.q_proj.lora_A.weight [r, in], lora_B.weight
// [out, r]), float32. peft.PeftModel.from_pretrained(base, dir) loads it.
func (m *Model) SaveAdapter(dir string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora == nil {
		return fmt.Errorf("qwen3: SaveAdapter: %w: no LoRA adapters attached", learner.ErrInvalidConfig)
	}
	cfg := hfmodel.PEFTConfig{
		PeftType: "LORA", TaskType: "CAUSAL_LM", R: m.lora.cfg.Rank, LoraAlpha: m.lora.cfg.Alpha,
		TargetModules: slices.Clone(m.lora.cfg.Targets), Bias: "none", InferenceMode: true, InitLoraWeights: true,
		BaseModelNameOrPa: m.srcDir,
	}
	var ts []safetensors.Tensor
	for l := range m.cfg.NumHiddenLayers {
		for mod := range numModules {
			ad, ok := m.lora.adapters[loraKey{l, mod}]
			if !ok {
				continue
			}
			for _, x := range []struct {
				v     *context.Variable
				which string
			}{{ad.a, "A"}, {ad.b, "B"}} {
				f, err := varFloats(x.v)
				if err != nil {
					return err
				}
				ts = append(ts, safetensors.F32Tensor(hfmodel.PEFTName(l, mod, x.which), x.v.Shape().Dimensions, f))
			}
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := fsutil.WriteFileAtomic(filepath.Join(dir, hfmodel.AdapterConfigFile), func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	}); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(filepath.Join(dir, hfmodel.AdapterWeightsFile), func(w io.Writer) error {
		return safetensors.Write(w, ts, map[string]string{"format": "pt"})
	})
}

// LoadAdapter reads a PEFT LoRA adapter directory (as SaveAdapter writes; target_modules given
// as a list, no DoRA, no rsLoRA; hfmodel.ReadAdapter checks every file and tensor) and attaches
// it, freezing the base weights. On error the model is unchanged.
func (m *Model) LoadAdapter(dir string) error {
	ad, err := hfmodel.ReadAdapter(dir, m.cfg)
	if err != nil {
		return err
	}
	return m.AttachAdapter(ad)
}

// UnloadAdapter detaches the LoRA adapters (their variables leave the model's context) and
// makes the base weights trainable again: the model computes as it did before AddLoRA or
// LoadAdapter, and another adapter may be attached. Compiled graphs are dropped, so the next
// generation compiles again. A model without adapters is unchanged; one a Trainer was built
// over refuses (its set of trainable variables is fixed).
func (m *Model) UnloadAdapter() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lora == nil {
		return nil
	}
	if m.trained {
		return fmt.Errorf("qwen3: UnloadAdapter: %w: a Trainer was built over the adapters", learner.ErrInvalidConfig)
	}
	if err := m.ctx.InAbsPath("/lora").DeleteVariablesInScope(); err != nil {
		return fmt.Errorf("qwen3: UnloadAdapter: %w", err)
	}
	m.lora = nil
	m.setBaseTrainable(true)
	m.resetExecs()
	return nil
}
