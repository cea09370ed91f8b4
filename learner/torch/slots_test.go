package torch

import (
	"testing"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/engine/enginetest"
)

// TestSlotDecoderBatchInvariance: the worker's slot pool gives a request the same greedy ids
// alone and inside batches that others join and leave (log-probs within 1e-5: BLAS rounds
// other batch shapes differently in the last bits), the ids of the torch
// engine's own GenerateStream, and the gomlx engine's ids and log-probs.
func TestSlotDecoderBatchInvariance(t *testing.T) {
	requireTorch(t)
	const seed = 23
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	g, tm := pair(t, checkpoint(t, cfg, seed))
	var _ engine.DecoderOpener = tm
	reqs := enginetest.Requests(seed, cfg.VocabSize)
	got := enginetest.BatchInvariance(t, tm, tm.OpenDecoder, reqs, 1e-5)
	enginetest.MatchesGenerate(t, tm, reqs, got, 1e-4)
	enginetest.MatchesGenerate(t, g, reqs, got, 1e-4)
}
