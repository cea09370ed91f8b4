package textpolicy

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dlclark/regexp2"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// tpSplitWords cuts a line into the words of the tiny pre-tokenizer: the matches of
// TinySplitPattern and the text between them (its own regexp2 run, not the tokenizer's).
func tpSplitWords(t *testing.T, line string) []string {
	t.Helper()
	re := regexp2.MustCompile(TinySplitPattern, regexp2.None)
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

// tpNaiveMerges is the reference BPE trainer: recount every pair from scratch before each
// merge, on every word of every line of the corpus (not the distinct words with counts).
func tpNaiveMerges(t *testing.T, texts []string, maxMerges int) [][2]string {
	var lines [][][]byte
	for _, text := range texts {
		for _, seg := range bpeSplitAdded(text) {
			for _, l := range strings.SplitAfter(seg, "\n") {
				for _, w := range tpSplitWords(t, l) {
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
	alphabet := []string{"a", "b", "ab", " ", "\n", "é", "<|im_end|>", "Agent 0: ", "UP ", "DOWN ", "  H", " .", "12"}
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
	got, want := tpMerges(t, js), tpNaiveMerges(t, texts, 60)
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
	// Merges stop when every frequent word is one token, before the cap.
	const tinyVocab = 1228
	if tok.VocabSize() != tinyVocab {
		t.Fatalf("vocab %d, want %d", tok.VocabSize(), tinyVocab)
	}
	for i, s := range TinyAddedTokens {
		id, ok := tok.TokenID(s)
		if !ok || int(id) != tinyVocab-len(TinyAddedTokens)+i {
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
		// The rules and format text is learned whole, the map and the numbers are spelled out:
		// a prompt is ~8-11× shorter than its bytes.
		if len(ids) > len(text)/7 {
			t.Fatalf("%dx%d, %d agents: %d bytes → %d tokens; want ≤ %d", size, size, agents, len(text), len(ids), len(text)/7)
		}
	}
	if _, err := TrainBPEJSON([]string{"x"}, 100); err == nil {
		t.Fatal("vocab 100 accepted")
	}
}

// The tiny tokenizer never merges what a model must reason about: every move word (with or
// without its leading space) and every digit is a token of its own, in prompts, answers and
// any text; a map cell that is ice or a hole is one token; decoding gives the text back.
func TestTinyTokenizerAtoms(t *testing.T) {
	seed := tpTestSeed(t)
	js, err := TinyTokenizerJSON(DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	moves := []string{"UP", "DOWN", "LEFT", "RIGHT", "WAIT"}
	for _, m := range moves {
		for _, w := range []string{m, " " + m} {
			if ids := tok.Encode(w); len(ids) != 1 {
				t.Fatalf("%q is %d tokens", w, len(ids))
			}
		}
	}
	for d := range 10 {
		if ids := tok.Encode(string(rune('0' + d))); len(ids) != 1 {
			t.Fatalf("digit %d is %d tokens", d, len(ids))
		}
	}
	// check fails when a token holds a digit and anything else, or a move word and anything
	// but its leading space.
	check := func(text string) {
		t.Helper()
		ids := tok.Encode(text)
		if got := tok.Decode(ids); got != text {
			t.Fatalf("round trip %q → %q", text, got)
		}
		for _, id := range ids {
			piece := tok.Decode([]int32{id})
			if strings.ContainsAny(piece, "0123456789") && len(piece) != 1 {
				t.Fatalf("token %q (in %q) holds a digit and more", piece, text)
			}
			for _, m := range moves {
				if strings.Contains(piece, m) && piece != m && piece != " "+m {
					t.Fatalf("token %q (in %q) holds move %s and more", piece, text, m)
				}
			}
		}
	}
	rng := rand.New(rand.NewPCG(seed, 3))
	for range 30 {
		size := 3 + rng.IntN(8)
		in, err := env.GenerateSeeded(size, rng.IntN(size*size/4+1), 2+rng.IntN(2), false, rng.Uint64())
		if err != nil {
			continue
		}
		opt := env.DefaultPromptOptions()
		if rng.IntN(3) == 0 {
			opt.Format = env.AnswerJSON
		}
		check(ChatText(env.RenderPrompt(in, opt), rng.IntN(2) == 0))
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			continue
		}
		mv, err := env.PlanMoves(&sol.Plan)
		if err != nil {
			t.Fatal(err)
		}
		answer := env.FormatMoves(mv)
		check(answer + tokenizer.ImEnd)
		// A map row's ice and hole cells are one token each, with their padding.
		for _, cell := range []string{"  .", "   .", "  H", "   H"} {
			if ids := tok.Encode(cell); len(ids) != 1 {
				t.Fatalf("cell %q is %d tokens", cell, len(ids))
			}
		}
	}
	// Text the corpus never held: moves glued to other moves, digits and letters.
	alphabet := []string{"UP", "DOWN", "LEFT", "RIGHT", "WAIT", " ", "\n", "0", "7", "12", "Agent ", ":", "x", "é", "(", ")", ".", "H"}
	for range 200 {
		var sb strings.Builder
		for range 1 + rng.IntN(20) {
			sb.WriteString(alphabet[rng.IntN(len(alphabet))])
		}
		text := sb.String()
		ids := tok.Encode(text)
		if got := tok.Decode(ids); got != text {
			t.Fatalf("round trip %q → %q", text, got)
		}
		for _, id := range ids {
			if piece := tok.Decode([]int32{id}); strings.ContainsAny(piece, "0123456789") && len(piece) != 1 {
				t.Fatalf("token %q (in %q) holds a digit and more", piece, text)
			}
		}
	}
}
