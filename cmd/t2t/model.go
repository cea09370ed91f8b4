package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/train"
)

// modelCommands are the subcommands of "t2t model".
func modelCommands() []command {
	return []command{
		{"init", "write a random-weight Qwen3 checkpoint (Hugging Face layout) of a preset shape", modelInit},
		{"inspect", "summarise a checkpoint: config, parameters, dtypes, tensors, memory estimate", modelInspect},
		{"logits", "token ids and next-token logits of texts (JSON), for parity checks against other runtimes", modelLogits},
	}
}

func runModel(args []string, stdout, stderr io.Writer) error {
	return subcommands("model", modelCommands(), args, stdout, stderr)
}

func modelInit(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t model init", "t2t model init --preset tiny|0.6b-shape|4b-shape --out DIR [flags]", stderr)
	var o hfmodel.InitOptions
	fs.StringVar(&o.Preset, "preset", hfmodel.PresetTiny, "shape: tiny, 0.6b-shape or 4b-shape")
	out := fs.String("out", "", "checkpoint directory to write (required)")
	fs.StringVar(&o.TokenizerPath, "tokenizer", "", "tokenizer.json to copy in (the vocabulary grows to fit it); default: learn the tiny byte-level BPE")
	vocab := fs.Int("tokenizer-vocab", 0, fmt.Sprintf("most ids of the learned tiny tokenizer (without --tokenizer); 0: all its corpus yields (%d from the testbed's texts alone)", textpolicy.DefaultTinyVocab))
	turnsFile := fs.String("tokenizer-turns", "", "engineer turns (t2t engineer turns --out) whose training turns join the learned tokenizer's corpus, so that a model taught them (t2t sft --engineer-data) reads and writes them in about a third of the tokens; held-out turns are never read")
	style := fs.String("tokenizer-prompt", "", "also learn the tokenizer on the prompts and optimal answers of this prompt style (compact, cells, steps or grid: the style the model will be fine-tuned with), so that its fixed text and cell punctuation become a few tokens")
	fs.Uint64Var(&o.Seed, "seed", 1, "weight initialisation seed")
	fs.BoolVar(&o.Force, "force", false, "write a 4b-shape checkpoint (16 GB of float32 weights)")
	fs.IntVar(&o.Shape.Layers, "layers", 0, "number of decoder layers (0: the preset's)")
	fs.IntVar(&o.Shape.Hidden, "hidden", 0, "hidden size; head_dim becomes hidden / query heads (0: the preset's)")
	fs.IntVar(&o.Shape.Intermediate, "intermediate", 0, "MLP intermediate size (0: the preset's)")
	fs.Float64Var(&o.Shape.RopeTheta, "rope-theta", 0, "RoPE θ (0: the preset's, 1e6 as Qwen3)")
	fs.IntVar(&o.Shape.Heads, "heads", 0, "query heads (0: the preset's); head_dim = hidden / heads")
	fs.IntVar(&o.Shape.KVHeads, "kv-heads", 0, "key-value heads, dividing --heads (0: the preset's, or --heads/2 when --heads is given)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return badInput("--out is required")
	}
	if o.TokenizerPath != "" && (*turnsFile != "" || *vocab != 0 || *style != "") {
		return badInput("--tokenizer copies a tokenizer in: --tokenizer-vocab, --tokenizer-turns and --tokenizer-prompt shape the learned one")
	}
	if o.TokenizerPath == "" {
		extra, n, err := textpolicy.TokenizerExtras(*style, *turnsFile)
		if err != nil {
			return err
		}
		if n > 0 {
			fmt.Fprintf(stdout, "tokenizer corpus: the testbed's texts and %d engineer training turns of %s\n", n, *turnsFile)
		}
		js, err := textpolicy.TinyTokenizerJSON(*vocab, extra...)
		if err != nil {
			return badInput("--tokenizer-vocab: %v", err)
		}
		// The tiny preset takes exactly the tokenizer's ids: no id the model can sample decodes to nothing.
		o.Tokenizer, o.TokenizerConfig, o.ExactVocab = js, []byte(hfmodel.TokenizerConfigJSON), o.Preset == hfmodel.PresetTiny
	}
	written, err := hfmodel.Init(*out, o, func(cfg hfmodel.Config) { o.WritePlan(stdout, cfg) })
	var large *hfmodel.LargeCheckpointError
	if errors.As(err, &large) {
		return badInput("%s", strings.Replace(strings.TrimPrefix(large.Error(), "qwen3: "), "set Force", "pass --force", 1))
	} else if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (vocab %d, seed %d)\n", *out, written.VocabSize, o.Seed)
	return nil
}

func modelInspect(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t model inspect", "t2t model inspect DIR", stderr)
	dirs, err := parseArgs(fs, args)
	if err != nil {
		return err
	}
	if len(dirs) != 1 {
		return badInput("want one checkpoint directory, got %d arguments", len(dirs))
	}
	ins, err := hfmodel.Inspect(dirs[0])
	if err != nil {
		return badInput("%v", err)
	}
	return ins.WriteText(stdout)
}

func modelLogits(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t model logits", "t2t model logits --model DIR [--text T]... [--texts FILE] [--vocab N]", stderr)
	dir := fs.String("model", "", "checkpoint directory (required)")
	var texts []string
	fs.Func("text", "a text to encode and run (repeatable)", func(t string) error { texts = append(texts, t); return nil })
	textsFile := fs.String("texts", "", "a file of texts, one per line")
	vocab := fs.Int("vocab", 0, "write only the first N vocabulary entries of each position's logits (0: all)")
	device := fs.String("device", "cpu", train.DeviceHelp)
	ef := addEngineFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *dir == "" {
		return badInput("--model is required")
	}
	if *textsFile != "" {
		more, err := textpolicy.ReadTexts(*textsFile)
		if err != nil {
			return err
		}
		texts = append(texts, more...)
	}
	if len(texts) == 0 {
		return badInput("give at least one --text or --texts FILE")
	}
	lm, err := openLM(context.Background(), ef, *device, *dir, stderr)
	if err != nil {
		return err
	}
	defer lm.Close()
	res, err := lm.Logits(texts, *vocab)
	var oe *fielderr.Error
	if errors.As(err, &oe) {
		return badInput("text %v %s", oe.Value, oe.Reason)
	} else if err != nil {
		return err
	}
	return writeJSONL("-", stdout, res)
}
