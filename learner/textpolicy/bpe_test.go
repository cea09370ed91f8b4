package textpolicy

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// TestTinyTokenizerBytes pins the bytes of the tokenizer.json that `t2t model init` writes
// (and of two small trainings): the sha256 values were taken from the trainer before it moved
// from textpolicy to tokenizer.TrainBPE. A change here changes every tiny checkpoint's
// tokenizer.
func TestTinyTokenizerBytes(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		build func() ([]byte, error)
		sha   string
	}{
		{"tiny default", func() ([]byte, error) { return TinyTokenizerJSON(DefaultTinyVocab) },
			"9ba87a685c2cf0f73048e6e5252571fd2ac24bc7d01c53d581693df77621cabe"},
		{"tiny 300", func() ([]byte, error) { return TinyTokenizerJSON(300) },
			"0456cdfccfc9778ad77daf17730435c2a5c9868c2f2b665d359ae6cdc5eb90bf"},
		{"ab", func() ([]byte, error) { return TrainBPEJSON([]string{"ab\n"}, 262) },
			"a5ff81fb14d5728d4b4b00e9985474a50a69196cce995b23aa8f6f04299f3125"},
	}
	for _, c := range cases {
		js, err := c.build()
		if err != nil {
			t.Fatal(err)
		}
		if sum := sha256.Sum256(js); hex.EncodeToString(sum[:]) != c.sha {
			t.Errorf("%s: sha256 %x, want %s", c.name, sum, c.sha)
		}
	}
}

// The tiny tokenizer is deterministic, loads, round-trips, and keeps prompts short.
func TestTinyTokenizer(t *testing.T) {
	t.Parallel()
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
	const tinyVocab = DefaultTinyVocab
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
	if _, err := TrainBPEJSON([]string{"x"}, 100); !errors.Is(err, tokenizer.ErrTrain) {
		t.Fatalf("vocab 100: %v, want tokenizer.ErrTrain", err)
	}
}

// tpStyleCorpus returns the options of prompt style and its StyleCorpus.
func tpStyleCorpus(t *testing.T, style string) (env.PromptOptions, []string) {
	t.Helper()
	opt, err := env.PromptStyle(style)
	if err != nil {
		t.Fatal(err)
	}
	texts, err := StyleCorpus(opt)
	if err != nil {
		t.Fatal(err)
	}
	return opt, texts
}

// tpTokenizer is the tiny tokenizer learned with extra texts (TinyTokenizerJSON(0, extra...)).
func tpTokenizer(t *testing.T, extra ...string) *tokenizer.Tokenizer {
	t.Helper()
	js, err := TinyTokenizerJSON(0, extra...)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// A tokenizer that also learned the cells style (StyleCorpus) spells a cells prompt and its
// answer of cells in fewer tokens than the default one, and still keeps every digit a token
// of its own: a cell [r,c] is read and written as its row and column digits.
func TestStyleCorpusTokenizer(t *testing.T) {
	t.Parallel()
	seed := tpTestSeed(t)
	opt, texts := tpStyleCorpus(t, env.PromptCells)
	plain, styled := tpTokenizer(t), tpTokenizer(t, texts...)
	rng := rand.New(rand.NewPCG(seed, 5))
	var nPlain, nStyled, n int
	for range 20 {
		size := 3 + rng.IntN(8)
		in, err := env.GenerateSeeded(size, rng.IntN(size*size/4+1), 2+rng.IntN(2), false, rng.Uint64())
		if err != nil {
			continue
		}
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			continue
		}
		text := ChatText(env.RenderPrompt(in, opt), false) + env.FormatCells(&sol.Plan) + tokenizer.ImEnd
		ids := styled.Encode(text)
		if got := styled.Decode(ids); got != text {
			t.Fatalf("round trip %q → %q", text, got)
		}
		for _, id := range ids {
			if piece := styled.Decode([]int32{id}); strings.ContainsAny(piece, "0123456789") && len(piece) != 1 {
				t.Fatalf("token %q holds a digit and more", piece)
			}
		}
		nPlain += len(plain.Encode(text))
		nStyled += len(ids)
		n++
	}
	t.Logf("%d cells prompts and answers: %d tokens with the default tokenizer, %d with the cells style learned", n, nPlain, nStyled)
	if n == 0 || nStyled >= nPlain {
		t.Fatalf("%d texts: %d tokens with the style learned, %d without", n, nStyled, nPlain)
	}
}

// The tiny tokenizer never merges what a model must reason about: every move word (with or
// without its leading space) and every digit is a token of its own, in prompts, answers and
// any text; a map cell that is ice or a hole is one token; decoding gives the text back.
func TestTinyTokenizerAtoms(t *testing.T) {
	t.Parallel()
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

// TestTinyVocabIsAllTheCorpusYields: the default tiny tokenizer has exactly
// DefaultTinyVocab ids, and a larger cap (2048, the old default) gives the
// same bytes: merges stop when every word that occurs twice is one token.
func TestTinyVocabIsAllTheCorpusYields(t *testing.T) {
	t.Parallel()
	a, err := TinyTokenizerJSON(DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Parse(a)
	if err != nil {
		t.Fatal(err)
	}
	if tok.VocabSize() != DefaultTinyVocab {
		t.Fatalf("vocab %d, want DefaultTinyVocab = %d", tok.VocabSize(), DefaultTinyVocab)
	}
	for _, cap := range []int{DefaultTinyVocab + 1, 2048} {
		b, err := TinyTokenizerJSON(cap)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("TinyTokenizerJSON(%d) differs from TinyTokenizerJSON(%d)", cap, DefaultTinyVocab)
		}
	}
	smaller, err := TinyTokenizerJSON(DefaultTinyVocab - 1)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, smaller) {
		t.Errorf("TinyTokenizerJSON(%d) equals the default: the default is not the corpus's limit", DefaultTinyVocab-1)
	}
}

// In a grid prompt every map cell is one token, " ." or " H", with the default tokenizer and
// with one that learned the grid style: a row's label, then exactly one token per column.
func TestGridPromptOneTokenPerCell(t *testing.T) {
	t.Parallel()
	seed := tpTestSeed(t)
	opt, texts := tpStyleCorpus(t, env.PromptGrid)
	for name, extra := range map[string][]string{"default": nil, "grid style learned": texts} {
		tok := tpTokenizer(t, extra...)
		ice, hole := tok.Encode(" ."), tok.Encode(" H")
		if len(ice) != 1 || len(hole) != 1 {
			t.Fatalf("%s: \" .\" is %v and \" H\" is %v, want one token each", name, ice, hole)
		}
		rng := rand.New(rand.NewPCG(seed, 6))
		for range 20 {
			size := 3 + rng.IntN(8)
			in, err := env.GenerateSeeded(size, rng.IntN(size*size/4+1), 2+rng.IntN(3), false, rng.Uint64())
			if err != nil {
				continue
			}
			for r, row := range strings.Split(env.RenderPrompt(in, opt), "\n")[1 : 1+in.Height] {
				ids := tok.Encode(row)
				label := len(tok.Encode(fmt.Sprint("r", r)))
				if len(ids) != label+in.Width {
					t.Fatalf("%s: row %q is %d tokens, want %d for its label and one per cell", name, row, len(ids), label+in.Width)
				}
				for c, id := range ids[label:] {
					if want := map[bool]int32{false: ice[0], true: hole[0]}[in.Hole(env.Pos{R: r, C: c})]; id != want {
						t.Fatalf("%s: row %q, column %d is token %d, want %d", name, row, c, id, want)
					}
				}
			}
		}
	}
}
