package engine

import (
	"errors"

	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// Decoder holds the KV caches of a fixed pool of sequences (slots) of one loaded model and runs
// the two calls continuous batching needs: Prefill fills one slot with a prompt, Step appends
// one token to each of several slots at once. Rows are independent: a slot's logits depend on
// its own tokens only, never on which other slots share a step, so greedy ids are the same
// alone and in any batch. A Decoder is driven by one goroutine (a Scheduler's loop).
type Decoder interface {
	// Slots is the number of sequences the pool holds.
	Slots() int
	// SlotLen is the positions each slot holds (prompt plus generated tokens).
	SlotLen() int
	// Prefill replaces the sequence of slots[i] (distinct) by prompts[i] (1 ≤ len < SlotLen)
	// and writes the logits of its last position into logits[i·V:(i+1)·V].
	Prefill(slots []int, prompts [][]int32, logits []float32) error
	// Step appends tokens[i] to slots[i] (distinct slots, each prefilled and not full) and
	// writes each one's next logits into logits[i·V:(i+1)·V].
	Step(slots []int, tokens []int32, logits []float32) error
	// Close releases the pool.
	Close() error
}

// DecoderOpener is a Model that can open a slot pool (a Decoder) for a Scheduler.
type DecoderOpener interface {
	OpenDecoder(slots, slotLen int) (Decoder, error)
}

// AdapterDecoder is a Decoder that can switch the LoRA adapter its rows run with; the
// Scheduler calls UseAdapter only when no slot is in use ("" is the base model).
type AdapterDecoder interface {
	UseAdapter(name string) error
}

// ErrNoDecoder: the model cannot open a slot pool.
var ErrNoDecoder = errors.New("engine: the model has no slot decoder")

// PoolSlots returns how many slots of slotLen positions fit in budget bytes by
// hfmodel.Config.GenerateMemory's arithmetic (a full-length prompt's prefill and a cache of
// slotLen positions per slot), at most maxSlots, and 0 when not even one fits. A budget ≤ 0
// means no limit (maxSlots).
func PoolSlots(c hfmodel.Config, slotLen int, budget int64, maxSlots int) int {
	if budget <= 0 {
		return maxSlots
	}
	lo, hi := 0, maxSlots // the largest n in [0, maxSlots] that fits
	for lo < hi {
		n := (lo + hi + 1) / 2
		if c.GenerateMemory(n, max(slotLen-1, 1), 1) <= budget {
			lo = n
		} else {
			hi = n - 1
		}
	}
	return lo
}
