package qwen3

import (
	"fmt"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
)

// slotDecoder is the GoMLX engine.Decoder: a KV pool of [slots, S, KVH, D] per layer. A
// prompt is prefilled alone (the generation prefill graph, one row, left-padded) and copied
// into its slot; a step runs the slot decode graph over the whole pool (one static shape:
// free slots compute and are ignored), each row at its own cache column.
type slotDecoder struct {
	m          *Model
	slots, len int
	s          int               // cache positions per slot (learner.PadLen(len))
	caches     []*tensors.Tensor // 2·layers pool caches
	pad, col   []int32           // per slot: left padding and the next column to write
	tok        []int32
}

// OpenDecoder implements engine.DecoderOpener: a pool of slots sequences of slotLen positions.
// Open it after adapters are attached (AddLoRA or LoadAdapter rebuild the graphs).
func (g *EngineModel) OpenDecoder(slots, slotLen int) (engine.Decoder, error) {
	return g.m.OpenDecoder(slots, slotLen)
}

// OpenDecoder opens a slot pool on m (see EngineModel.OpenDecoder).
func (m *Model) OpenDecoder(slots, slotLen int) (engine.Decoder, error) {
	if slots < 1 || slotLen < 2 || slotLen > m.cfg.MaxPositionEmbeddings {
		return nil, &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "decoder", Value: fmt.Sprintf("%d slots of %d", slots, slotLen), Reason: fmt.Sprintf("need ≥ 1 slot of 2..%d positions", m.cfg.MaxPositionEmbeddings)}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.buildGenExecs(); err != nil {
		return nil, err
	}
	if err := m.buildSlotExecs(); err != nil {
		return nil, err
	}
	d := &slotDecoder{m: m, slots: slots, len: slotLen, s: learner.PadLen(slotLen),
		pad: make([]int32, slots), col: make([]int32, slots), tok: make([]int32, slots)}
	c := m.cfg
	for range 2 * c.NumHiddenLayers {
		d.caches = append(d.caches, tensors.FromShape(shapes.Make(dtypes.Float32, slots, d.s, c.NumKeyValueHeads, c.HeadDim)))
	}
	return d, nil
}

func (m *Model) buildSlotExecs() error {
	if m.slotStepExec == nil {
		e, err := m.newExec(func(_ *context.Context, in []*graph.Node) []*graph.Node { return m.slotStepGraph(in) })
		if err != nil {
			return err
		}
		m.slotStepExec = e
	}
	if m.slotWriteExec == nil {
		e, err := m.newExec(func(_ *context.Context, in []*graph.Node) []*graph.Node { return slotWriteGraph(in) })
		if err != nil {
			return err
		}
		m.slotWriteExec = e
	}
	return nil
}

// slotStepGraph is decodeGraph with a cache column per row: inputs tokens [N], pad [N], col
// [N] and the 2·layers caches [N, S, KVH, D]; outputs logits [N, V] and the caches with each
// row's new keys and values in its column.
func (m *Model) slotStepGraph(in []*graph.Node) []*graph.Node {
	tokens, pad, col, caches := in[0], in[1], in[2], in[3:]
	g := tokens.Graph()
	n := tokens.Shape().Dimensions[0]
	s := caches[0].Shape().Dimensions[1]
	pos := graph.ConvertDType(graph.Sub(col, pad), dtypes.Float32)
	cols := graph.Iota(g, shapes.Make(dtypes.Int32, n, s), 1)
	col2 := graph.BroadcastToDims(graph.Reshape(col, n, 1), n, s)
	visible := graph.LogicalAnd(
		graph.GreaterOrEqual(cols, graph.BroadcastToDims(graph.Reshape(pad, n, 1), n, s)),
		graph.LessOrEqual(cols, col2))
	bias := graph.Reshape(graph.Where(visible, graph.ScalarZero(g, dtypes.Float32), graph.Scalar(g, dtypes.Float32, maskBias)), n, 1, s)
	at := graph.Equal(cols, col2)
	cos, sin := m.ropeTables(graph.Reshape(pos, n, 1))
	out := make([]*graph.Node, 1, 1+len(caches))
	write := func(cache, x *graph.Node) *graph.Node {
		dims := cache.Shape().Dimensions
		at4 := graph.BroadcastToDims(graph.Reshape(at, n, s, 1, 1), dims...)
		return graph.Where(at4, graph.BroadcastToDims(x, dims...), cache)
	}
	x := m.blocks(m.embedTokens(graph.Reshape(tokens, n, 1)), cos, sin, bias, func(l int, k, v *graph.Node) (*graph.Node, *graph.Node) {
		kc, vc := write(caches[2*l], k), write(caches[2*l+1], v)
		out = append(out, kc, vc)
		return kc, vc
	})
	out[0] = graph.Reshape(m.head(x), n, m.cfg.VocabSize)
	return out
}

// slotWriteGraph copies one row's caches into the pool: inputs the slot (scalar int32), then
// the 2·layers pool caches [N, S, KVH, D] and the 2·layers row caches [1, S, KVH, D]; outputs
// the new pool caches.
func slotWriteGraph(in []*graph.Node) []*graph.Node {
	slot := in[0]
	k := (len(in) - 1) / 2
	pool, rows := in[1:1+k], in[1+k:]
	out := make([]*graph.Node, k)
	for i, p := range pool {
		dims := p.Shape().Dimensions
		idx := graph.Iota(slot.Graph(), shapes.Make(dtypes.Int32, dims...), 0)
		out[i] = graph.Where(graph.Equal(idx, graph.BroadcastToDims(slot, dims...)), graph.BroadcastToDims(rows[i], dims...), p)
	}
	return out
}

func (d *slotDecoder) Slots() int   { return d.slots }
func (d *slotDecoder) SlotLen() int { return d.len }

// Prefill implements engine.Decoder: one prompt at a time (each at its own left padding).
func (d *slotDecoder) Prefill(slots []int, prompts [][]int32, logits []float32) error {
	v := d.m.cfg.VocabSize
	for i, k := range slots {
		if err := d.prefill(k, prompts[i], logits[i*v:(i+1)*v]); err != nil {
			return err
		}
	}
	return nil
}

func (d *slotDecoder) prefill(slot int, prompt []int32, logits []float32) error {
	m := d.m
	if slot < 0 || slot >= d.slots || len(prompt) == 0 || len(prompt) >= d.len {
		return fmt.Errorf("%w: prefill of %d tokens into slot %d of %d×%d", learner.ErrBadBatch, len(prompt), slot, d.slots, d.len)
	}
	if err := m.cfg.CheckTokens(prompt); err != nil {
		return err
	}
	// Left-pad to a shape bucket, but leave the slot room for its remaining positions.
	p := min(learner.PadLen(len(prompt)), d.s-d.len+len(prompt))
	tok := make([]int32, p)
	valid := make([]int32, p)
	pad := p - len(prompt)
	copy(tok[pad:], prompt)
	for j := pad; j < p; j++ {
		valid[j] = 1
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.buildGenExecs(); err != nil { // again: adapters may have reset the graphs
		return err
	}
	if err := m.buildSlotExecs(); err != nil {
		return err
	}
	return gomlxtrain.Catch(func() {
		outs, err := m.prefillExec.Exec(tensors.FromFlatDataAndDimensions(tok, 1, p), tensors.FromFlatDataAndDimensions(valid, 1, p),
			tensors.FromShape(shapes.Make(dtypes.Int32, d.s)))
		if err != nil {
			panic(err)
		}
		defer finalize(outs)
		tensors.MustConstFlatData(outs[0], func(flat []float32) { copy(logits, flat) })
		args := []any{tensors.FromScalar(int32(slot))}
		for _, c := range d.caches {
			args = append(args, c)
		}
		for _, c := range outs[1:] {
			args = append(args, c)
		}
		pool, err := m.slotWriteExec.Exec(args...)
		if err != nil {
			panic(err)
		}
		finalize(d.caches)
		d.caches = pool
		d.pad[slot], d.col[slot] = int32(pad), int32(p)
	})
}

// Step implements engine.Decoder.
func (d *slotDecoder) Step(slots []int, tokens []int32, logits []float32) error {
	m := d.m
	v := m.cfg.VocabSize
	clear(d.tok)
	for i, k := range slots {
		if k < 0 || k >= d.slots || int(d.col[k]) >= d.s {
			return fmt.Errorf("%w: step on slot %d (full or out of range)", learner.ErrBadBatch, k)
		}
		d.tok[k] = tokens[i]
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.buildSlotExecs(); err != nil {
		return err
	}
	return gomlxtrain.Catch(func() {
		args := []any{tensors.FromFlatDataAndDimensions(d.tok, d.slots), tensors.FromFlatDataAndDimensions(d.pad, d.slots),
			tensors.FromFlatDataAndDimensions(d.col, d.slots)}
		for _, c := range d.caches {
			args = append(args, c)
		}
		outs, err := m.slotStepExec.Exec(args...)
		if err != nil {
			panic(err)
		}
		tensors.MustConstFlatData(outs[0], func(flat []float32) {
			for i, k := range slots {
				copy(logits[i*v:(i+1)*v], flat[k*v:(k+1)*v])
			}
		})
		_ = outs[0].FinalizeAll()
		finalize(d.caches)
		d.caches = outs[1:]
		for _, k := range slots {
			d.col[k]++
		}
	})
}

// Close implements engine.Decoder.
func (d *slotDecoder) Close() error {
	finalize(d.caches)
	d.caches = nil
	return nil
}
