package hfmodel

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/safetensors"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// Hugging Face tensor names.
const (
	NameEmbed  = "model.embed_tokens.weight"
	NameNorm   = "model.norm.weight"
	NameLMHead = "lm_head.weight"
)

// Per-layer module names, in checkpoint order.
var LayerModules = []string{
	"input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
	"self_attn.q_norm", "self_attn.k_norm", "post_attention_layernorm",
	"mlp.gate_proj", "mlp.up_proj", "mlp.down_proj",
}

// WeightSpec is one expected tensor: its Hugging Face name and shape.
type WeightSpec struct {
	Name  string
	Shape []int
}

func LayerName(l int, module string) string {
	return fmt.Sprintf("model.layers.%d.%s.weight", l, module)
}

// ModuleShape returns the weight shape of a per-layer module ([out, in] for projections).
func (c Config) ModuleShape(module string) []int {
	h, d := c.HiddenSize, c.HeadDim
	q, kv := c.NumAttentionHeads*d, c.NumKeyValueHeads*d
	switch module {
	case "input_layernorm", "post_attention_layernorm":
		return []int{h}
	case "self_attn.q_norm", "self_attn.k_norm":
		return []int{d}
	case "self_attn.q_proj":
		return []int{q, h}
	case "self_attn.k_proj", "self_attn.v_proj":
		return []int{kv, h}
	case "self_attn.o_proj":
		return []int{h, q}
	case "mlp.gate_proj", "mlp.up_proj":
		return []int{c.IntermediateSize, h}
	case "mlp.down_proj":
		return []int{h, c.IntermediateSize}
	}
	panic("qwen3: unknown module " + module)
}

// WeightSpecs lists every tensor of a checkpoint of c, in the order Save writes them.
func (c Config) WeightSpecs() []WeightSpec {
	specs := []WeightSpec{{NameEmbed, []int{c.VocabSize, c.HiddenSize}}}
	for l := range c.NumHiddenLayers {
		for _, m := range LayerModules {
			specs = append(specs, WeightSpec{LayerName(l, m), c.ModuleShape(m)})
		}
	}
	specs = append(specs, WeightSpec{NameNorm, []int{c.HiddenSize}})
	if !c.TieWordEmbeddings {
		specs = append(specs, WeightSpec{NameLMHead, []int{c.VocabSize, c.HiddenSize}})
	}
	return specs
}

// IsNormWeight reports whether a tensor name is an RMSNorm weight (initialised to ones).
func IsNormWeight(name string) bool {
	return strings.HasSuffix(name, "layernorm.weight") || strings.HasSuffix(name, "_norm.weight") || name == NameNorm
}

// InitRandom draws the weights of a model of shape cfg from seed, as transformers initialises
// Qwen3 (initializer_range 0.02): projections and embeddings N(0, 0.02²), RMSNorm weights 1.
// The tensors are float32, named and shaped as in a Hugging Face checkpoint, in Save's order.
func InitRandom(cfg Config, seed uint64) ([]safetensors.Tensor, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	out := make([]safetensors.Tensor, 0, len(cfg.WeightSpecs()))
	DrawRandom(cfg, seed, func(s WeightSpec, data []float32) {
		out = append(out, safetensors.F32Tensor(s.Name, s.Shape, data))
	})
	return out, nil
}

// DrawRandom draws InitRandom's weights tensor by tensor, in WeightSpecs order, and hands each
// to fn (which may keep the slice).
func DrawRandom(cfg Config, seed uint64, fn func(s WeightSpec, data []float32)) {
	rng := rand.New(rand.NewPCG(seed, 0x7177656e33))
	for _, s := range cfg.WeightSpecs() {
		n := 1
		for _, d := range s.Shape {
			n *= d
		}
		data := make([]float32, n)
		if IsNormWeight(s.Name) {
			for i := range data {
				data[i] = 1
			}
		} else {
			for i := range data {
				data[i] = float32(0.02 * rng.NormFloat64())
			}
		}
		fn(s, data)
	}
}

// TokenizerFiles are the files Save copies from the directory a model was loaded from.
var TokenizerFiles = []string{
	"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "special_tokens_map.json",
	"added_tokens.json", "generation_config.json", "chat_template.jinja",
}

// WriteRandomCheckpoint writes a Hugging Face model directory with random weights
// (InitRandom(cfg, seed), float32) to dir. If tokenizerJSONPath is set, that tokenizer.json (and
// a tokenizer_config.json beside it, if any) is copied in, and cfg.VocabSize is raised to the
// tokenizer's VocabSize if it is smaller. It returns the configuration written.
func WriteRandomCheckpoint(dir string, cfg Config, seed uint64, tokenizerJSONPath string) (Config, error) {
	if tokenizerJSONPath != "" {
		tok, err := tokenizer.Load(tokenizerJSONPath)
		if err != nil {
			return cfg, err
		}
		cfg.VocabSize = max(cfg.VocabSize, tok.VocabSize())
	}
	ts, err := InitRandom(cfg, seed)
	if err != nil {
		return cfg, err
	}
	if err := WriteHFDir(dir, cfg, ts, safetensors.F32); err != nil {
		return cfg, err
	}
	if tokenizerJSONPath != "" {
		if err := CopyFile(tokenizerJSONPath, filepath.Join(dir, "tokenizer.json")); err != nil {
			return cfg, err
		}
		side := filepath.Join(filepath.Dir(tokenizerJSONPath), "tokenizer_config.json")
		if _, err := os.Stat(side); err == nil {
			if err := CopyFile(side, filepath.Join(dir, "tokenizer_config.json")); err != nil {
				return cfg, err
			}
		}
	}
	return cfg, nil
}

// WriteHFDir writes config.json and model.safetensors (tensors converted to dtype) into dir,
// each through a temporary file renamed into place.
func WriteHFDir(dir string, cfg Config, ts []safetensors.Tensor, dtype safetensors.DType) error {
	torch := map[safetensors.DType]string{safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16"}[dtype]
	if torch == "" {
		return fmt.Errorf("qwen3: save dtype %s: %w", dtype, learner.ErrInvalidConfig)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if dtype != safetensors.F32 {
		conv := make([]safetensors.Tensor, len(ts))
		for i, t := range ts {
			f, err := t.Float32(nil)
			if err != nil {
				return err
			}
			if dtype == safetensors.BF16 {
				conv[i] = safetensors.BF16Tensor(t.Name, t.Shape, f)
			} else {
				conv[i] = safetensors.F16Tensor(t.Name, t.Shape, f)
			}
		}
		ts = conv
	}
	js, err := cfg.configJSON(torch)
	if err != nil {
		return err
	}
	if err := writeFileAtomic(filepath.Join(dir, ConfigFile), func(w io.Writer) error {
		_, err := w.Write(append(js, '\n'))
		return err
	}); err != nil {
		return err
	}
	// A stale index would make readers look for shards instead of model.safetensors.
	if err := os.Remove(filepath.Join(dir, safetensors.IndexFile)); err != nil && !os.IsNotExist(err) {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, "model.safetensors"), func(w io.Writer) error {
		return safetensors.Write(w, ts, map[string]string{"format": "pt"})
	})
}

// writeFileAtomic is learner.WriteFileAtomic, with the error naming qwen3.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	if err := fsutil.WriteFileAtomic(path, write); err != nil {
		return fmt.Errorf("qwen3: %w", err)
	}
	return nil
}

func CopyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	return writeFileAtomic(dst, func(w io.Writer) error {
		_, err := io.Copy(w, in)
		return err
	})
}

// ReadWeights reads and checks every tensor of cfg from dir's safetensors (single file or
// sharded) into float32. Nothing is returned unless all tensors are present with the right
// shapes and float dtypes and no unexpected tensor is there (a tied checkpoint may carry
// lm_head.weight, which is ignored, and rotary inv_freq buffers are ignored).
func ReadWeights(dir string, cfg Config) (map[string][]float32, error) {
	set, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("qwen3: %w", err)
	}
	defer set.Close()
	specs := cfg.WeightSpecs()
	want := map[string]bool{}
	for _, s := range specs {
		want[s.Name] = true
		info, ok := set.Info(s.Name)
		if !ok {
			return nil, &WeightError{Tensor: s.Name, Problem: ProblemMissing, Want: s.Shape}
		}
		if !slices.Equal(info.Shape, s.Shape) {
			return nil, &WeightError{Tensor: s.Name, Problem: ProblemShape, Want: s.Shape, Got: info.Shape}
		}
		switch info.DType {
		case safetensors.F32, safetensors.BF16, safetensors.F16, safetensors.F64:
		default:
			return nil, &WeightError{Tensor: s.Name, Problem: ProblemDType, Want: s.Shape, Got: info.Shape, DType: string(info.DType)}
		}
	}
	for _, name := range set.Names() {
		if want[name] || (name == NameLMHead && cfg.TieWordEmbeddings) || strings.HasSuffix(name, "rotary_emb.inv_freq") {
			continue
		}
		info, _ := set.Info(name)
		return nil, &WeightError{Tensor: name, Problem: ProblemUnexpected, Got: info.Shape}
	}
	out := make(map[string][]float32, len(specs))
	for _, s := range specs {
		t, err := set.Read(s.Name)
		if err != nil {
			return nil, fmt.Errorf("qwen3: %w", err)
		}
		f, err := t.Float32(nil)
		if err != nil {
			return nil, fmt.Errorf("qwen3: %w", err)
		}
		for _, x := range f {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return nil, &WeightError{Tensor: s.Name, Problem: ProblemNonFinite, Want: s.Shape, Got: t.Shape}
			}
		}
		out[s.Name] = f
	}
	return out, nil
}
