package textpolicy

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// tpNaiveMerges is the reference BPE trainer: recount every pair from scratch before each
// merge, on every line of the corpus (not the distinct lines with counts).
func tpNaiveMerges(texts []string, maxMerges int) [][2]string {
	var lines [][][]byte
	for _, t := range texts {
		for _, seg := range bpeSplitAdded(t) {
			for _, l := range strings.SplitAfter(seg, "\n") {
				if l == "" {
					continue
				}
				var toks [][]byte
				for i := range len(l) {
					toks = append(toks, []byte{l[i]})
				}
				lines = append(lines, toks)
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

func tpMerges(t *testing.T, js []byte) [][2]string {
	t.Helper()
	var f struct {
		Model struct {
			Merges [][2]string `json:"merges"`
		} `json:"model"`
	}
	if err := json.Unmarshal(js, &f); err != nil {
		t.Fatal(err)
	}
	alpha := byteLevelAlphabet()
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
	seed := tpTestSeed(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	alphabet := []string{"a", "b", "ab", " ", "\n", "é", "<|im_end|>", "Agent 0: ", "UP ", "DOWN "}
	var texts []string
	for range 30 {
		var sb strings.Builder
		for range 5 + rng.IntN(40) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		texts = append(texts, sb.String())
	}
	js, err := TrainBPEJSON(texts, 256+len(TinyAddedTokens)+60)
	if err != nil {
		t.Fatal(err)
	}
	got, want := tpMerges(t, js), tpNaiveMerges(texts, 60)
	if len(got) != len(want) {
		t.Fatalf("%d merges, naive %d", len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("merge %d: %q, naive %q", i, got[i], want[i])
		}
	}
	tok, err := tokenizer.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range texts {
		if d := tok.Decode(tok.Encode(s)); d != s {
			t.Fatalf("round trip %q → %q", s, d)
		}
	}
}

// The tiny tokenizer is deterministic, loads, round-trips, and keeps prompts short.
func TestTinyTokenizer(t *testing.T) {
	seed := tpTestSeed(t)
	a, err := TinyTokenizerJSON(DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	b, err := TinyTokenizerJSON(DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two builds of the tiny tokenizer differ")
	}
	tok, err := tokenizer.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != DefaultTinyVocab {
		t.Fatalf("vocab %d, want %d", tok.VocabSize(), DefaultTinyVocab)
	}
	for i, s := range TinyAddedTokens {
		id, ok := tok.TokenID(s)
		if !ok || int(id) != DefaultTinyVocab-len(TinyAddedTokens)+i {
			t.Fatalf("added token %s: id %d %v", s, id, ok)
		}
	}
	rng := rand.New(rand.NewPCG(seed, 2))
	for range 20 {
		size := 3 + rng.IntN(8)
		agents := 2 + rng.IntN(3)
		in, err := env.GenerateSeeded(size, rng.IntN(size*size/4+1), min(agents, size), false, rng.Uint64())
		if err != nil {
			continue
		}
		text := ChatText(env.RenderPrompt(in, env.DefaultPromptOptions()), rng.IntN(2) == 0)
		ids := tok.Encode(text)
		if tok.Decode(ids) != text {
			t.Fatalf("round trip failed for %s", in.ID)
		}
		// The rules and format text is learned whole: a prompt is ~30× shorter than its bytes.
		if len(ids) > len(text)/12 {
			t.Fatalf("%dx%d, %d agents: %d bytes → %d tokens; want ≤ %d", size, size, agents, len(text), len(ids), len(text)/12)
		}
	}
	if _, err := TrainBPEJSON([]string{"x"}, 100); err == nil {
		t.Fatal("vocab 100 accepted")
	}
}
