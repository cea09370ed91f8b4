package tokenizer

import (
	"encoding/json"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

var tokSeed = flag.Uint64("seed", 0, "tokenizer tests: seed for randomised tests (0 = fixed default)")

func tokTestSeed(t testing.TB) uint64 {
	s := *tokSeed
	if s == 0 {
		s = 20261202
	}
	t.Logf("seed %d (replay with -seed=%d)", s, s)
	return s
}

// tokTinyJSON builds a small byte-level tokenizer.json: the 256 byte characters (ids 0..255),
// the given merges (string form, or array form when arrays is set) with their results appended
// to the vocabulary, and added tokens after that.
func tokTinyJSON(t testing.TB, merges [][2]string, arrays bool, added []map[string]any, extra map[string]any) []byte {
	t.Helper()
	vocab := map[string]int{}
	br := byteLevelRunes()
	for b := range 256 {
		vocab[string(br[b])] = b
	}
	var ms []any
	for _, m := range merges {
		if _, ok := vocab[m[0]+m[1]]; !ok {
			vocab[m[0]+m[1]] = len(vocab)
		}
		if arrays {
			ms = append(ms, []string{m[0], m[1]})
		} else {
			ms = append(ms, m[0]+" "+m[1])
		}
	}
	next := len(vocab)
	for i, a := range added {
		if _, ok := a["id"]; !ok {
			a["id"] = next + i
		}
	}
	doc := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwenPattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": false, "use_regex": false},
		"model": map[string]any{"type": "BPE", "dropout": nil, "unk_token": nil, "continuing_subword_prefix": "",
			"end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "ignore_merges": false,
			"vocab": vocab, "merges": ms},
	}
	for k, v := range extra {
		doc[k] = v
	}
	js, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return js
}

// qwenPattern is Qwen2/Qwen3's pre-tokenizer regex.
const qwenPattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`

func tokSpecials() []map[string]any {
	var out []map[string]any
	for _, s := range []string{EndOfText, ImStart, ImEnd, ThinkOpen, ThinkClose} {
		out = append(out, map[string]any{"content": s, "special": s != ThinkOpen && s != ThinkClose, "normalized": false,
			"lstrip": false, "rstrip": false, "single_word": false})
	}
	return out
}

func tokMustParse(t testing.TB, js []byte) *Tokenizer {
	t.Helper()
	tok, err := Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// tokStrings returns the vocabulary strings of ids.
func tokStrings(t testing.TB, tok *Tokenizer, ids []int32) []string {
	t.Helper()
	out := make([]string, len(ids))
	for i, id := range ids {
		s, ok := tok.TokenString(id)
		if !ok {
			t.Fatalf("id %d is not a token", id)
		}
		out[i] = s
	}
	return out
}

func TestEncodeTinyMerges(t *testing.T) {
	t.Parallel()
	merges := [][2]string{{"h", "e"}, {"l", "l"}, {"he", "ll"}, {"hell", "o"}, {"Ġ", "w"}, {"o", "r"}, {"Ġw", "or"}, {"Ġwor", "ld"}, {"l", "d"}, {"'", "s"}}
	for _, arrays := range []bool{false, true} {
		tok := tokMustParse(t, tokTinyJSON(t, merges, arrays, tokSpecials(), nil))
		cases := []struct {
			in   string
			want []string
		}{
			{"hello world", []string{"hello", "Ġworld"}},
			{"hello  world", []string{"hello", "Ġ", "Ġworld"}}, // \s+(?!\S) leaves the last space to the word
			{"Hello", []string{"H", "e", "ll", "o"}},
			{"hello\n\nworld", []string{"hello", "Ċ", "Ċ", "w", "or", "ld"}},
			{"<|im_start|>user\nhello<|im_end|>", []string{ImStart, "u", "s", "e", "r", "Ċ", "hello", ImEnd}},
			{"a<think>b</think>", []string{"a", ThinkOpen, "b", ThinkClose}},
			{"It's 42", []string{"I", "t", "'s", "Ġ", "4", "2"}},
			{"é", []string{"Ã", "©"}},
		}
		for _, c := range cases {
			got := tokStrings(t, tok, tok.Encode(c.in))
			if !slices.Equal(got, c.want) {
				t.Errorf("arrays=%v Encode(%q) = %q, want %q", arrays, c.in, got, c.want)
			}
			if dec := tok.Decode(tok.Encode(c.in)); dec != c.in {
				t.Errorf("Decode(Encode(%q)) = %q", c.in, dec)
			}
		}
	}
}

func TestEncodeMergeRankAndTies(t *testing.T) {
	t.Parallel()
	cases := []struct {
		merges [][2]string
		in     string
		want   []string
	}{
		{[][2]string{{"a", "b"}, {"b", "c"}}, "abc", []string{"ab", "c"}},
		{[][2]string{{"b", "c"}, {"a", "b"}}, "abc", []string{"a", "bc"}},
		{[][2]string{{"a", "a"}}, "aaa", []string{"aa", "a"}},                   // leftmost first on equal rank
		{[][2]string{{"a", "a"}, {"aa", "aa"}}, "aaaaa", []string{"aaaa", "a"}}, // merged again
		{[][2]string{{"b", "c"}, {"a", "bc"}, {"a", "b"}, {"ab", "c"}}, "abc", []string{"abc"}},
		{[][2]string{{"a", "b"}, {"b", "c"}, {"a", "bc"}, {"ab", "c"}}, "abc", []string{"abc"}},
	}
	for _, c := range cases {
		tok := tokMustParse(t, tokTinyJSON(t, c.merges, false, nil, nil))
		got := tokStrings(t, tok, tok.Encode(c.in))
		if !slices.Equal(got, c.want) {
			t.Errorf("merges %v: Encode(%q) = %q, want %q", c.merges, c.in, got, c.want)
		}
	}
}

// tokNaiveBPE is the textbook algorithm: merge the lowest-ranked adjacent pair (leftmost on
// ties) until none is left.
func tokNaiveBPE(syms []string, rank map[[2]string]int) []string {
	syms = slices.Clone(syms)
	for {
		best, at := -1, -1
		for i := 0; i+1 < len(syms); i++ {
			if r, ok := rank[[2]string{syms[i], syms[i+1]}]; ok && (best < 0 || r < best) {
				best, at = r, i
			}
		}
		if at < 0 {
			return syms
		}
		syms = slices.Replace(syms, at, at+2, syms[at]+syms[at+1])
	}
}

func TestBPEMatchesNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(tokTestSeed(t), 1))
	for trial := range 40 {
		// Random merges over a 3-letter alphabet, built from tokens that exist.
		toks := []string{"a", "b", "c"}
		seen := map[[2]string]bool{}
		var merges [][2]string
		for len(merges) < 12 {
			p := [2]string{toks[rng.IntN(len(toks))], toks[rng.IntN(len(toks))]}
			if seen[p] || len(p[0]+p[1]) > 6 {
				continue
			}
			seen[p] = true
			merges = append(merges, p)
			if !slices.Contains(toks, p[0]+p[1]) {
				toks = append(toks, p[0]+p[1])
			}
		}
		rank := map[[2]string]int{}
		for i, m := range merges {
			rank[m] = i
		}
		tok := tokMustParse(t, tokTinyJSON(t, merges, trial%2 == 1, nil, nil))
		for range 30 {
			n := 1 + rng.IntN(40)
			word := make([]byte, n)
			syms := make([]string, n)
			for i := range word {
				word[i] = "abc"[rng.IntN(3)]
				syms[i] = string(word[i])
			}
			want := tokNaiveBPE(syms, rank)
			got := tokStrings(t, tok, tok.Encode(string(word)))
			if !slices.Equal(got, want) {
				t.Fatalf("trial %d merges %v: Encode(%q) = %q, naive BPE %q", trial, merges, word, got, want)
			}
		}
	}
}

func TestAddedTokenMatching(t *testing.T) {
	t.Parallel()
	added := []map[string]any{
		{"content": "<a>", "special": true},
		{"content": "<ab>", "special": true},
		{"content": "[L]", "special": false, "lstrip": true},
		{"content": "[R]", "special": false, "rstrip": true},
		{"content": "w", "special": false, "single_word": true},
	}
	tok := tokMustParse(t, tokTinyJSON(t, nil, false, added, nil))
	id := func(s string) int32 {
		v, ok := tok.TokenID(s)
		if !ok {
			t.Fatalf("no token %q", s)
		}
		return v
	}
	cases := []struct {
		in   string
		want []string
	}{
		{"x<ab>y", []string{"x", "<ab>", "y"}}, // longest at the leftmost position
		{"<a><ab>", []string{"<a>", "<ab>"}},
		{"x  [L]y", []string{"x", "[L]", "y"}}, // lstrip swallows the spaces before
		{"x[R]  y", []string{"x", "[R]", "y"}}, // rstrip those after
		{"w saw w", []string{"w", "Ġ", "s", "a", "w", "Ġ", "w"}},
	}
	for _, c := range cases {
		ids := tok.Encode(c.in)
		var got []string
		for _, i := range ids {
			s, _ := tok.TokenString(i)
			got = append(got, s)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("Encode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// single_word: the standalone "w"s are the added token, the one inside "saw" is not.
	ids := tok.Encode("w saw w")
	if ids[0] != id("w") || ids[6] != id("w") || ids[4] == id("w") {
		t.Errorf("single_word matching wrong: %v (added w = %d)", ids, id("w"))
	}
	if !tok.IsSpecial(id("<a>")) || tok.IsSpecial(id("[L]")) {
		t.Error("IsSpecial wrong")
	}
	if got := tok.DecodeSkipSpecial([]int32{id("<a>"), 120, id("[L]")}); got != "x[L]" {
		t.Errorf("DecodeSkipSpecial = %q", got)
	}
	if tok.VocabSize() != 256+len(added) {
		t.Errorf("VocabSize = %d, want %d", tok.VocabSize(), 256+len(added))
	}
}

func TestDecodeInvalidUTF8(t *testing.T) {
	t.Parallel()
	tok := tokMustParse(t, tokTinyJSON(t, nil, false, nil, nil))
	cases := []struct {
		in   []byte
		want string
	}{
		{[]byte("ok"), "ok"},
		{[]byte{0xe2, 0x82}, "\ufffd"},                   // truncated 3-byte sequence: one replacement
		{[]byte{0xe2, 0x82, 'x'}, "\ufffdx"},             // …followed by ASCII
		{[]byte{0xff, 'a'}, "\ufffda"},                   // invalid lead byte
		{[]byte{0xed, 0xa0, 0x80}, "\ufffd\ufffd\ufffd"}, // surrogate: ED is a subpart alone
		{[]byte{0xf0, 0x9f, 0x98}, "\ufffd"},             // truncated emoji
		{[]byte{0xc0, 0xaf}, "\ufffd\ufffd"},             // overlong
	}
	for _, c := range cases {
		ids := make([]int32, len(c.in))
		for i, b := range c.in {
			ids[i] = int32(b) // the tiny vocabulary's byte tokens have the byte as id
		}
		if got := tok.Decode(ids); got != c.want {
			t.Errorf("Decode(%x) = %q, want %q", c.in, got, c.want)
		}
		if got := tok.DecodeBytes(ids); string(got) != string(c.in) {
			t.Errorf("DecodeBytes(%x) = %x", c.in, got)
		}
	}
}

func TestRoundTripRandomText(t *testing.T) {
	t.Parallel()
	tok := tokMustParse(t, tokTinyJSON(t, [][2]string{{"Ġ", "Ġ"}, {"e", "r"}, {"Ġ", "t"}}, false, tokSpecials(), nil))
	rng := rand.New(rand.NewPCG(tokTestSeed(t), 2))
	alphabet := []rune("ab \n\t\r  xyzÉé日本語🙂'-_0123456789<>|/")
	pieces := []string{ImStart, ImEnd, ThinkOpen, "<|", "|>", "'s", "'LL"}
	for range 300 {
		var sb strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			if rng.IntN(8) == 0 {
				sb.WriteString(pieces[rng.IntN(len(pieces))])
			} else {
				sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
		}
		s := sb.String()
		if got := tok.Decode(tok.Encode(s)); got != norm.NFC.String(s) {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	}
	// Non-NFC input is normalised: "e" + combining acute becomes "é".
	if got := tok.Decode(tok.Encode("e\u0301")); got != "é" {
		t.Errorf("NFC normalisation: got %q", got)
	}
}

func TestBPECacheBounded(t *testing.T) {
	t.Parallel()
	tok := tokMustParse(t, tokTinyJSON(t, [][2]string{{"a", "b"}}, false, nil, nil))
	tok.cache = newBPECache(8)
	for i := range 100 {
		text := strings.Repeat("ab", 1+i%7) + string(rune('c'+i%20))
		want := tok.bpe(text)
		got := tok.Encode(text)
		if !slices.Equal(got, want) {
			t.Fatalf("Encode(%q) = %v, uncached %v", text, got, want)
		}
		if n := tok.cache.len(); n > 16 {
			t.Fatalf("cache holds %d words, bound is 2×8", n)
		}
	}
	// A long word is not cached.
	before := tok.cache.len()
	long := strings.Repeat("x", bpeCacheMaxWord+1)
	tok.Encode(long)
	tok.Encode(long)
	if _, ok := tok.cache.get(long); ok || tok.cache.len() > max(before, 16) {
		t.Error("a word longer than bpeCacheMaxWord was cached")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	base := func() map[string]any {
		var m map[string]any
		if err := json.Unmarshal(tokTinyJSON(t, [][2]string{{"a", "b"}}, false, nil, nil), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	cases := []struct {
		name   string
		edit   func(m map[string]any)
		target error
		path   string
	}{
		{"wordpiece", func(m map[string]any) { m["model"].(map[string]any)["type"] = "WordPiece" }, ErrUnsupported, "model.type"},
		{"dropout", func(m map[string]any) { m["model"].(map[string]any)["dropout"] = 0.1 }, ErrUnsupported, "model.dropout"},
		{"merge oov", func(m map[string]any) {
			m["model"].(map[string]any)["merges"] = []any{"a b", "q zz"}
		}, ErrFormat, "model.merges[1]"},
		{"merge form", func(m map[string]any) { m["model"].(map[string]any)["merges"] = []any{"ab"} }, ErrFormat, "model.merges[0]"},
		{"no model", func(m map[string]any) { delete(m, "model") }, ErrFormat, "model"},
		{"bad split", func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["behavior"] = "Contiguous"
		}, ErrUnsupported, "pre_tokenizer.pretokenizers[0].behavior"},
		{"bad regex", func(m map[string]any) {
			m["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": "(("}
		}, ErrFormat, "pre_tokenizer.pretokenizers[0].pattern"},
		{"no byte level", func(m map[string]any) {
			m["pre_tokenizer"] = map[string]any{"type": "Split", "pattern": map[string]any{"String": " "}, "behavior": "Removed"}
		}, ErrUnsupported, "pre_tokenizer"},
		{"normalizer", func(m map[string]any) { m["normalizer"] = map[string]any{"type": "Precompiled"} }, ErrUnsupported, "normalizer.type"},
		{"decoder", func(m map[string]any) { m["decoder"] = map[string]any{"type": "WordPiece"} }, ErrUnsupported, "decoder.type"},
	}
	for _, c := range cases {
		m := base()
		c.edit(m)
		js, _ := json.Marshal(m)
		_, err := Parse(js)
		var fe *FormatError
		if !errors.Is(err, c.target) || !errors.As(err, &fe) || fe.Path != c.path {
			t.Errorf("%s: got %v, want %v at %s", c.name, err, c.target, c.path)
		}
	}
	if _, err := Parse([]byte("{")); !errors.Is(err, ErrFormat) {
		t.Errorf("truncated JSON: %v", err)
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
}

func TestSplitRemovedAndGPT2ByteLevel(t *testing.T) {
	t.Parallel()
	// A GPT-2 style pipeline: ByteLevel with its own regex and a prefix space.
	js := tokTinyJSON(t, [][2]string{{"Ġ", "h"}, {"Ġh", "i"}}, false, nil, map[string]any{
		"normalizer":    nil,
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": true, "use_regex": true},
	})
	tok := tokMustParse(t, js)
	if got := tokStrings(t, tok, tok.Encode("hi hi")); !slices.Equal(got, []string{"Ġhi", "Ġhi"}) {
		t.Errorf("GPT-2 byte level: %q", got)
	}
	// Split/Removed drops the matches.
	js = tokTinyJSON(t, nil, false, nil, map[string]any{
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"String": "-"}, "behavior": "Removed"},
			map[string]any{"type": "ByteLevel", "use_regex": false},
		}},
	})
	tok = tokMustParse(t, js)
	if got := tok.Decode(tok.Encode("a-b--c")); got != "abc" {
		t.Errorf("Split Removed: %q", got)
	}
}

func TestChatPromptGolden(t *testing.T) {
	t.Parallel()
	// Expected strings were rendered from Qwen3's Jinja chat template with Python's jinja2
	// (TestChatPromptJinja repeats this check live when python3 + jinja2 are available).
	cases := []struct {
		name     string
		msgs     []Message
		gen, thk bool
		want     string
	}{
		{"system+user no-think", []Message{{Role: "system", Content: "S"}, {Role: "user", Content: "hi"}}, true, false,
			"<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
		{"user think", []Message{{Role: "user", Content: "hi"}}, true, true,
			"<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"},
		{"no generation prompt", []Message{{Role: "user", Content: "hi"}}, false, false,
			"<|im_start|>user\nhi<|im_end|>\n"},
		{"history drops old reasoning", []Message{
			{Role: "user", Content: "q1"},
			{Role: "assistant", Content: "<think>\nr1\n</think>\n\na1"},
			{Role: "user", Content: "q2"},
		}, true, true,
			"<|im_start|>user\nq1<|im_end|>\n<|im_start|>assistant\na1<|im_end|>\n<|im_start|>user\nq2<|im_end|>\n<|im_start|>assistant\n"},
		{"last assistant keeps reasoning", []Message{
			{Role: "user", Content: "q"},
			{Role: "assistant", Content: "a", Reasoning: "\nthink hard\n"},
		}, false, true,
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\nthink hard\n</think>\n\na<|im_end|>\n"},
		{"last assistant empty reasoning", []Message{
			{Role: "user", Content: "q"},
			{Role: "assistant", Content: "\n\na"},
		}, false, true,
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\na<|im_end|>\n"},
		{"tools", []Message{
			{Role: "user", Content: "q"},
			{Role: "assistant", Content: "call"},
			{Role: "tool", Content: "r1"},
			{Role: "tool", Content: "r2"},
			{Role: "system", Content: "late system"},
		}, true, false,
			"<|im_start|>user\nq<|im_end|>\n<|im_start|>assistant\ncall<|im_end|>\n" +
				"<|im_start|>user\n<tool_response>\nr1\n</tool_response>\n<tool_response>\nr2\n</tool_response><|im_end|>\n" +
				"<|im_start|>system\nlate system<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"},
	}
	for _, c := range cases {
		if got := ChatPrompt(c.msgs, c.gen, c.thk); got != c.want {
			t.Errorf("%s:\n got %q\nwant %q", c.name, got, c.want)
		}
	}
}

func TestEncodeChatPromptTiny(t *testing.T) {
	t.Parallel()
	tok := tokMustParse(t, tokTinyJSON(t, nil, false, tokSpecials(), nil))
	p := ChatPrompt([]Message{{Role: "user", Content: "hi"}}, true, false)
	ids := tok.Encode(p)
	want := []string{ImStart, "u", "s", "e", "r", "Ċ", "h", "i", ImEnd, "Ċ", ImStart, "a", "s", "s", "i", "s", "t", "a", "n", "t", "Ċ", ThinkOpen, "Ċ", "Ċ", ThinkClose, "Ċ", "Ċ"}
	if got := tokStrings(t, tok, ids); !slices.Equal(got, want) {
		t.Errorf("chat prompt tokens %q, want %q", got, want)
	}
	if !utf8.ValidString(tok.Decode(ids)) || tok.Decode(ids) != p {
		t.Error("chat prompt round trip failed")
	}
}

func FuzzEncodeDecode(f *testing.F) {
	tok := tokMustParse(f, tokTinyJSON(f, [][2]string{{"Ġ", "Ġ"}, {"a", "b"}}, false, tokSpecials(), map[string]any{"normalizer": nil}))
	f.Add("hello <|im_end|> world")
	f.Add("\xff\xfe a  b\n\n")
	f.Fuzz(func(t *testing.T, s string) {
		if got := tok.DecodeBytes(tok.Encode(s)); string(got) != s {
			t.Fatalf("DecodeBytes(Encode(%q)) = %q", s, got)
		}
	})
}

// EncodeLimit counts exactly: within the limit it is Encode; over it, it returns a prefix of
// Encode's ids just past the limit, having stopped there.
func TestEncodeLimit(t *testing.T) {
	t.Parallel()
	tok := tokMustParse(t, tokTinyJSON(t, [][2]string{{"Ġ", "Ġ"}, {"e", "r"}, {"Ġ", "t"}, {"a", "b"}}, false, tokSpecials(), nil))
	rng := rand.New(rand.NewPCG(tokTestSeed(t), 3))
	alphabet := []rune("ab \n\t\r  xyzÉé日本語🙂'-_0123456789<>|/e\u0301")
	pieces := []string{ImStart, ImEnd, ThinkOpen, "<|", "|>", "'s", "'LL"}
	for range 300 {
		var sb strings.Builder
		for n := rng.IntN(60); n > 0; n-- {
			if rng.IntN(8) == 0 {
				sb.WriteString(pieces[rng.IntN(len(pieces))])
			} else {
				sb.WriteRune(alphabet[rng.IntN(len(alphabet))])
			}
		}
		s := sb.String()
		full := tok.Encode(s)
		for _, limit := range []int{0, len(full) - 1, len(full), len(full) + 1, rng.IntN(len(full) + 1)} {
			ids, ok := tok.EncodeLimit(s, limit)
			if ok != (len(full) <= max(limit, 0)) {
				t.Fatalf("EncodeLimit(%q, %d): ok %v, Encode has %d ids", s, limit, ok, len(full))
			}
			if ok && !slices.Equal(ids, full) {
				t.Fatalf("EncodeLimit(%q, %d) = %v, Encode %v", s, limit, ids, full)
			}
			if !ok && (len(ids) <= limit || !slices.Equal(ids, full[:len(ids)])) {
				t.Fatalf("EncodeLimit(%q, %d) = %v over the limit: want a prefix of %v longer than the limit", s, limit, ids, full)
			}
		}
	}
	// A long text stops just past the limit: every word is at most 8 bytes, so at most 8 ids
	// follow the one that crossed it.
	var sb strings.Builder
	for sb.Len() < 1<<20 {
		sb.WriteString(" abxyer"[:1+rng.IntN(7)])
	}
	ids, ok := tok.EncodeLimit(sb.String(), 1000)
	if ok || len(ids) > 1000+8 {
		t.Fatalf("EncodeLimit of 1 MiB, limit 1000: ok %v, %d ids", ok, len(ids))
	}
}
