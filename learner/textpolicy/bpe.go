package textpolicy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// Tiny tokenizer defaults (see TinyTokenizerJSON).
const (
	// DefaultTinyVocab is the vocabulary cap of the tokenizer that `t2t model init` writes when
	// no tokenizer is given. Merges stop before it, when every word that occurs twice in the
	// corpus is one token: 256 bytes, 967 merges and 5 added tokens make 1,228 ids.
	DefaultTinyVocab = 2048
	// tinyCorpusSeed seeds the instances whose prompts and answers make the training corpus.
	tinyCorpusSeed = 0x7e57
)

// TinyAddedTokens are the added tokens of the tiny tokenizer, in id order after the byte-level
// vocabulary and the merges: Qwen3's chat markers and think tags (the first three special).
var TinyAddedTokens = []string{tokenizer.EndOfText, tokenizer.ImStart, tokenizer.ImEnd, tokenizer.ThinkOpen, tokenizer.ThinkClose}

// TinySplitPattern is the regex of the tiny tokenizer's Split pre-tokenizer (behaviour
// Isolated): each match is a word of its own, and so is each stretch of text between matches.
// The matches are what a model must reason about, one token each (see TinyTokenizerJSON):
//
//   - a move word, with its leading space if any: UP, DOWN, LEFT, RIGHT, WAIT (" UP", "UP", …),
//     not followed by a letter;
//   - a single digit, so coordinates, sizes and agent numbers are spelled digit by digit;
//   - a map cell that is ice or a hole (".", "H") with the spaces before it, when a space, a
//     newline or the end follows it ("   H" in a map row, never the "." ending a sentence).
//
// It uses only constructs that Oniguruma (Hugging Face tokenizers) and regexp2 read alike.
const TinySplitPattern = ` ?(?:UP|DOWN|LEFT|RIGHT|WAIT)(?![A-Za-z])|[0-9]| +[.H](?![^ \n])`

// TinyTokenizerJSON returns a small byte-level BPE tokenizer.json for the tiny random
// checkpoints that tests and `t2t model init` build when no real tokenizer is at hand. It is
// learned, deterministically, from the testbed's own texts (TinyCorpus), so that prompts are
// short and a tiny model's context stays small:
//
//   - ids 0..255 are the 256 bytes in GPT-2's byte-level alphabet;
//   - then up to vocab−261 merges learned by byte-pair encoding on the corpus words (the most
//     frequent adjacent pair first; ties go to the pair whose merged bytes sort first); merges
//     stop early when no pair occurs twice;
//   - then the added tokens TinyAddedTokens (<|endoftext|>, <|im_start|>, <|im_end|>, <think>,
//     </think>).
//
// The pre-tokenizer is a Sequence of a Split on TinySplitPattern (Isolated) and ByteLevel with
// use_regex false, the shape of Qwen3's. Between the pattern's matches there is no further
// split, so merges span words: the fixed text of the prompt (the rules, the answer format)
// becomes a few tokens per line. But no merge crosses a match, so every move word and every
// digit stays a token of its own that a model can read and write one at a time — a tokenizer
// that merges whole answer lines ("Agent 0: UP RIGHT\n") leaves a model to classify opaque
// plans. Training also never merges across a newline, so encoding text equals encoding its
// lines one by one. vocab must be in [261+1, 1<<20].
func TinyTokenizerJSON(vocab int) ([]byte, error) {
	corpus, err := TinyCorpus()
	if err != nil {
		return nil, err
	}
	return TrainBPEJSON(corpus, vocab)
}

// TinyCorpus returns the texts TinyTokenizerJSON learns from: each move word alone, and for 64
// training instances (2 agents, sizes 3..10) and a small 3/4/5-agent suite, the
// chat-formatted prompt in the text and JSON answer forms, and the optimal plan in the
// canonical answer form. It depends on
// nothing but the env package's generator and renderers.
func TinyCorpus() ([]string, error) {
	cfg := env.DefaultConfig()
	cfg.Instances = 64
	ins, err := env.Generate(cfg, tinyCorpusSeed, 0, cfg.Instances)
	if err != nil {
		return nil, fmt.Errorf("textpolicy: tiny corpus: %w", err)
	}
	spec := env.QuickSpec(tinyCorpusSeed, 1)
	more, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		return nil, fmt.Errorf("textpolicy: tiny corpus: %w", err)
	}
	ins = append(ins, more...)
	// Every move word, bare and after a space, twice: each becomes one token even where the
	// prompts hold only one of the two forms.
	var out []string
	for _, m := range []env.Move{env.Up, env.Down, env.Left, env.Right, env.Wait} {
		for range 2 {
			out = append(out, m.String()+"\n", " "+m.String()+"\n")
		}
	}
	for i, in := range ins {
		opt := env.DefaultPromptOptions()
		if i%4 == 3 {
			opt.Format = env.AnswerJSON
		}
		out = append(out, ChatText(env.RenderPrompt(in, opt), false))
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			continue
		}
		moves, err := env.PlanMoves(&sol.Plan)
		if err != nil {
			return nil, err
		}
		out = append(out, env.FormatMoves(moves)+tokenizer.ImEnd+"\n")
	}
	return out, nil
}

// ChatText renders one user turn with Qwen3's chat template and the generation prompt
// (thinking on or off).
func ChatText(user string, thinking bool) string {
	return tokenizer.ChatPrompt([]tokenizer.Message{{Role: tokenizer.RoleUser, Content: user}}, true, thinking)
}

// byteLevelAlphabet is GPT-2's byte → printable character map.
func byteLevelAlphabet() [256]rune {
	var m [256]rune
	n := 0
	for b := range 256 {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			m[b] = rune(b)
		} else {
			m[b] = rune(256 + n)
			n++
		}
	}
	return m
}

// bpeWord is one distinct corpus word (a piece of a line, see TrainBPEJSON) as token ids, with
// its count.
type bpeWord struct {
	ids   []int32
	count int
}

type bpePair struct{ a, b int32 }

// TrainBPEJSON learns a byte-level BPE of vocab ids (256 bytes, merges, TinyAddedTokens) from
// texts and returns it as a Hugging Face tokenizer.json (see TinyTokenizerJSON). Texts are cut
// at added tokens, after each newline and by the pre-tokenizer (TinySplitPattern); merges
// never cross those cuts.
func TrainBPEJSON(texts []string, vocab int) ([]byte, error) {
	nAdded := len(TinyAddedTokens)
	if vocab < 256+nAdded+1 || vocab > 1<<20 {
		return nil, fmt.Errorf("textpolicy: tokenizer vocab %d: must be in [%d, %d]", vocab, 256+nAdded+1, 1<<20)
	}
	maxMerges := vocab - 256 - nAdded
	tokBytes := make([][]byte, 256, vocab)
	for b := range 256 {
		tokBytes[b] = []byte{byte(b)}
	}
	// The words come from the pre-tokenizer that encoding runs: a tokenizer with the same
	// pipeline and no merges yet.
	js, err := bpeJSON(tokBytes, nil)
	if err != nil {
		return nil, err
	}
	pre, err := tokenizer.Parse(js)
	if err != nil {
		return nil, fmt.Errorf("textpolicy: tokenizer: %w", err)
	}
	// Distinct words with counts, in first-seen order (deterministic).
	counts := map[string]int{}
	var order []string
	for _, t := range texts {
		for _, seg := range bpeSplitAdded(t) {
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
	words := make([]bpeWord, len(order))
	for i, w := range order {
		ids := make([]int32, len(w))
		for j := range len(w) {
			ids[j] = int32(w[j])
		}
		words[i] = bpeWord{ids: ids, count: counts[w]}
	}
	pairs := map[bpePair]int{}
	for _, w := range words {
		for j := 0; j+1 < len(w.ids); j++ {
			pairs[bpePair{w.ids[j], w.ids[j+1]}] += w.count
		}
	}
	var merges []bpePair
	for len(merges) < maxMerges {
		best, bestN := bpePair{}, 1
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
		if bestBytes == nil {
			break // no pair occurs twice
		}
		id := int32(len(tokBytes))
		tokBytes = append(tokBytes, bestBytes)
		merges = append(merges, best)
		for wi := range words {
			w := &words[wi]
			if !bpeContains(w.ids, best) {
				continue
			}
			for j := 0; j+1 < len(w.ids); j++ {
				pairs[bpePair{w.ids[j], w.ids[j+1]}] -= w.count
			}
			out := w.ids[:0]
			for j := 0; j < len(w.ids); j++ {
				if j+1 < len(w.ids) && w.ids[j] == best.a && w.ids[j+1] == best.b {
					out = append(out, id)
					j++
					continue
				}
				out = append(out, w.ids[j])
			}
			w.ids = out
			for j := 0; j+1 < len(w.ids); j++ {
				pairs[bpePair{w.ids[j], w.ids[j+1]}] += w.count
			}
		}
		for p, n := range pairs {
			if n <= 0 {
				delete(pairs, p)
			}
		}
	}
	return bpeJSON(tokBytes, merges)
}

func bpeContains(ids []int32, p bpePair) bool {
	for j := 0; j+1 < len(ids); j++ {
		if ids[j] == p.a && ids[j+1] == p.b {
			return true
		}
	}
	return false
}

// bpeSplitAdded cuts text at the added tokens, dropping them.
func bpeSplitAdded(text string) []string {
	segs := []string{text}
	for _, a := range TinyAddedTokens {
		var next []string
		for _, s := range segs {
			next = append(next, strings.Split(s, a)...)
		}
		segs = next
	}
	return slices.DeleteFunc(segs, func(s string) bool { return s == "" })
}

// bpeJSON writes the tokenizer.json of a byte-level BPE whose token i has bytes tokBytes[i]
// (the first 256 are the single bytes) and whose merges, in rank order, are merges.
func bpeJSON(tokBytes [][]byte, merges []bpePair) ([]byte, error) {
	alpha := byteLevelAlphabet()
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
			return nil, fmt.Errorf("textpolicy: tokenizer: token %q learned twice", s)
		}
		vocab[s] = i
	}
	ms := make([][2]string, len(merges))
	for i, m := range merges {
		ms[i] = [2]string{str(tokBytes[m.a]), str(tokBytes[m.b])}
	}
	added := make([]map[string]any, len(TinyAddedTokens))
	for i, a := range TinyAddedTokens {
		added[i] = map[string]any{
			"id": len(tokBytes) + i, "content": a, "single_word": false, "lstrip": false, "rstrip": false,
			"normalized": false, "special": i < 3,
		}
	}
	return json.MarshalIndent(map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": TinySplitPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{
			"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "", "end_of_word_suffix": "",
			"fuse_unk": false, "byte_fallback": false, "ignore_merges": false, "vocab": vocab, "merges": ms,
		},
	}, "", " ")
}
