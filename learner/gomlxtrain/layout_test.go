package gomlxtrain

import (
	"testing"

	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/learner"
)

// The trainer's windows: inputs fill the length bucket; a Tail batch of a model with
// TailLogits trains on the last PadLen(Tail) positions (at most the bucket).
func TestTrainerLayoutTailWindow(t *testing.T) {
	cfg := learner.DefaultGRPOConfig()
	cfg.LengthBuckets = learner.PadLens(4096)
	tail := func(*context.Context, []*graph.Node, int) *graph.Node { return nil }
	withTail := &Trainer{cfg: cfg, spec: ModelSpec{TailLogits: tail}}
	without := &Trainer{cfg: cfg}
	for _, tc := range []struct {
		tt, tail    int
		in, tgt     window
		inNo, tgtNo window
		description string
	}{
		{160, 0, window{160, 0}, window{160, 0}, window{160, 0}, window{160, 0}, "no tail: right padding"},
		{150, 33, window{160, 10}, window{64, -86}, window{160, 10}, window{160, 10}, "tail 33 → 64"},
		{700, 100, window{704, 4}, window{128, -572}, window{704, 4}, window{704, 4}, "tail 100 → 128"},
		{40, 40, window{64, 24}, window{64, 24}, window{64, 24}, window{64, 24}, "tail window capped at the bucket"},
		{20, 5, window{32, 12}, window{8, -12}, window{32, 12}, window{32, 12}, "short tail: 8"},
	} {
		b := &learner.SeqBatch{Rows: 1, T: tc.tt, Tail: tc.tail}
		in, tgt := withTail.layout(b)
		inNo, tgtNo := without.layout(b)
		if in != tc.in || tgt != tc.tgt || inNo != tc.inNo || tgtNo != tc.tgtNo {
			t.Errorf("%s: T %d tail %d: with TailLogits %v %v, without %v %v; want %v %v, %v %v",
				tc.description, tc.tt, tc.tail, in, tgt, inNo, tgtNo, tc.in, tc.tgt, tc.inNo, tc.tgtNo)
		}
	}
}
