package env

import (
	"math/rand/v2"
	"testing"
)

// heapRef is the textbook swap-based binary heap that the solver's three
// hand-written heaps were, ordered by (key, tie).
type heapRef struct{ items []heapItem[uint8, uint8, int] }

func (h *heapRef) push(key, tie uint8, val int) {
	h.items = append(h.items, heapItem[uint8, uint8, int]{key, tie, val})
	it := h.items
	i := len(it) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !it[i].before(&it[p]) {
			break
		}
		it[i], it[p] = it[p], it[i]
		i = p
	}
}

func (h *heapRef) pop() heapItem[uint8, uint8, int] {
	it := h.items
	top := it[0]
	last := len(it) - 1
	it[0] = it[last]
	it = it[:last]
	i := 0
	for {
		l := 2*i + 1
		if l >= len(it) {
			break
		}
		c := l
		if r := l + 1; r < len(it) && it[r].before(&it[l]) {
			c = r
		}
		if !it[c].before(&it[i]) {
			break
		}
		it[i], it[c] = it[c], it[i]
		i = c
	}
	h.items = it
	return top
}

// TestMinHeapMatchesSwapSift checks that minHeap pops exactly what the
// textbook swap-based heap pops, also among equal items (the solver's
// tie-breaking, and so its plans and work counts, depend on it), and that
// a drain comes out in order.
func TestMinHeapMatchesSwapSift(t *testing.T) {
	seed := solvTestSeed(t, 5)
	rng := rand.New(rand.NewPCG(seed, 0x4ea9))
	for round := 0; round < 200; round++ {
		var h minHeap[uint8, uint8, int]
		var ref heapRef
		keys, ties := 1+rng.IntN(6), 1+rng.IntN(3) // few values: many equal items
		for op := 0; op < 300; op++ {
			if h.len() != len(ref.items) {
				t.Fatalf("round %d op %d: len %d, reference %d", round, op, h.len(), len(ref.items))
			}
			if h.len() > 0 && rng.IntN(5) < 2 {
				got, want := h.pop(), ref.pop()
				if got != want {
					t.Fatalf("round %d op %d: popped %+v, reference %+v", round, op, got, want)
				}
				continue
			}
			k, tie := uint8(rng.IntN(keys)), uint8(rng.IntN(ties))
			h.push(k, tie, op)
			ref.push(k, tie, op)
		}
		for last := (heapItem[uint8, uint8, int]{}); h.len() > 0; {
			got, want := h.pop(), ref.pop()
			if got != want {
				t.Fatalf("round %d drain: popped %+v, reference %+v", round, got, want)
			}
			if got.before(&last) {
				t.Fatalf("round %d drain: %+v after %+v", round, got, last)
			}
			last = got
		}
		h.reset()
		if h.len() != 0 {
			t.Fatalf("round %d: reset left %d items", round, h.len())
		}
	}
}
