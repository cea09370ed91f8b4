package textpolicy

import (
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
)

// TextLogits are one text's token ids and, per position, its next-token
// logits: what `t2t model logits` writes, one JSON line per text, for
// parity checks against other runtimes.
type TextLogits struct {
	Text   string      `json:"text"`
	IDs    []int32     `json:"ids"`
	Logits [][]float32 `json:"logits"` // per position, the first keep vocabulary entries (all with 0)
}

// Encode tokenizes each text; a text that encodes to no token is an
// *fielderr.Error naming it (1-based).
func (lm *LM) Encode(texts []string) ([][]int32, error) {
	seqs := make([][]int32, len(texts))
	for i, t := range texts {
		seqs[i] = lm.Tok.Encode(t)
		if len(seqs[i]) == 0 {
			return nil, &fielderr.Error{Kind: ErrOptions, Field: "text", Value: i + 1, Reason: "encodes to no token"}
		}
	}
	return seqs, nil
}

// Logits runs lm on texts (Encode) and keeps the first keep vocabulary
// entries of each position's logits (all with 0).
func (lm *LM) Logits(texts []string, keep int) ([]TextLogits, error) {
	seqs, err := lm.Encode(texts)
	if err != nil {
		return nil, err
	}
	logits, err := lm.Model.Logits(seqs)
	if err != nil {
		return nil, err
	}
	v := lm.Model.Config().VocabSize
	out := make([]TextLogits, len(texts))
	for i, t := range texts {
		out[i] = TextLogits{Text: t, IDs: seqs[i]}
		for p := range seqs[i] {
			row := logits[i][p*v : (p+1)*v]
			if keep > 0 && keep < v {
				row = row[:keep]
			}
			out[i].Logits = append(out[i].Logits, row)
		}
	}
	return out, nil
}

// ReadTexts reads a file of texts, one per line (`t2t model logits
// --texts`; a last newline ends the last text). A file that cannot be read
// is a *fielderr.Error whose message is the read error's.
func ReadTexts(path string) ([]string, error) {
	b, err := limits.ReadFile(path, limits.Text)
	if err != nil {
		return nil, &fielderr.Error{Err: err}
	}
	return strings.Split(strings.TrimRight(string(b), "\n"), "\n"), nil
}
