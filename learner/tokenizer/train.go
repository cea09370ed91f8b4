package tokenizer

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// MaxTrainVocab bounds BPETrainOptions.Vocab: a cap that no corpus here reaches, so TrainBPE
// with it learns every merge its texts yield.
const MaxTrainVocab = 1 << 20

// BPETrainOptions configures TrainBPE.
type BPETrainOptions struct {
	// Vocab is the number of ids of the tokenizer: the 256 bytes, the merges learned and the
	// added tokens. Merges stop before it when no pair occurs twice. It must be in
	// [256+len(AddedTokens)+1, 1<<20].
	Vocab int
	// AddedTokens follow the merges, in this order (their ID fields are ignored; the other
	// fields go to tokenizer.json as they are). Training texts are cut at their contents, and
	// merges never cross a cut.
	AddedTokens []AddedToken
	// SplitPattern is the regex of a Split pre-tokenizer (behaviour Isolated: each match is a
	// word, and so is each stretch of text between matches) that runs before ByteLevel
	// (use_regex false). No merge crosses a word boundary. "" means no Split: words are cut at
	// newlines only.
	SplitPattern string
}

// TrainBPE learns a byte-level BPE from texts and returns it as a Hugging Face tokenizer.json
// that Parse (and Hugging Face tokenizers) load:
//
//   - ids 0..255 are the 256 bytes in GPT-2's byte-level alphabet;
//   - then up to Vocab−256−len(AddedTokens) merges, the most frequent adjacent pair first (ties
//     go to the pair whose merged bytes sort first, then to the lower ids); merges stop early
//     when no pair occurs twice;
//   - then opt.AddedTokens.
//
// Texts are cut at added tokens, after each newline and by the pre-tokenizer (Split on
// opt.SplitPattern, then ByteLevel); merges never cross those cuts, so encoding a text equals
// encoding its lines one by one. The normalizer is NFC, the decoder ByteLevel. The output
// depends only on texts and opt: the same bytes every time.
//
// It fails with an error wrapping ErrTrain for options out of range.
func TrainBPE(texts []string, opt BPETrainOptions) ([]byte, error) {
	nAdded := len(opt.AddedTokens)
	if opt.Vocab < 256+nAdded+1 || opt.Vocab > MaxTrainVocab {
		return nil, fmt.Errorf("%w: vocab %d: must be in [%d, %d]", ErrTrain, opt.Vocab, 256+nAdded+1, MaxTrainVocab)
	}
	for i, a := range opt.AddedTokens {
		if a.Content == "" {
			return nil, fmt.Errorf("%w: added token %d is empty", ErrTrain, i)
		}
	}
	maxMerges := opt.Vocab - 256 - nAdded
	tokBytes := make([][]byte, 256, opt.Vocab)
	for b := range 256 {
		tokBytes[b] = []byte{byte(b)}
	}
	// The words come from the pre-tokenizer that encoding runs: a tokenizer with the same
	// pipeline and no merges yet.
	js, err := trainJSON(tokBytes, nil, &opt)
	if err != nil {
		return nil, err
	}
	pre, err := Parse(js)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrTrain, err)
	}
	words := trainWords(texts, pre, opt.AddedTokens)
	pairs := map[trainPair]int{}
	for _, w := range words {
		for j := 0; j+1 < len(w.ids); j++ {
			pairs[trainPair{w.ids[j], w.ids[j+1]}] += w.count
		}
	}
	var merges []trainPair
	for len(merges) < maxMerges {
		best, bestBytes := trainBestPair(pairs, tokBytes)
		if bestBytes == nil {
			break // no pair occurs twice
		}
		id := int32(len(tokBytes))
		tokBytes = append(tokBytes, bestBytes)
		merges = append(merges, best)
		for wi := range words {
			words[wi].merge(best, id, pairs)
		}
		for p, n := range pairs {
			if n <= 0 {
				delete(pairs, p)
			}
		}
	}
	return trainJSON(tokBytes, merges, &opt)
}

// trainBestPair returns the most frequent pair occurring at least twice
// (ties: merged bytes first, then lower ids) and its merged bytes, or nil
// bytes when no pair occurs twice.
func trainBestPair(pairs map[trainPair]int, tokBytes [][]byte) (trainPair, []byte) {
	best, bestN := trainPair{}, 1
	var bestBytes []byte
	for p, n := range pairs {
		if n < bestN {
			continue
		}
		pb := append(slices.Clip(tokBytes[p.a]), tokBytes[p.b]...)
		if n > bestN || bestBytes == nil || string(pb) < string(bestBytes) ||
			(string(pb) == string(bestBytes) && (p.a < best.a || (p.a == best.a && p.b < best.b))) {
			best, bestN, bestBytes = p, n, pb
		}
	}
	return best, bestBytes
}

// trainWord is one distinct corpus word (a piece of a line, see TrainBPE) as token ids, with
// its count.
type trainWord struct {
	ids   []int32
	count int
}

// trainPair is an adjacent pair of token ids.
type trainPair struct{ a, b int32 }

// trainWords cuts texts into words (see TrainBPE) and returns the distinct ones with their
// counts, in first-seen order (deterministic).
func trainWords(texts []string, pre *Tokenizer, added []AddedToken) []trainWord {
	counts := map[string]int{}
	var order []string
	for _, t := range texts {
		for _, seg := range splitAdded(t, added) {
			for len(seg) > 0 {
				i := strings.IndexByte(seg, '\n')
				line := seg
				if i >= 0 {
					line = seg[:i+1]
				}
				seg = seg[len(line):]
				for _, w := range pre.PreTokenize(line) {
					if counts[w] == 0 {
						order = append(order, w)
					}
					counts[w]++
				}
			}
		}
	}
	words := make([]trainWord, len(order))
	for i, w := range order {
		ids := make([]int32, len(w))
		for j := range len(w) {
			ids[j] = int32(w[j])
		}
		words[i] = trainWord{ids: ids, count: counts[w]}
	}
	return words
}

// merge replaces each occurrence of p in w by id, keeping the pair counts up to date.
func (w *trainWord) merge(p trainPair, id int32, pairs map[trainPair]int) {
	if !w.contains(p) {
		return
	}
	for j := 0; j+1 < len(w.ids); j++ {
		pairs[trainPair{w.ids[j], w.ids[j+1]}] -= w.count
	}
	out := w.ids[:0]
	for j := 0; j < len(w.ids); j++ {
		if j+1 < len(w.ids) && w.ids[j] == p.a && w.ids[j+1] == p.b {
			out = append(out, id)
			j++
			continue
		}
		out = append(out, w.ids[j])
	}
	w.ids = out
	for j := 0; j+1 < len(w.ids); j++ {
		pairs[trainPair{w.ids[j], w.ids[j+1]}] += w.count
	}
}

func (w *trainWord) contains(p trainPair) bool {
	for j := 0; j+1 < len(w.ids); j++ {
		if w.ids[j] == p.a && w.ids[j+1] == p.b {
			return true
		}
	}
	return false
}

// splitAdded cuts text at the added tokens' contents, dropping them and empty pieces.
func splitAdded(text string, added []AddedToken) []string {
	segs := []string{text}
	for _, a := range added {
		var next []string
		for _, s := range segs {
			next = append(next, strings.Split(s, a.Content)...)
		}
		segs = next
	}
	return slices.DeleteFunc(segs, func(s string) bool { return s == "" })
}

// trainJSON writes the tokenizer.json of a byte-level BPE whose token i has bytes tokBytes[i]
// (the first 256 are the single bytes) and whose merges, in rank order, are merges.
func trainJSON(tokBytes [][]byte, merges []trainPair, opt *BPETrainOptions) ([]byte, error) {
	alpha := byteLevelRunes()
	str := func(b []byte) string {
		var sb strings.Builder
		for _, c := range b {
			sb.WriteRune(alpha[c])
		}
		return sb.String()
	}
	vocab := make(map[string]int, len(tokBytes))
	for i, b := range tokBytes {
		s := str(b)
		if _, dup := vocab[s]; dup {
			return nil, fmt.Errorf("%w: token %q learned twice", ErrTrain, s)
		}
		vocab[s] = i
	}
	ms := make([][2]string, len(merges))
	for i, m := range merges {
		ms[i] = [2]string{str(tokBytes[m.a]), str(tokBytes[m.b])}
	}
	added := make([]map[string]any, len(opt.AddedTokens))
	for i, a := range opt.AddedTokens {
		added[i] = map[string]any{
			"id": len(tokBytes) + i, "content": a.Content, "single_word": a.SingleWord, "lstrip": a.LStrip,
			"rstrip": a.RStrip, "normalized": a.Normalized, "special": a.Special,
		}
	}
	byteLevel := map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false}
	pres := []any{byteLevel}
	if opt.SplitPattern != "" {
		split := map[string]any{"type": "Split", "pattern": map[string]any{"Regex": opt.SplitPattern}, "behavior": "Isolated", "invert": false}
		pres = []any{split, byteLevel}
	}
	return json.MarshalIndent(map[string]any{
		"version":        "1.0",
		"truncation":     nil,
		"padding":        nil,
		"added_tokens":   added,
		"normalizer":     map[string]any{"type": "NFC"},
		"pre_tokenizer":  map[string]any{"type": "Sequence", "pretokenizers": pres},
		"post_processor": nil,
		"decoder":        byteLevel,
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": ms,
		},
	}, "", " ")
}
