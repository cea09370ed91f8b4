package env

import "cmp"

// minHeap is a binary min-heap of values ordered by (key, tie)
// lexicographically (keys are compared with < and ==, so floating-point
// keys must not be NaN); its zero value is empty. The solver's three priority
// queues are instances: the constraint tree's open list (key: makespan and
// SOC lower bound, tie: conflicts and age), the low level's A* open list and
// the joint search's open list (both pack their whole order into key and
// pass a zero tie).
//
// The order is given by two ordered type parameters rather than by a less
// function or method because comparisons then compile to plain integer
// compares and push inlines; a func-valued less, or a type parameter
// constrained by a less method, is an indirect call per comparison that
// the compiler does not inline. Thread CPU time per solve on
// BenchmarkSolve's instances against the three hand-written heaps that
// this replaced (fastest of 15 runs, 8 to 10 interleaved runs, geomean of
// the nine benchmarks; the low level's open list takes about 15% of the
// time):
//
//	this form (one generic heap, key + tie)        +1.0% .. +1.7%
//	single-key heap, constraint tree's kept apart  -1.1%
//	low level's order split as key f, tie rest     +4.7% (+10% on 5 agents)
//	a less method constraint                      +37.6%
//	a less func field                             +81.5%
//
// Items with equal (key, tie) leave in an order fixed by the sequence of
// pushes and pops, which the solver's tie-breaking depends on: push and pop
// must keep making the same moves as the textbook swap-based sift (they
// move a hole instead of swapping, which ends in the same positions;
// TestMinHeapMatchesSwapSift checks it).
type minHeap[K, T cmp.Ordered, V any] struct {
	items []heapItem[K, T, V]
}

// heapItem is an entry of a minHeap: the value with its key and
// tie-breaker.
type heapItem[K, T cmp.Ordered, V any] struct {
	key K
	tie T
	val V
}

// before reports whether a orders before b.
func (a *heapItem[K, T, V]) before(b *heapItem[K, T, V]) bool {
	return a.key < b.key || a.key == b.key && a.tie < b.tie
}

// reset empties the heap, keeping its memory.
func (h *minHeap[K, T, V]) reset() { h.items = h.items[:0] }

// len returns the number of items.
func (h *minHeap[K, T, V]) len() int { return len(h.items) }

// push adds val with its key and tie-breaker. (Written to stay under the
// compiler's inlining budget: the low level pushes from five places in its
// inner loop.)
func (h *minHeap[K, T, V]) push(key K, tie T, val V) {
	h.items = append(h.items, heapItem[K, T, V]{})
	it := h.items
	i := len(it) - 1
	for ; i > 0; i = (i - 1) / 2 {
		p := &it[(i-1)/2]
		if key > p.key || key == p.key && tie >= p.tie {
			break // not before the parent
		}
		it[i] = *p
	}
	it[i] = heapItem[K, T, V]{key, tie, val}
}

// pop removes and returns the first item; the heap must not be empty.
func (h *minHeap[K, T, V]) pop() heapItem[K, T, V] {
	top := h.items[0]
	last := len(h.items) - 1
	x := h.items[last]
	it := h.items[:last]
	h.items = it
	if last == 0 {
		return top
	}
	i := 0
	for {
		c := 2*i + 1
		if c >= len(it) {
			break
		}
		if r := c + 1; r < len(it) && it[r].before(&it[c]) {
			c = r
		}
		if !it[c].before(&x) {
			break
		}
		it[i] = it[c]
		i = c
	}
	it[i] = x
	return top
}
