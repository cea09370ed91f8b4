package serve

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// Decoding bytes in arbitrary pieces gives the tokenizer's Decode of the whole (one U+FFFD per
// maximal ill-formed subsequence), and text once emitted never changes.
func TestUTF8StreamMatchesTokenizer(t *testing.T) {
	js, err := textpolicy.TrainBPEJSON([]string{"ab\n"}, 262)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := tokenizer.Parse(js)
	if err != nil {
		t.Fatal(err)
	}
	seed := uint64(77)
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	pieces := [][]byte{{0xE2, 0x82, 0xAC}, {0xF0, 0x9F, 0x98, 0x80}, {0xC3, 0xA9}, {0xED, 0xA0, 0x80}, {0xF4, 0x90}, {0xE0, 0x80}, {0xC0}, {0xFF}, {0x80}, []byte("ab")}
	for range 2000 {
		var raw []byte
		for range rng.IntN(8) {
			p := pieces[rng.IntN(len(pieces))]
			if rng.IntN(4) == 0 {
				p = p[:rng.IntN(len(p))+1]
			}
			raw = append(raw, p...)
		}
		ids := make([]int32, len(raw)) // ids 0..255 are the single bytes
		for i, b := range raw {
			ids[i] = int32(b)
		}
		want := tok.Decode(ids)
		var d utf8Stream
		var out []byte
		for i := 0; i < len(raw); {
			j := min(len(raw), i+1+rng.IntN(3))
			before := string(out)
			out = d.write(out, raw[i:j])
			if !strings.HasPrefix(string(out), before) {
				t.Fatalf("emitted text changed: %q → %q", before, out)
			}
			i = j
		}
		out = d.flush(out)
		if string(out) != want {
			t.Fatalf("bytes % x: stream %q, tokenizer %q", raw, out, want)
		}
	}
}

func TestStopMatcher(t *testing.T) {
	m := newStopMatcher([]string{"END", "xy"})
	for _, tc := range []struct {
		text string
		from int
		at   int
		hold int
	}{
		{"abc", 0, -1, 0}, {"abcE", 3, -1, 1}, {"abcEN", 4, -1, 2}, {"abcEND", 5, 3, 0},
		{"ax", 1, -1, 1}, {"axyEND", 2, 1, 0}, {"ENDxy", 0, 0, 0}, {"aEND", 3, 1, 0}, {"xxxxEND", 6, 4, 0},
	} {
		if got := m.find(tc.text, tc.from); got != tc.at {
			t.Errorf("find(%q, %d) = %d, want %d", tc.text, tc.from, got, tc.at)
		}
		if tc.at < 0 {
			if got := m.holdBack(tc.text); got != tc.hold {
				t.Errorf("holdBack(%q) = %d, want %d", tc.text, got, tc.hold)
			}
		}
	}
}
