package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/dlclark/regexp2"
	"golang.org/x/text/unicode/norm"

	"github.com/t2t-lab/t2t/internal/limits"
)

// MaxTokenID bounds the token ids of a tokenizer.json: the tables are
// sized by the largest id, so one huge id in a tiny file would otherwise
// allocate gigabytes. It is 16 times the largest vocabularies in use
// (Gemma's 262,144 tokens).
const MaxTokenID = 1<<22 - 1

// gpt2Pattern is the pre-tokenizer regex of the ByteLevel pre-tokenizer when use_regex is true
// (GPT-2's split pattern).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// AddedToken is an entry of tokenizer.json's added_tokens: a string matched verbatim in the
// input before pre-tokenisation and encoded as one id.
type AddedToken struct {
	ID         int32
	Content    string
	Special    bool // a control token such as <|im_end|> (DecodeSkipSpecial drops it)
	LStrip     bool // the match also swallows whitespace on its left
	RStrip     bool // the match also swallows whitespace on its right
	SingleWord bool // only matched when not inside a word
	Normalized bool // matched in the normalised text instead of the raw text
}

// Tokenizer is a byte-level BPE tokenizer loaded from a Hugging Face tokenizer.json. It is safe
// for concurrent use.
type Tokenizer struct {
	vocab        map[string]int32 // BPE tokens in byte-level form
	tokenBytes   [][]byte         // id → the bytes it decodes to (nil for an unused id)
	tokenStrings []string         // id → vocabulary string (byte-level form) or added-token content
	merges       map[uint64]bpeMerge
	ignoreMerges bool
	added        []AddedToken // by id
	addedIndex   map[string]int32
	special      []bool // by id: an added token marked special
	rawMatcher   *addedMatcher
	normMatcher  *addedMatcher
	normalize    func(string) string // nil: identity
	pre          []preStep
	byteRune     [256]rune
	byteID       [256]int32 // id of each byte's one-character token, −1 if absent
	cache        *bpeCache
}

// preStep is one pre-tokenizer: it splits each piece into smaller ones.
type preStep struct {
	re             *regexp2.Regexp
	removeMatches  bool // Split behaviour "Removed": drop matches (keep gaps)
	invert         bool
	addPrefixSpace bool // ByteLevel: prepend a space to pieces that do not start with one
}

// tjFile mirrors the parts of tokenizer.json this package reads.
type tjFile struct {
	AddedTokens  []tjAdded    `json:"added_tokens"`
	Normalizer   *tjComponent `json:"normalizer"`
	PreTokenizer *tjComponent `json:"pre_tokenizer"`
	Decoder      *tjComponent `json:"decoder"`
	Model        *tjModel     `json:"model"`
}

type tjAdded struct {
	ID         *int32 `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type tjComponent struct {
	Type           string         `json:"type"`
	Normalizers    []*tjComponent `json:"normalizers"`
	Pretokenizers  []*tjComponent `json:"pretokenizers"`
	Decoders       []*tjComponent `json:"decoders"`
	Pattern        *tjPattern     `json:"pattern"`
	Behavior       string         `json:"behavior"`
	Invert         bool           `json:"invert"`
	AddPrefixSpace bool           `json:"add_prefix_space"`
	UseRegex       *bool          `json:"use_regex"`
}

type tjPattern struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

type tjModel struct {
	Type                    string            `json:"type"`
	Vocab                   map[string]int32  `json:"vocab"`
	Merges                  []json.RawMessage `json:"merges"`
	Dropout                 *float64          `json:"dropout"`
	UnkToken                *string           `json:"unk_token"`
	ContinuingSubwordPrefix *string           `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string           `json:"end_of_word_suffix"`
	ByteFallback            bool              `json:"byte_fallback"`
	IgnoreMerges            bool              `json:"ignore_merges"`
}

// Load reads a Hugging Face tokenizer.json (a byte-level BPE model such as Qwen's or GPT-2's).
func Load(path string) (*Tokenizer, error) {
	js, err := limits.ReadRegularFile(path, limits.Text)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	t, err := Parse(js)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// Parse builds a tokenizer from the contents of a tokenizer.json.
//
// Supported: model BPE (no dropout, no byte fallback, no subword prefix/suffix) with merges as
// "a b" strings or ["a", "b"] arrays; normalizers NFC, NFD, NFKC, NFKD, Lowercase and Sequence;
// pre-tokenizers Split (Regex or String pattern, behaviour Isolated or Removed, optional invert),
// ByteLevel (add_prefix_space, use_regex) and Sequence; decoder ByteLevel (or none). A byte-level
// pre-tokenizer is required. Anything else is an ErrUnsupported *FormatError.
func Parse(js []byte) (*Tokenizer, error) {
	var f tjFile
	if err := json.Unmarshal(js, &f); err != nil {
		return nil, tokBad("$", "%v", err)
	}
	t := &Tokenizer{addedIndex: map[string]int32{}, cache: newBPECache(bpeCacheGeneration)}
	t.byteRune = byteLevelRunes()
	if err := t.parseModel(f.Model); err != nil {
		return nil, err
	}
	for b, r := range t.byteRune {
		t.byteID[b] = -1
		if id, ok := t.vocab[string(r)]; ok {
			t.byteID[b] = id
		}
	}
	if err := t.parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	byteLevel, err := t.parsePreTokenizer(f.PreTokenizer, "pre_tokenizer")
	if err != nil {
		return nil, err
	}
	if !byteLevel {
		return nil, tokUnsupported("pre_tokenizer", "no ByteLevel pre-tokenizer: only byte-level BPE is supported")
	}
	if err := checkDecoder(f.Decoder, "decoder"); err != nil {
		return nil, err
	}
	if err := t.parseAdded(f.AddedTokens); err != nil {
		return nil, err
	}
	return t, nil
}

func (t *Tokenizer) parseModel(m *tjModel) error {
	switch {
	case m == nil:
		return tokBad("model", "missing")
	case m.Type != "" && m.Type != "BPE":
		return tokUnsupported("model.type", "%q (only BPE)", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return tokUnsupported("model.dropout", "BPE dropout %v", *m.Dropout)
	case m.ByteFallback:
		return tokUnsupported("model.byte_fallback", "byte fallback")
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "":
		return tokUnsupported("model.continuing_subword_prefix", "%q", *m.ContinuingSubwordPrefix)
	case m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return tokUnsupported("model.end_of_word_suffix", "%q", *m.EndOfWordSuffix)
	case len(m.Vocab) == 0:
		return tokBad("model.vocab", "missing or empty")
	}
	t.vocab = m.Vocab
	t.ignoreMerges = m.IgnoreMerges
	maxID := int32(-1)
	for tok, id := range m.Vocab {
		if id < 0 || id > MaxTokenID {
			return tokBad("model.vocab", "token %q has id %d outside [0,%d]", tok, id, MaxTokenID)
		}
		maxID = max(maxID, id)
	}
	t.tokenStrings = make([]string, maxID+1)
	for tok, id := range m.Vocab {
		if t.tokenStrings[id] != "" {
			return tokBad("model.vocab", "id %d is used by %q and %q", id, t.tokenStrings[id], tok)
		}
		t.tokenStrings[id] = tok
	}
	t.merges = make(map[uint64]bpeMerge, len(m.Merges))
	for i, raw := range m.Merges {
		a, b, err := parseMerge(raw)
		if err != nil {
			return tokBad(fmt.Sprintf("model.merges[%d]", i), "%v", err)
		}
		ia, okA := m.Vocab[a]
		ib, okB := m.Vocab[b]
		im, okM := m.Vocab[a+b]
		if !okA || !okB || !okM {
			return tokBad(fmt.Sprintf("model.merges[%d]", i), "merge %q + %q: a part or the result is not in the vocabulary", a, b)
		}
		key := pairKey(ia, ib)
		if _, dup := t.merges[key]; !dup { // the first (lowest-rank) occurrence wins
			t.merges[key] = bpeMerge{rank: int32(i), id: im}
		}
	}
	return nil
}

// parseMerge reads a merge written "a b" or ["a", "b"].
func parseMerge(raw json.RawMessage) (string, string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '[' {
		var pair []string
		if err := json.Unmarshal(raw, &pair); err != nil {
			return "", "", err
		}
		if len(pair) != 2 || pair[0] == "" || pair[1] == "" {
			return "", "", fmt.Errorf("want two non-empty strings, got %d", len(pair))
		}
		return pair[0], pair[1], nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", "", err
	}
	a, b, ok := strings.Cut(s, " ")
	if !ok || a == "" || b == "" || strings.Contains(b, " ") {
		return "", "", fmt.Errorf("%q is not \"a b\"", s)
	}
	return a, b, nil
}

func (t *Tokenizer) parseNormalizer(c *tjComponent) error {
	var steps []func(string) string
	var walk func(c *tjComponent, path string) error
	walk = func(c *tjComponent, path string) error {
		if c == nil {
			return nil
		}
		switch c.Type {
		case "NFC":
			steps = append(steps, norm.NFC.String)
		case "NFD":
			steps = append(steps, norm.NFD.String)
		case "NFKC":
			steps = append(steps, norm.NFKC.String)
		case "NFKD":
			steps = append(steps, norm.NFKD.String)
		case "Lowercase":
			steps = append(steps, strings.ToLower)
		case "Sequence":
			for i, n := range c.Normalizers {
				if err := walk(n, fmt.Sprintf("%s.normalizers[%d]", path, i)); err != nil {
					return err
				}
			}
		default:
			return tokUnsupported(path+".type", "normalizer %q", c.Type)
		}
		return nil
	}
	if err := walk(c, "normalizer"); err != nil {
		return err
	}
	switch len(steps) {
	case 0:
	case 1:
		t.normalize = steps[0]
	default:
		t.normalize = func(s string) string {
			for _, f := range steps {
				s = f(s)
			}
			return s
		}
	}
	return nil
}

// parsePreTokenizer appends the steps of c to t.pre and reports whether a ByteLevel step was seen.
func (t *Tokenizer) parsePreTokenizer(c *tjComponent, path string) (bool, error) {
	if c == nil {
		return false, nil
	}
	switch c.Type {
	case "Sequence":
		seen := false
		for i, p := range c.Pretokenizers {
			s, err := t.parsePreTokenizer(p, fmt.Sprintf("%s.pretokenizers[%d]", path, i))
			if err != nil {
				return false, err
			}
			seen = seen || s
		}
		return seen, nil
	case "Split":
		if c.Pattern == nil || (c.Pattern.Regex == nil) == (c.Pattern.String == nil) {
			return false, tokBad(path+".pattern", "want exactly one of Regex and String")
		}
		expr := ""
		if c.Pattern.Regex != nil {
			expr = *c.Pattern.Regex
		} else {
			expr = regexp2.Escape(*c.Pattern.String)
		}
		re, err := regexp2.Compile(expr, regexp2.None)
		if err != nil {
			return false, tokBad(path+".pattern", "regex %q: %v", expr, err)
		}
		st := preStep{re: re, invert: c.Invert}
		switch c.Behavior {
		case "Isolated":
		case "Removed":
			st.removeMatches = true
		default:
			return false, tokUnsupported(path+".behavior", "split behaviour %q (Isolated and Removed are supported)", c.Behavior)
		}
		t.pre = append(t.pre, st)
		return false, nil
	case "ByteLevel":
		useRegex := c.UseRegex == nil || *c.UseRegex // HF's default is true
		st := preStep{addPrefixSpace: c.AddPrefixSpace}
		if useRegex {
			st.re = regexp2.MustCompile(gpt2Pattern, regexp2.None)
		}
		t.pre = append(t.pre, st)
		return true, nil
	default:
		return false, tokUnsupported(path+".type", "pre-tokenizer %q", c.Type)
	}
}

func checkDecoder(c *tjComponent, path string) error {
	if c == nil {
		return nil
	}
	switch c.Type {
	case "ByteLevel":
		return nil
	case "Sequence":
		for i, d := range c.Decoders {
			if err := checkDecoder(d, fmt.Sprintf("%s.decoders[%d]", path, i)); err != nil {
				return err
			}
		}
		return nil
	}
	return tokUnsupported(path+".type", "decoder %q (only ByteLevel)", c.Type)
}

func (t *Tokenizer) parseAdded(list []tjAdded) error {
	var raw, normed []AddedToken
	for i, a := range list {
		path := fmt.Sprintf("added_tokens[%d]", i)
		if a.Content == "" {
			return tokBad(path, "empty content")
		}
		id, err := t.addedID(a, path)
		if err != nil {
			return err
		}
		if id < 0 || id > MaxTokenID {
			return tokBad(path, "id %d outside [0,%d]", id, MaxTokenID)
		}
		if prev, dup := t.addedIndex[a.Content]; dup && prev != id {
			return tokBad(path, "%q listed with ids %d and %d", a.Content, prev, id)
		}
		for int(id) >= len(t.tokenStrings) {
			t.tokenStrings = append(t.tokenStrings, "")
		}
		if s := t.tokenStrings[id]; s != "" && s != a.Content && t.addedIDTaken(id) {
			return tokBad(path, "id %d is already added token %q", id, s)
		}
		t.tokenStrings[id] = a.Content
		tok := AddedToken{ID: id, Content: a.Content, Special: a.Special, LStrip: a.LStrip, RStrip: a.RStrip, SingleWord: a.SingleWord, Normalized: a.Normalized}
		t.added = append(t.added, tok)
		t.addedIndex[a.Content] = id
		if a.Normalized && !a.Special {
			normed = append(normed, tok)
		} else {
			raw = append(raw, tok)
		}
	}
	sort.Slice(t.added, func(i, j int) bool { return t.added[i].ID < t.added[j].ID })
	t.special = make([]bool, len(t.tokenStrings))
	for _, a := range t.added {
		t.special[a.ID] = a.Special
	}
	t.rawMatcher = newAddedMatcher(raw)
	t.normMatcher = newAddedMatcher(normed)
	t.buildTokenBytes()
	return nil
}

// addedID returns the id of added token a (at path): its own, or its
// content's in the vocabulary.
func (t *Tokenizer) addedID(a tjAdded, path string) (int32, error) {
	if a.ID != nil {
		return *a.ID, nil
	}
	v, ok := t.vocab[a.Content]
	if !ok {
		return 0, tokBad(path, "%q has no id and is not in the vocabulary", a.Content)
	}
	return v, nil
}

// buildTokenBytes fills the decoding table: added tokens decode to their
// content, BPE tokens through the byte map.
func (t *Tokenizer) buildTokenBytes() {
	runeByte := map[rune]byte{}
	for b, r := range t.byteRune {
		runeByte[r] = byte(b)
	}
	t.tokenBytes = make([][]byte, len(t.tokenStrings))
	for id, s := range t.tokenStrings {
		if s == "" {
			continue
		}
		if _, isAdded := t.addedIndex[s]; isAdded && t.addedIndex[s] == int32(id) {
			t.tokenBytes[id] = []byte(s)
			continue
		}
		b := make([]byte, 0, len(s))
		for _, r := range s {
			if x, ok := runeByte[r]; ok {
				b = append(b, x)
			} else { // not a byte-level character: decode it as itself
				b = utf8.AppendRune(b, r)
			}
		}
		t.tokenBytes[id] = b
	}
}

func (t *Tokenizer) addedIDTaken(id int32) bool {
	for _, a := range t.added {
		if a.ID == id {
			return true
		}
	}
	return false
}

// VocabSize is one more than the largest token id (BPE vocabulary and added tokens).
func (t *Tokenizer) VocabSize() int { return len(t.tokenStrings) }

// TokenID returns the id of an added token (e.g. "<|im_end|>") or of a vocabulary entry
// written in its byte-level form (ASCII letters and punctuation are written as themselves; a
// leading space is "Ġ").
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	if id, ok := t.addedIndex[s]; ok {
		return id, true
	}
	id, ok := t.vocab[s]
	return id, ok
}

// TokenString returns the vocabulary string of id (byte-level form for BPE tokens, the content
// for added tokens) and whether id is a known token.
func (t *Tokenizer) TokenString(id int32) (string, bool) {
	if id < 0 || int(id) >= len(t.tokenStrings) || t.tokenStrings[id] == "" {
		return "", false
	}
	return t.tokenStrings[id], true
}

// AddedTokens returns the added tokens, by id.
func (t *Tokenizer) AddedTokens() []AddedToken { return slices.Clone(t.added) }

// IsSpecial reports whether id is an added token marked special.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.special) && t.special[id]
}

// Encode returns the token ids of text. Ill-formed UTF-8 is kept byte for byte (the regex sees
// each bad byte as U+FFFD), so DecodeBytes(Encode(s)) == s for any s when there is no
// normalizer, and == NFC(s) with Qwen's. Added tokens (special ones such as <|im_start|> and
// <|im_end|>, and <think>, </think>) are recognised anywhere in text, before normalisation and
// pre-tokenisation, as Hugging Face tokenizers does with split_special_tokens=false. No
// BOS/EOS is added (Qwen's post-processor adds none).
func (t *Tokenizer) Encode(text string) []int32 { return t.AppendEncode(nil, text) }

// AppendEncode appends the token ids of text to dst and returns it.
func (t *Tokenizer) AppendEncode(dst []int32, text string) []int32 {
	dst, _ = t.appendEncode(dst, text, -1)
	return dst
}

// EncodeLimit is Encode for text that may be far longer than the caller accepts: it stops
// as soon as text is known to have more than limit tokens, so the work done is bounded by
// limit rather than by the text's length (bar linear scans: finding added tokens,
// normalising and decoding runes of each segment). ok reports whether text has at most
// limit tokens; then ids equal Encode(text). Otherwise ids are a prefix of Encode(text)
// longer than limit. The count is exact: the pipeline is Encode's, stopped early.
func (t *Tokenizer) EncodeLimit(text string, limit int) (ids []int32, ok bool) {
	return t.appendEncode(nil, text, max(limit, 0))
}

// appendEncode appends the ids of text to dst; limit ≥ 0 stops once more than limit ids have
// been appended (ok is then false).
func (t *Tokenizer) appendEncode(dst []int32, text string, limit int) (_ []int32, ok bool) {
	end := -1 // the most ids dst may hold, −1: no limit
	if limit >= 0 {
		end = len(dst) + limit
	}
	more := func() bool { return end < 0 || len(dst) <= end }
	t.rawMatcher.split(text, func(seg string, id int32) bool {
		if id >= 0 {
			dst = append(dst, id)
			return more()
		}
		if t.normalize != nil {
			seg = t.normalize(seg)
		}
		t.normMatcher.split(seg, func(seg string, id int32) bool {
			if id >= 0 {
				dst = append(dst, id)
			} else {
				dst = t.encodePlain(dst, seg, end)
			}
			return more()
		})
		return more()
	})
	return dst, more()
}

// PreTokenize returns the words that Encode runs BPE on for text that holds no added token:
// text normalised and split by the pre-tokenizers, as raw bytes (not in byte-level form).
// Joined, they give back the normalised text. A BPE trainer that learns merges within these
// words learns merges that Encode applies the same way. (A ByteLevel step with
// add_prefix_space prepends a space to words that lack one.)
func (t *Tokenizer) PreTokenize(text string) []string {
	if t.normalize != nil {
		text = t.normalize(text)
	}
	if text == "" {
		return nil
	}
	pieces := []string{text}
	for _, st := range t.pre {
		pieces = st.apply(pieces)
	}
	return pieces
}

// encodePlain pre-tokenises s and appends the BPE ids of each piece, in order, until dst
// holds more than end ids (end < 0: no limit): each step splits each piece on its own, so the
// pieces are walked depth-first and the walk stops at the first piece that crosses end.
func (t *Tokenizer) encodePlain(dst []int32, s string, end int) []int32 {
	if s == "" {
		return dst
	}
	var walk func(step int, piece string) bool
	walk = func(step int, piece string) bool {
		if step == len(t.pre) {
			dst = t.bpeWord(dst, piece)
			return end < 0 || len(dst) <= end
		}
		return t.pre[step].each(piece, func(q string) bool { return walk(step+1, q) })
	}
	walk(0, s)
	return dst
}

// apply splits every piece with the step (each).
func (st preStep) apply(pieces []string) []string {
	out := pieces[:0:0]
	for _, p := range pieces {
		st.each(p, func(q string) bool {
			out = append(out, q)
			return true
		})
	}
	return out
}

// each calls fn on the pieces the step splits p into, in order, until fn returns false (then
// each returns false): the regex's matches and the gaps between them (Isolated), or only the
// gaps (Removed), after prepending a space where asked.
func (st preStep) each(p string, fn func(piece string) bool) bool {
	if st.addPrefixSpace && !strings.HasPrefix(p, " ") {
		p = " " + p
	}
	if st.re == nil {
		return fn(p)
	}
	// regexp2 matches runes; at maps rune indices (ascending) back to byte offsets so that
	// pieces are slices of p (ill-formed bytes, each one U+FFFD to the regex, are kept as they
	// are).
	runes := make([]rune, 0, utf8.RuneCountInString(p))
	for _, r := range p {
		runes = append(runes, r)
	}
	ri, bi := 0, 0
	at := func(r int) int {
		for ; ri < r; ri++ {
			_, n := utf8.DecodeRuneInString(p[bi:])
			bi += n
		}
		return bi
	}
	cont := true
	emit := func(a, b int, isMatch bool) {
		if !cont || a >= b {
			return
		}
		if st.invert {
			isMatch = !isMatch
		}
		if isMatch && st.removeMatches {
			return
		}
		start := at(a)
		cont = fn(p[start:at(b)])
	}
	last := 0
	m, err := st.re.FindRunesMatch(runes)
	for cont && err == nil && m != nil {
		emit(last, m.Index, false)
		emit(m.Index, m.Index+m.Length, true)
		last = m.Index + m.Length
		m, err = st.re.FindNextMatch(m)
	}
	// regexp2 errors only on a match timeout, which is not set: err is always nil here.
	emit(last, len(runes), false)
	return cont
}

// DecodeBytes returns the bytes the ids stand for (added tokens as their content). Ids outside
// the vocabulary decode to nothing.
func (t *Tokenizer) DecodeBytes(ids []int32) []byte {
	return t.appendDecode(nil, ids, false)
}

func (t *Tokenizer) appendDecode(dst []byte, ids []int32, skipSpecial bool) []byte {
	for _, id := range ids {
		if id < 0 || int(id) >= len(t.tokenBytes) {
			continue
		}
		if skipSpecial && t.special[id] {
			continue
		}
		dst = append(dst, t.tokenBytes[id]...)
	}
	return dst
}

// Decode returns the text of ids: the inverse of Encode for normalised (NFC) text. Invalid UTF-8
// (e.g. a multi-byte character cut between tokens) becomes U+FFFD, one per maximal ill-formed
// subsequence, as Python's errors="replace" and JavaScript's TextDecoder do. Ids outside the
// vocabulary decode to nothing.
func (t *Tokenizer) Decode(ids []int32) string {
	return toValidUTF8(t.appendDecode(nil, ids, false))
}

// DecodeSkipSpecial is Decode without the special added tokens (skip_special_tokens=True).
func (t *Tokenizer) DecodeSkipSpecial(ids []int32) string {
	return toValidUTF8(t.appendDecode(nil, ids, true))
}

// toValidUTF8 replaces each maximal ill-formed subsequence (Unicode §3.9, WHATWG's UTF-8
// decoder) with U+FFFD.
func toValidUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			sb.Write(b[i : i+n])
			i += n
			continue
		}
		i += maximalSubpart(b[i:])
		sb.WriteRune(utf8.RuneError)
	}
	return sb.String()
}

// maximalSubpart returns the length (≥1) of the ill-formed sequence starting at b[0].
func maximalSubpart(b []byte) int {
	lo, hi := byte(0x80), byte(0xBF)
	need := 0
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 1
	case c == 0xE0:
		need, lo = 2, 0xA0
	case c == 0xED:
		need, hi = 2, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 2
	case c == 0xF0:
		need, lo = 3, 0x90
	case c == 0xF4:
		need, hi = 3, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
	}
	return n
}

// byteLevelRunes is GPT-2's bytes_to_unicode: printable Latin-1 bytes map to themselves, the
// other 68 bytes to U+0100 onwards, in byte order.
func byteLevelRunes() [256]rune {
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
