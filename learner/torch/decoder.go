package torch

import (
	"fmt"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
)

// decoder is the torch engine.Decoder: the worker's slot pool (decoder_open, decoder_prefill,
// decoder_step, decoder_close in worker/PROTOCOL.md). A worker holds one pool; opening another
// replaces it. On CUDA the worker replays a CUDA graph per batch bucket.
type decoder struct {
	m          *Model
	slots, len int
}

// OpenDecoder implements engine.DecoderOpener: a pool of slots sequences of slotLen positions
// in the worker (replacing any pool opened before). Open it after adapters are attached; the
// worker rebuilds the pool's fused weights after each Step, AddLoRA and LoadAdapter, and Reload
// opens the pool again (empty: rows running then fail).
func (m *Model) OpenDecoder(slots, slotLen int) (engine.Decoder, error) {
	if slots < 1 || slotLen < 2 || slotLen > m.cfg.MaxPositionEmbeddings {
		return nil, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "decoder", Value: fmt.Sprintf("%d slots of %d", slots, slotLen), Reason: fmt.Sprintf("need ≥ 1 slot of 2..%d positions", m.cfg.MaxPositionEmbeddings)}
	}
	if err := m.wk.call("decoder_open", map[string]any{"slots": slots, "slot_len": slotLen}, nil, nil); err != nil {
		return nil, err
	}
	m.pool = [2]int{slots, slotLen}
	return &decoder{m: m, slots: slots, len: slotLen}, nil
}

func (d *decoder) Slots() int   { return d.slots }
func (d *decoder) SlotLen() int { return d.len }

type logitsReply struct {
	Logits []byte `msgpack:"logits"`
}

func (d *decoder) logits(op string, req map[string]any, dst []float32) error {
	var rep logitsReply
	if err := d.m.wk.call(op, req, &rep, nil); err != nil {
		return err
	}
	xs, err := bytesF32(rep.Logits)
	if err != nil {
		return err
	}
	if len(xs) != len(dst) {
		d.m.wk.kill()
		return fmt.Errorf("%w: %s: %d logits, want %d", ErrProtocol, op, len(xs), len(dst))
	}
	copy(dst, xs)
	return nil
}

// Prefill implements engine.Decoder (one batched prefill in the worker).
func (d *decoder) Prefill(slots []int, prompts [][]int32, logits []float32) error {
	return d.logits("decoder_prefill", map[string]any{"slots": i32Bytes(slotIDs(slots)), "prompts": rowsI32(prompts)}, logits)
}

func slotIDs(slots []int) []int32 {
	ids := make([]int32, len(slots))
	for i, k := range slots {
		ids[i] = int32(k)
	}
	return ids
}

// Step implements engine.Decoder.
func (d *decoder) Step(slots []int, tokens []int32, logits []float32) error {
	return d.logits("decoder_step", map[string]any{"slots": i32Bytes(slotIDs(slots)), "tokens": i32Bytes(tokens)}, logits)
}

// Close implements engine.Decoder (the worker frees the pool's memory).
func (d *decoder) Close() error {
	d.m.pool = [2]int{}
	return d.m.wk.call("decoder_close", map[string]any{}, nil, nil)
}
