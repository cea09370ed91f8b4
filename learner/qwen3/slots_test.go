package qwen3

import (
	"testing"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/engine/enginetest"
)

// TestSlotDecoderBatchInvariance: the GoMLX slot pool gives a request the same greedy ids and
// log-probs alone and inside batches that others join and leave, and GenerateStream's ids.
func TestSlotDecoderBatchInvariance(t *testing.T) {
	seed := qwenTestSeed(t)
	cfg := qwenTiny(t)
	m, err := New(qwenBackend(t), cfg, qwenSharpWeights(t, cfg, seed))
	if err != nil {
		t.Fatal(err)
	}
	em := NewEngine(m)
	var _ engine.DecoderOpener = em
	reqs := enginetest.Requests(seed, cfg.VocabSize)
	got := enginetest.BatchInvariance(t, em, em.OpenDecoder, reqs, 0)
	enginetest.MatchesGenerate(t, em, reqs, got, 1e-4)
}
