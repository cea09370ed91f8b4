package actors

import (
	"encoding/binary"
	"fmt"
)

// wireMaxDepth bounds the nesting of arrays and maps in a payload. t2t
// messages nest at most 4 deep (UnitDone.Groups[i].Samples[j].Tokens).
const wireMaxDepth = 32

// checkMsgpack walks one msgpack value that must span all of b, without
// allocating per element. It rejects what would make the decoder allocate
// or recurse beyond the payload's size: a length (string, binary, ext) that
// runs past the end, an array or map claiming more elements than bytes left,
// nesting deeper than wireMaxDepth, reserved codes, and trailing bytes.
//
// msgpack v5.4.1 pre-allocates a slice of the length an array claims (its
// alloc limit check is inverted), so an unchecked 5-byte header claiming 2^31
// elements would exhaust memory.
func checkMsgpack(b []byte) error {
	// stack[i] is the number of values still to read at depth i.
	var stack [wireMaxDepth + 1]int
	depth := 0
	stack[0] = 1
	p := 0
	for {
		for depth > 0 && stack[depth] == 0 {
			depth--
		}
		if stack[depth] == 0 {
			break
		}
		stack[depth]--
		if p >= len(b) {
			return fmt.Errorf("truncated at byte %d", p)
		}
		c := b[p]
		p++
		if c == 0xc1 {
			return fmt.Errorf("reserved code 0xc1 at byte %d", p-1)
		}
		h := msgpackHeadOf(c)
		if h.lenBytes > 0 {
			var err error
			if p, err = h.readLen(b, p, c); err != nil {
				return err
			}
		}
		if h.skip > len(b)-p {
			return fmt.Errorf("value at byte %d runs past the end", p)
		}
		p += h.skip
		if h.isContainer && h.elems > 0 {
			if h.elems > len(b)-p {
				return fmt.Errorf("container at byte %d claims %d values, %d bytes left", p, h.elems, len(b)-p)
			}
			if depth == wireMaxDepth {
				return fmt.Errorf("nesting deeper than %d", wireMaxDepth)
			}
			depth++
			stack[depth] = h.elems
		}
	}
	if p != len(b) {
		return fmt.Errorf("%d trailing bytes", len(b)-p)
	}
	return nil
}

// msgpackHead is what a msgpack type byte says about the value it starts.
type msgpackHead struct {
	skip        int  // bytes to skip
	elems       int  // values to read (map entries count twice)
	lenBytes    int  // size of a big-endian length that follows
	isContainer bool // an array or a map
}

// readLen reads the big-endian length of the value with type byte c at
// b[p:] into h (elements for a container, bytes to skip otherwise) and
// returns the position after it.
func (h *msgpackHead) readLen(b []byte, p int, c byte) (int, error) {
	if len(b)-p < h.lenBytes {
		return p, fmt.Errorf("truncated length at byte %d", p)
	}
	n := msgpackLen(b[p:], h.lenBytes)
	p += h.lenBytes
	if n > uint64(len(b)) {
		return p, fmt.Errorf("length %d at byte %d exceeds payload", n, p)
	}
	if h.isContainer {
		h.elems = int(n)
		if c == 0xde || c == 0xdf {
			h.elems *= 2
		}
	} else {
		h.skip += int(n)
	}
	return p, nil
}

// msgpackHeadOf decodes type byte c (not the reserved 0xc1).
func msgpackHeadOf(c byte) msgpackHead {
	var h msgpackHead
	switch {
	case c <= 0x7f || c >= 0xe0 || c == 0xc0 || c == 0xc2 || c == 0xc3:
		// fixint, nil, bool
	case c >= 0x80 && c <= 0x8f:
		h.elems, h.isContainer = 2*int(c&0x0f), true
	case c >= 0x90 && c <= 0x9f:
		h.elems, h.isContainer = int(c&0x0f), true
	case c >= 0xa0 && c <= 0xbf:
		h.skip = int(c & 0x1f)
	case c == 0xc4 || c == 0xd9: // bin8, str8
		h.lenBytes = 1
	case c == 0xc5 || c == 0xda: // bin16, str16
		h.lenBytes = 2
	case c == 0xc6 || c == 0xdb: // bin32, str32
		h.lenBytes = 4
	case c == 0xc7 || c == 0xc8 || c == 0xc9: // ext8/16/32: length, then type byte
		h.lenBytes = 1 << (c - 0xc7)
		h.skip = 1
	case c == 0xca: // float32
		h.skip = 4
	case c == 0xcb: // float64
		h.skip = 8
	case c >= 0xcc && c <= 0xcf: // uint8..uint64
		h.skip = 1 << (c - 0xcc)
	case c >= 0xd0 && c <= 0xd3: // int8..int64
		h.skip = 1 << (c - 0xd0)
	case c >= 0xd4 && c <= 0xd8: // fixext1..16: type byte + data
		h.skip = 1 + 1<<(c-0xd4)
	case c == 0xdc || c == 0xde: // array16, map16
		h.lenBytes, h.isContainer = 2, true
	case c == 0xdd || c == 0xdf: // array32, map32
		h.lenBytes, h.isContainer = 4, true
	}
	return h
}

// msgpackLen reads a big-endian length of size 1, 2 or 4 from the start of b.
func msgpackLen(b []byte, size int) uint64 {
	switch size {
	case 1:
		return uint64(b[0])
	case 2:
		return uint64(binary.BigEndian.Uint16(b))
	case 4:
		return uint64(binary.BigEndian.Uint32(b))
	}
	return 0
}
