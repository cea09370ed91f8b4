package serve

import (
	"strings"
	"unicode/utf8"
)

// utf8Stream decodes bytes as they arrive, as the WHATWG UTF-8 decoder does (one U+FFFD per
// maximal ill-formed subsequence, like the tokenizer's Decode): a multi-byte character cut
// between two tokens is held back until its last byte arrives, so text already emitted never
// changes.
type utf8Stream struct {
	cp         rune
	need, seen int
	lo, hi     byte // bounds of the next continuation byte; 0 means 0x80 and 0xBF
}

// write appends the decoded text of p to dst.
func (d *utf8Stream) write(dst []byte, p []byte) []byte {
	for i := 0; i < len(p); i++ {
		b := p[i]
		if d.need == 0 {
			switch {
			case b < 0x80:
				dst = append(dst, b)
			case b >= 0xC2 && b <= 0xDF:
				d.need, d.cp = 1, rune(b&0x1F)
			case b >= 0xE0 && b <= 0xEF:
				switch b {
				case 0xE0:
					d.lo = 0xA0
				case 0xED:
					d.hi = 0x9F
				}
				d.need, d.cp = 2, rune(b&0x0F)
			case b >= 0xF0 && b <= 0xF4:
				switch b {
				case 0xF0:
					d.lo = 0x90
				case 0xF4:
					d.hi = 0x8F
				}
				d.need, d.cp = 3, rune(b&0x07)
			default:
				dst = utf8.AppendRune(dst, utf8.RuneError)
			}
			continue
		}
		lo, hi := byte(0x80), byte(0xBF)
		if d.lo != 0 {
			lo = d.lo
		}
		if d.hi != 0 {
			hi = d.hi
		}
		if b < lo || b > hi {
			*d = utf8Stream{}
			dst = utf8.AppendRune(dst, utf8.RuneError)
			i-- // the byte starts afresh
			continue
		}
		d.lo, d.hi = 0, 0
		d.cp = d.cp<<6 | rune(b&0x3F)
		d.seen++
		if d.seen == d.need {
			dst = utf8.AppendRune(dst, d.cp)
			*d = utf8Stream{}
		}
	}
	return dst
}

// flush ends the stream: an incomplete character becomes U+FFFD.
func (d *utf8Stream) flush(dst []byte) []byte {
	if d.need != 0 {
		*d = utf8Stream{}
		dst = utf8.AppendRune(dst, utf8.RuneError)
	}
	return dst
}

// stopMatcher finds stop strings in a growing text.
type stopMatcher struct {
	stops  []string
	maxLen int
}

func newStopMatcher(stops []string) stopMatcher {
	m := stopMatcher{stops: stops}
	for _, s := range stops {
		m.maxLen = max(m.maxLen, len(s))
	}
	return m
}

// find returns the earliest position of a stop string in text that ends at or after from
// (the text before from was already searched), or −1.
func (m stopMatcher) find(text string, from int) int {
	if len(m.stops) == 0 {
		return -1
	}
	start := max(0, from-m.maxLen+1)
	best := -1
	for _, s := range m.stops {
		if i := strings.Index(text[start:], s); i >= 0 && (best < 0 || start+i < best) {
			best = start + i
		}
	}
	return best
}

// holdBack is the length of the longest suffix of text that is a proper prefix of a stop
// string: text a stream must not emit yet, since the next token may complete the stop string.
func (m stopMatcher) holdBack(text string) int {
	h := 0
	for _, s := range m.stops {
		for k := min(len(s)-1, len(text)); k > h; k-- {
			if strings.HasSuffix(text, s[:k]) {
				h = k
				break
			}
		}
	}
	return h
}
