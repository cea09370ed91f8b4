package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

func runModel(args []string, stdout, stderr io.Writer) error {
	return subcommands("model", []command{
		{"init", "write a random-weight Qwen3 checkpoint (Hugging Face layout) of a preset shape", modelInit},
		{"inspect", "summarise a checkpoint: config, parameters, dtypes, tensors, memory estimate", modelInspect},
		{"logits", "token ids and next-token logits of texts (JSON), for parity checks against other runtimes", modelLogits},
	}, args, stdout, stderr)
}

// tinyTokenizerConfig is the tokenizer_config.json written beside the tiny tokenizer.
const tinyTokenizerConfig = `{
  "tokenizer_class": "Qwen2TokenizerFast",
  "eos_token": "<|im_end|>",
  "pad_token": "<|endoftext|>",
  "bos_token": null,
  "unk_token": null,
  "model_max_length": 40960,
  "clean_up_tokenization_spaces": false
}
`

func modelInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t model init", "t2t model init --preset tiny|0.6b-shape|4b-shape --out DIR [flags]", stderr)
	preset := fs.String("preset", qwen3.PresetTiny, "shape: tiny, 0.6b-shape or 4b-shape")
	out := fs.String("out", "", "checkpoint directory to write (required)")
	tokPath := fs.String("tokenizer", "", "tokenizer.json to copy in (the vocabulary grows to fit it); default: learn the tiny byte-level BPE")
	vocab := fs.Int("tokenizer-vocab", textpolicy.DefaultTinyVocab, "vocabulary size of the learned tiny tokenizer (without --tokenizer)")
	seed := fs.Uint64("seed", 1, "weight initialisation seed")
	force := fs.Bool("force", false, "write a 4b-shape checkpoint (16 GB of float32 weights)")
	layers := fs.Int("layers", 0, "number of decoder layers (0: the preset's)")
	hidden := fs.Int("hidden", 0, "hidden size; head_dim becomes hidden / query heads (0: the preset's)")
	inter := fs.Int("intermediate", 0, "MLP intermediate size (0: the preset's)")
	theta := fs.Float64("rope-theta", 0, "RoPE θ (0: the preset's, 1e6 as Qwen3)")
	heads := fs.Int("heads", 0, "query heads (0: the preset's); head_dim = hidden / heads")
	kvHeads := fs.Int("kv-heads", 0, "key-value heads, dividing --heads (0: the preset's, or --heads/2 when --heads is given)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return badInput("--out is required")
	}
	cfg, err := qwen3.Preset(*preset)
	if err != nil {
		return badInput("--preset: %v", err)
	}
	if *heads < 0 || *kvHeads < 0 {
		return badInput("--heads and --kv-heads must be ≥ 0")
	}
	if *heads > 0 {
		cfg.NumAttentionHeads, cfg.NumKeyValueHeads = *heads, max(1, *heads/2)
		if *hidden == 0 {
			*hidden = cfg.HiddenSize
		}
	}
	if *kvHeads > 0 {
		cfg.NumKeyValueHeads = *kvHeads
	}
	switch {
	case *layers < 0 || *hidden < 0 || *inter < 0 || *theta < 0 || math.IsNaN(*theta):
		return badInput("--layers, --hidden, --intermediate and --rope-theta must be ≥ 0")
	case *hidden > 0 && *hidden%(2*cfg.NumAttentionHeads) != 0:
		return badInput("--hidden %d: must be a multiple of 2 × %d query heads (even head_dim)", *hidden, cfg.NumAttentionHeads)
	}
	if *layers > 0 {
		cfg.NumHiddenLayers = *layers
	}
	if *hidden > 0 {
		cfg.HiddenSize, cfg.HeadDim = *hidden, *hidden/cfg.NumAttentionHeads
	}
	if *inter > 0 {
		cfg.IntermediateSize = *inter
	}
	if *theta > 0 {
		cfg.RopeTheta = *theta
	}
	if err := cfg.Validate(); err != nil {
		return badInput("%v", err)
	}
	tmp, err := os.MkdirTemp("", "t2t-tokenizer-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	src := *tokPath
	if src == "" {
		js, err := textpolicy.TinyTokenizerJSON(*vocab)
		if err != nil {
			return badInput("--tokenizer-vocab: %v", err)
		}
		src = filepath.Join(tmp, "tokenizer.json")
		if err := os.WriteFile(src, js, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(tmp, "tokenizer_config.json"), []byte(tinyTokenizerConfig), 0o644); err != nil {
			return err
		}
		if *preset == qwen3.PresetTiny {
			tok, err := tokenizer.Parse(js)
			if err != nil {
				return err
			}
			cfg.VocabSize = tok.VocabSize() // exactly the tokenizer's ids: no id the model can sample decodes to nothing
		}
	} else if tok, err := tokenizer.Load(src); err != nil {
		return badInput("--tokenizer: %v", err)
	} else {
		cfg.VocabSize = max(cfg.VocabSize, tok.VocabSize())
	}
	est := qwen3.EstimateMemory(cfg, 8, 2048, false)
	fmt.Fprintf(stdout, "preset %s: %d layers, hidden %d, heads %d/%d × %d, intermediate %d, vocab %d: %.4gM parameters, %.2f GiB of float32 weights\n",
		*preset, cfg.NumHiddenLayers, cfg.HiddenSize, cfg.NumAttentionHeads, cfg.NumKeyValueHeads, cfg.HeadDim, cfg.IntermediateSize, cfg.VocabSize,
		float64(cfg.NumParams())/1e6, float64(4*cfg.NumParams())/(1<<30))
	fmt.Fprintf(stdout, "training memory (GRPO, micro-batch 8 × 2048 tokens): %s\n", est)
	if *preset == qwen3.Preset4BShape && !*force {
		return badInput("a 4b-shape checkpoint is %.1f GiB of float32 weights: pass --force to write it", float64(4*cfg.NumParams())/(1<<30))
	}
	written, err := qwen3.WriteRandomCheckpoint(*out, cfg, *seed, src)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (vocab %d, seed %d)\n", *out, written.VocabSize, *seed)
	return nil
}

func modelInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t model inspect", "t2t model inspect DIR", stderr)
	if err := fs.Parse(args); err != nil {
		return &usageError{err}
	}
	if fs.NArg() != 1 {
		return badInput("want one checkpoint directory, got %d arguments", fs.NArg())
	}
	dir := fs.Arg(0)
	ins, err := qwen3.Inspect(dir)
	if err != nil {
		return badInput("%v", err)
	}
	c := ins.Config
	fmt.Fprintf(stdout, "checkpoint %s\n", dir)
	fmt.Fprintf(stdout, "config: %d layers, hidden %d, heads %d q / %d kv × head_dim %d, intermediate %d, vocab %d, rope θ %g, rms ε %g, tied %v, context %d, torch_dtype %s\n",
		c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.IntermediateSize, c.VocabSize,
		c.RopeTheta, c.RMSNormEps, c.TieWordEmbeddings, c.MaxPositionEmbeddings, c.TorchDType)
	fmt.Fprintf(stdout, "parameters: %d (config: %d) in %d tensors, %.2f MiB of weights\n", ins.Params, c.NumParams(), ins.Tensors, float64(ins.Bytes)/(1<<20))
	dts := make([]string, 0, len(ins.ParamsByDType))
	for d := range ins.ParamsByDType {
		dts = append(dts, d)
	}
	sort.Strings(dts)
	for _, d := range dts {
		fmt.Fprintf(stdout, "  dtype %-4s %d parameters\n", d, ins.ParamsByDType[d])
	}
	fmt.Fprintln(stdout, "tensors:")
	for _, g := range ins.Groups {
		count := ""
		if g.Count > 1 {
			count = fmt.Sprintf(" ×%d", g.Count)
		}
		fmt.Fprintf(stdout, "  %-52s %-4s %v%s\n", g.Pattern, g.DType, g.Shape, count)
	}
	if len(ins.Problems) == 0 {
		fmt.Fprintln(stdout, "weights: every tensor the config needs is present with its shape")
	} else {
		fmt.Fprintf(stdout, "weights: %d problem(s) — Load would fail:\n", len(ins.Problems))
		for _, p := range ins.Problems {
			fmt.Fprintf(stdout, "  %s\n", p)
		}
	}
	if _, ok := ins.Files["tokenizer.json"]; ok {
		tok, err := tokenizer.Load(filepath.Join(dir, "tokenizer.json"))
		if err != nil {
			fmt.Fprintf(stdout, "tokenizer: %v\n", err)
		} else {
			var added []string
			for _, a := range tok.AddedTokens() {
				added = append(added, a.Content)
			}
			fmt.Fprintf(stdout, "tokenizer: %d ids, added tokens %s\n", tok.VocabSize(), strings.Join(added, " "))
			if tok.VocabSize() > c.VocabSize {
				fmt.Fprintf(stdout, "  warning: the tokenizer has more ids than the model's vocab_size %d\n", c.VocabSize)
			}
		}
	} else {
		fmt.Fprintln(stdout, "tokenizer: none (no tokenizer.json)")
	}
	for _, lora := range []bool{false, true} {
		name := "full fine-tuning"
		if lora {
			name = "LoRA r16 "
		}
		fmt.Fprintf(stdout, "memory, %s (micro-batch 8 × 2048 tokens): %s\n", name, qwen3.EstimateMemory(c, 8, 2048, lora))
	}
	return nil
}

// logitsResult is one text's line of "t2t model logits".
type logitsResult struct {
	Text   string      `json:"text"`
	IDs    []int32     `json:"ids"`
	Logits [][]float32 `json:"logits"` // per position, the first --top-k vocabulary entries (all with 0)
}

func modelLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t model logits", "t2t model logits --model DIR [--text T]... [--texts FILE] [--vocab N]", stderr)
	dir := fs.String("model", "", "checkpoint directory (required)")
	var texts multiFlag
	fs.Var(&texts, "text", "a text to encode and run (repeatable)")
	textsFile := fs.String("texts", "", "a file of texts, one per line")
	vocab := fs.Int("vocab", 0, "write only the first N vocabulary entries of each position's logits (0: all)")
	device := fs.String("device", "cpu", deviceFlagHelp)
	ef := addEngineFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return badInput("--model is required")
	}
	if *textsFile != "" {
		b, err := os.ReadFile(*textsFile)
		if err != nil {
			return badInput("%v", err)
		}
		for _, line := range strings.Split(strings.TrimRight(string(b), "\n"), "\n") {
			texts = append(texts, line)
		}
	}
	if len(texts) == 0 {
		return badInput("give at least one --text or --texts FILE")
	}
	lm, err := ef.openLM(context.Background(), *device, *dir, stderr)
	if err != nil {
		return err
	}
	defer lm.Close()
	seqs := make([][]int32, len(texts))
	for i, t := range texts {
		seqs[i] = lm.Tok.Encode(t)
		if len(seqs[i]) == 0 {
			return badInput("text %d encodes to no token", i+1)
		}
	}
	logits, err := lm.Model.Logits(seqs)
	if err != nil {
		return err
	}
	v := lm.Model.Config().VocabSize
	enc := json.NewEncoder(stdout)
	for i, t := range texts {
		res := logitsResult{Text: t, IDs: seqs[i]}
		for p := range seqs[i] {
			row := logits[i][p*v : (p+1)*v]
			if *vocab > 0 && *vocab < v {
				row = row[:*vocab]
			}
			res.Logits = append(res.Logits, row)
		}
		if err := enc.Encode(res); err != nil {
			return err
		}
	}
	return nil
}

// multiFlag is a repeatable string flag.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, "|") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }
