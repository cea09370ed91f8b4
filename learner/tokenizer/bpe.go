package tokenizer

import (
	"sort"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// bpeMerge is a merge rule: its rank (position in the merges list, lower first) and the id of
// the merged token.
type bpeMerge struct {
	rank int32
	id   int32
}

func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// BPE cache bounds: each of the two generations holds at most bpeCacheGeneration words, and
// words longer than bpeCacheMaxWord bytes are not cached.
const (
	bpeCacheGeneration = 1 << 15
	bpeCacheMaxWord    = 256
)

// bpeCache maps a pre-tokenised word to its ids. It keeps two generations: lookups promote a
// word from the old one into the current one; when the current one is full it becomes the old
// one (the previous old one is dropped). Memory is bounded and recently used words survive, an
// approximation of LRU at O(1) per operation.
type bpeCache struct {
	mu       sync.Mutex
	cur, old map[string][]int32
	limit    int
}

func newBPECache(limit int) *bpeCache {
	return &bpeCache{cur: map[string][]int32{}, old: map[string][]int32{}, limit: limit}
}

func (c *bpeCache) get(w string) ([]int32, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if ids, ok := c.cur[w]; ok {
		return ids, true
	}
	if ids, ok := c.old[w]; ok {
		c.putLocked(w, ids)
		return ids, true
	}
	return nil, false
}

func (c *bpeCache) put(w string, ids []int32) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.putLocked(w, ids)
}

func (c *bpeCache) putLocked(w string, ids []int32) {
	if len(c.cur) >= c.limit {
		c.old = c.cur
		c.cur = make(map[string][]int32, c.limit)
	}
	c.cur[w] = ids
}

func (c *bpeCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.cur) + len(c.old)
}

// bpeSym is a symbol of a word being merged: a token id in a doubly linked list over the
// word's initial byte positions (id −1: merged into its left neighbour).
type bpeSym struct {
	id, prev, next int32
}

// bpeCand is a candidate merge of the symbol at pos with its right neighbour.
type bpeCand struct {
	rank, pos, id int32
}

type bpeScratch struct {
	syms []bpeSym
	heap []bpeCand
}

var bpePool = sync.Pool{New: func() any { return new(bpeScratch) }}

// bpeWord appends the ids of one pre-tokenised piece: its bytes mapped to byte-level
// characters, then merged by rank exactly as Hugging Face's BPE (lowest rank first, leftmost
// first among equal ranks).
func (t *Tokenizer) bpeWord(dst []int32, piece string) []int32 {
	if piece == "" {
		return dst
	}
	if ids, ok := t.cache.get(piece); ok {
		return append(dst, ids...)
	}
	ids := t.bpe(piece)
	if len(piece) <= bpeCacheMaxWord {
		t.cache.put(piece, ids)
	}
	return append(dst, ids...)
}

func (t *Tokenizer) bpe(piece string) []int32 {
	if t.ignoreMerges {
		if id, ok := t.wholeWord(piece); ok {
			return []int32{id}
		}
	}
	sc := bpePool.Get().(*bpeScratch)
	defer bpePool.Put(sc)
	syms := t.byteSymbols(sc.syms[:0], piece)
	if len(syms) == 0 {
		sc.syms = syms
		return nil
	}
	syms[len(syms)-1].next = -1
	h := bpeHeap(sc.heap[:0])
	for i := 0; i+1 < len(syms); i++ {
		if m, ok := t.merges[pairKey(syms[i].id, syms[i+1].id)]; ok {
			h.push(bpeCand{rank: m.rank, pos: int32(i), id: m.id})
		}
	}
	for len(h) > 0 {
		c := h.pop()
		s := &syms[c.pos]
		if s.id < 0 || s.next < 0 {
			continue
		}
		nx := s.next
		m, ok := t.merges[pairKey(s.id, syms[nx].id)]
		if !ok || m.rank != c.rank || m.id != c.id { // stale: a neighbour changed since
			continue
		}
		s.id = c.id
		s.next = syms[nx].next
		if s.next >= 0 {
			syms[s.next].prev = c.pos
		}
		syms[nx].id = -1
		if s.prev >= 0 {
			if m, ok := t.merges[pairKey(syms[s.prev].id, s.id)]; ok {
				h.push(bpeCand{rank: m.rank, pos: s.prev, id: m.id})
			}
		}
		if s.next >= 0 {
			if m, ok := t.merges[pairKey(s.id, syms[s.next].id)]; ok {
				h.push(bpeCand{rank: m.rank, pos: c.pos, id: m.id})
			}
		}
	}
	var out []int32
	for i := int32(0); i >= 0; i = syms[i].next { // symbol 0 is never merged away
		out = append(out, syms[i].id)
	}
	sc.syms, sc.heap = syms, h
	return out
}

// wholeWord returns the vocabulary id of piece as one byte-level token,
// if it has one (ignore_merges).
func (t *Tokenizer) wholeWord(piece string) (int32, bool) {
	var sb strings.Builder
	for i := 0; i < len(piece); i++ {
		sb.WriteRune(t.byteRune[piece[i]])
	}
	id, ok := t.vocab[sb.String()]
	return id, ok
}

// byteSymbols appends piece's bytes to syms as a linked list of byte
// tokens (the last one's next still to be cut) and returns it.
func (t *Tokenizer) byteSymbols(syms []bpeSym, piece string) []bpeSym {
	for i := 0; i < len(piece); i++ {
		id := t.byteID[piece[i]]
		if id < 0 { // no unknown token in byte-level BPE: a byte missing from the vocabulary is dropped, as HF does
			continue
		}
		k := int32(len(syms))
		syms = append(syms, bpeSym{id: id, prev: k - 1, next: k + 1})
	}
	return syms
}

// bpeHeap is a binary min-heap of candidates ordered by (rank, pos).
type bpeHeap []bpeCand

func (a bpeCand) less(b bpeCand) bool {
	return a.rank < b.rank || (a.rank == b.rank && a.pos < b.pos)
}

func (h *bpeHeap) push(c bpeCand) {
	*h = append(*h, c)
	s := *h
	i := len(s) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !s[i].less(s[p]) {
			break
		}
		s[i], s[p] = s[p], s[i]
		i = p
	}
}

func (h *bpeHeap) pop() bpeCand {
	s := *h
	top := s[0]
	n := len(s) - 1
	s[0] = s[n]
	s = s[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && s[l].less(s[m]) {
			m = l
		}
		if r < n && s[r].less(s[m]) {
			m = r
		}
		if m == i {
			break
		}
		s[i], s[m] = s[m], s[i]
		i = m
	}
	*h = s
	return top
}

// addedMatcher finds added tokens in text: leftmost match first, the longest token among
// those starting there (HF's leftmost-longest Aho–Corasick match).
type addedMatcher struct {
	byFirst [256][]AddedToken // by first byte, longest first (an array: split looks up every byte)
	count   int
}

func newAddedMatcher(tokens []AddedToken) *addedMatcher {
	m := &addedMatcher{count: len(tokens)}
	for _, t := range tokens {
		m.byFirst[t.Content[0]] = append(m.byFirst[t.Content[0]], t)
	}
	for _, l := range &m.byFirst {
		sort.SliceStable(l, func(i, j int) bool { return len(l[i].Content) > len(l[j].Content) })
	}
	return m
}

// split calls fn for each piece of s in order, until fn returns false: a plain segment with
// id −1, or an added token's match (including whitespace its LStrip/RStrip swallowed) with its
// id.
func (m *addedMatcher) split(s string, fn func(seg string, id int32) bool) {
	if m == nil || m.count == 0 {
		if s != "" {
			fn(s, -1)
		}
		return
	}
	start := 0
	for i := 0; i < len(s); {
		cands := m.byFirst[s[i]]
		matched := false
		for _, tok := range cands {
			if !strings.HasPrefix(s[i:], tok.Content) {
				continue
			}
			a, b := i, i+len(tok.Content)
			if tok.SingleWord && (isWordBefore(s, a) || isWordAfter(s, b)) {
				continue
			}
			if tok.LStrip {
				for a > start {
					r, n := utf8.DecodeLastRuneInString(s[:a])
					if !unicode.IsSpace(r) {
						break
					}
					a -= n
				}
			}
			if tok.RStrip {
				for b < len(s) {
					r, n := utf8.DecodeRuneInString(s[b:])
					if !unicode.IsSpace(r) {
						break
					}
					b += n
				}
			}
			if a > start && !fn(s[start:a], -1) {
				return
			}
			if !fn(s[a:b], tok.ID) {
				return
			}
			start, i, matched = b, b, true
			break
		}
		if !matched {
			i++
		}
	}
	if start < len(s) {
		fn(s[start:], -1)
	}
}

func isWordRune(r rune) bool { return r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) }

func isWordBefore(s string, i int) bool {
	if i == 0 {
		return false
	}
	r, _ := utf8.DecodeLastRuneInString(s[:i])
	return isWordRune(r)
}

func isWordAfter(s string, i int) bool {
	if i >= len(s) {
		return false
	}
	r, _ := utf8.DecodeRuneInString(s[i:])
	return isWordRune(r)
}
