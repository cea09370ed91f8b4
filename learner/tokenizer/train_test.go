package tokenizer

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"
)

// trSplitPattern is the split pattern of the tiny tokenizer (textpolicy.TinySplitPattern).
const trSplitPattern = ` ?(?:UP|DOWN|LEFT|RIGHT|WAIT)(?![A-Za-z])|[0-9]| +[.H](?![^ \n])`

// trAdded are the tiny tokenizer's added tokens (textpolicy.TinyAddedTokens).
func trAdded() []AddedToken {
	return []AddedToken{{Content: EndOfText, Special: true}, {Content: ImStart, Special: true}, {Content: ImEnd, Special: true},
		{Content: ThinkOpen}, {Content: ThinkClose}}
}

// trSplitWords cuts a line into the words of the pre-tokenizer: the matches of pattern and the
// text between them (its own regexp2 run, not the tokenizer's).
func trSplitWords(t *testing.T, pattern, line string) []string {
	t.Helper()
	if pattern == "" {
		return []string{line}
	}
	re := regexp2.MustCompile(pattern, regexp2.None)
	var words []string
	runes := []rune(line)
	last := 0
	m, err := re.FindRunesMatch(runes)
	for ; err == nil && m != nil; m, err = re.FindNextMatch(m) {
		if m.Index > last {
			words = append(words, string(runes[last:m.Index]))
		}
		words = append(words, m.String())
		last = m.Index + m.Length
	}
	if err != nil {
		t.Fatal(err)
	}
	if last < len(runes) {
		words = append(words, string(runes[last:]))
	}
	return words
}

// trNaiveMerges is the reference BPE trainer: recount every pair from scratch before each
// merge, on every word of every line of the corpus (not the distinct words with counts).
func trNaiveMerges(t *testing.T, texts []string, opt BPETrainOptions, maxMerges int) [][2]string {
	var lines [][][]byte
	for _, text := range texts {
		for _, seg := range splitAdded(text, opt.AddedTokens) {
			for _, l := range strings.SplitAfter(seg, "\n") {
				for _, w := range trSplitWords(t, opt.SplitPattern, l) {
					var toks [][]byte
					for i := range len(w) {
						toks = append(toks, []byte{w[i]})
					}
					lines = append(lines, toks)
				}
			}
		}
	}
	var out [][2]string
	for len(out) < maxMerges {
		counts := map[[2]string]int{}
		for _, l := range lines {
			for j := 0; j+1 < len(l); j++ {
				counts[[2]string{string(l[j]), string(l[j+1])}]++
			}
		}
		var best [2]string
		bestN := 1
		for p, n := range counts {
			if n > bestN || (n == bestN && bestN > 1 && p[0]+p[1] < best[0]+best[1]) ||
				(n == bestN && bestN > 1 && p[0]+p[1] == best[0]+best[1] && p[0] < best[0]) {
				best, bestN = p, n
			}
		}
		if bestN < 2 {
			break
		}
		out = append(out, best)
		for li, l := range lines {
			var nl [][]byte
			for j := 0; j < len(l); j++ {
				if j+1 < len(l) && string(l[j]) == best[0] && string(l[j+1]) == best[1] {
					nl = append(nl, []byte(best[0]+best[1]))
					j++
					continue
				}
				nl = append(nl, l[j])
			}
			lines[li] = nl
		}
	}
	return out
}

func trMerges(t *testing.T, js []byte) [][2]string {
	t.Helper()
	var f struct {
		Model struct {
			Merges [][2]string `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(js, &f); err != nil {
		t.Fatal(err)
	}
	alpha := byteLevelRunes()
	inv := map[rune]byte{}
	for b, r := range alpha {
		inv[r] = byte(b)
	}
	raw := func(s string) string {
		var b []byte
		for _, r := range s {
			b = append(b, inv[r])
		}
		return string(b)
	}
	out := make([][2]string, len(f.Model.Merges))
	for i, m := range f.Model.Merges {
		out[i] = [2]string{raw(m[0]), raw(m[1])}
	}
	return out
}

// The incremental trainer learns the same merges, in the same order, as the naive one.
func TestTrainBPEMatchesNaive(t *testing.T) {
	t.Parallel()
	seed := tokTestSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []string{"a", "b", "ab", " ", "\n", "é", "<|im_end|>", "Agent 0: ", "UP ", "DOWN ", "  H", " .", "12"}
	var texts []string
	for range 30 {
		var sb strings.Builder
		for range 5 + rng.IntN(40) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, sb.String())
	}
	for _, opt := range []BPETrainOptions{
		{Vocab: 256 + 5 + 60, AddedTokens: trAdded(), SplitPattern: trSplitPattern},
		{Vocab: 256 + 1 + 60, AddedTokens: []AddedToken{{Content: ImEnd, Special: true}}},
	} {
		js, err := TrainBPE(texts, opt)
		if err != nil {
			t.Fatal(err)
		}
		got, want := trMerges(t, js), trNaiveMerges(t, texts, opt, 60)
		if len(got) != len(want) {
			t.Fatalf("pattern %q: %d merges, naive %d", opt.SplitPattern, len(got), len(want))
		}
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("pattern %q: merge %d: %q, naive %q", opt.SplitPattern, i, got[i], want[i])
			}
		}
		tok, err := Parse(js)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range texts {
			if d := tok.Decode(tok.Encode(s)); d != s {
				t.Fatalf("pattern %q: round trip %q → %q", opt.SplitPattern, s, d)
			}
		}
		if tok.VocabSize() > opt.Vocab {
			t.Fatalf("vocab %d over %d", tok.VocabSize(), opt.Vocab)
		}
		for i, a := range opt.AddedTokens {
			id, ok := tok.TokenID(a.Content)
			if !ok || int(id) != tok.VocabSize()-len(opt.AddedTokens)+i || tok.IsSpecial(id) != a.Special {
				t.Fatalf("added token %s: id %d %v", a.Content, id, ok)
			}
		}
	}
}

func TestTrainBPEErrors(t *testing.T) {
	t.Parallel()
	for _, opt := range []BPETrainOptions{
		{Vocab: 100},
		{Vocab: 256},
		{Vocab: 257, AddedTokens: trAdded()},
		{Vocab: 1<<20 + 1},
		{Vocab: 300, AddedTokens: []AddedToken{{Content: ""}}},
		{Vocab: 300, SplitPattern: "(unclosed"},
	} {
		if _, err := TrainBPE([]string{"x"}, opt); !errors.Is(err, ErrTrain) {
			t.Errorf("TrainBPE(%+v) = %v, want ErrTrain", opt, err)
		}
	}
	if _, err := TrainBPE(nil, BPETrainOptions{Vocab: 257}); err != nil {
		t.Errorf("no texts, no added tokens: %v", err)
	}
}
