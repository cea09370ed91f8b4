package hfmodel

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// WriteText writes the summary t2t model inspect prints: the configuration, the parameters by
// dtype, the tensor groups, the problems Load would have, the tokenizer (loaded from the
// directory's tokenizer.json, checked against the vocabulary) and the training memory of a
// micro-batch of 8 × 2048 tokens, full and LoRA.
func (ins *Inspection) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	c := ins.Config
	fmt.Fprintf(bw, "checkpoint %s\n", ins.Dir)
	fmt.Fprintf(bw, "config: %d layers, hidden %d, heads %d q / %d kv × head_dim %d, intermediate %d, vocab %d, rope θ %g, rms ε %g, tied %v, context %d, torch_dtype %s\n",
		c.NumHiddenLayers, c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.IntermediateSize, c.VocabSize,
		c.RopeTheta, c.RMSNormEps, c.TieWordEmbeddings, c.MaxPositionEmbeddings, c.TorchDType)
	fmt.Fprintf(bw, "parameters: %d (config: %d) in %d tensors, %.2f MiB of weights\n", ins.Params, c.NumParams(), ins.Tensors, float64(ins.Bytes)/(1<<20))
	dts := make([]string, 0, len(ins.ParamsByDType))
	for d := range ins.ParamsByDType {
		dts = append(dts, d)
	}
	sort.Strings(dts)
	for _, d := range dts {
		fmt.Fprintf(bw, "  dtype %-4s %d parameters\n", d, ins.ParamsByDType[d])
	}
	fmt.Fprintln(bw, "tensors:")
	for _, g := range ins.Groups {
		count := ""
		if g.Count > 1 {
			count = fmt.Sprintf(" ×%d", g.Count)
		}
		fmt.Fprintf(bw, "  %-52s %-4s %v%s\n", g.Pattern, g.DType, g.Shape, count)
	}
	if len(ins.Problems) == 0 {
		fmt.Fprintln(bw, "weights: every tensor the config needs is present with its shape")
	} else {
		fmt.Fprintf(bw, "weights: %d problem(s) — Load would fail:\n", len(ins.Problems))
		for _, p := range ins.Problems {
			fmt.Fprintf(bw, "  %s\n", p)
		}
	}
	ins.writeTokenizer(bw)
	for _, lora := range []bool{false, true} {
		name := "full fine-tuning"
		if lora {
			name = "LoRA r16 "
		}
		fmt.Fprintf(bw, "memory, %s (micro-batch 8 × 2048 tokens): %s\n", name, EstimateMemory(c, 8, 2048, lora))
	}
	return bw.Flush()
}

// writeTokenizer writes the tokenizer line(s) of WriteText.
func (ins *Inspection) writeTokenizer(w io.Writer) {
	if _, ok := ins.Files["tokenizer.json"]; !ok {
		fmt.Fprintln(w, "tokenizer: none (no tokenizer.json)")
		return
	}
	tok, err := tokenizer.Load(filepath.Join(ins.Dir, "tokenizer.json"))
	if err != nil {
		fmt.Fprintf(w, "tokenizer: %v\n", err)
		return
	}
	var added []string
	for _, a := range tok.AddedTokens() {
		added = append(added, a.Content)
	}
	fmt.Fprintf(w, "tokenizer: %d ids, added tokens %s\n", tok.VocabSize(), strings.Join(added, " "))
	if tok.VocabSize() > ins.Config.VocabSize {
		fmt.Fprintf(w, "  warning: the tokenizer has more ids than the model's vocab_size %d\n", ins.Config.VocabSize)
	}
}
