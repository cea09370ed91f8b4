package hfmodel

import "testing"

// TestEstimateTrainLayout: chunked log-probs count one chunk's logits (plus the hidden states'
// copy and gradient), activation checkpointing each layer's input plus one layer, in-place
// gradients one copy; weights and optimizer state do not depend on the layout.
func TestEstimateTrainLayout(t *testing.T) {
	c, err := Preset(Preset4BShape)
	if err != nil {
		t.Fatal(err)
	}
	const b, seq, chunk = 2, 1024, 1024
	plain := EstimateMemory(c, b, seq, false)
	chunked := EstimateTrainMemory(c, b, seq, LoRAConfig{}, TrainLayout{LogProbChunk: chunk})
	both := EstimateTrainMemory(c, b, seq, LoRAConfig{}, TrainLayout{LogProbChunk: chunk, ActivationCheckpointing: true})
	t.Logf("plain:   %v", plain)
	t.Logf("chunked: %v", chunked)
	t.Logf("both:    %v", both)
	t.Logf("torch, --activation-checkpointing: %v", EstimateTrainMemory(c, b, seq, LoRAConfig{}, TrainLayout{LogProbChunk: chunk, ActivationCheckpointing: true, InPlaceGradients: true}))
	v, h, l := int64(c.VocabSize), int64(c.HiddenSize), int64(c.NumHiddenLayers)
	tokens := int64(b * seq)
	if plain.Logits != 3*tokens*v*4 || chunked.Logits != 3*chunk*v*4+2*tokens*h*4 {
		t.Errorf("logits: plain %d, chunked %d", plain.Logits, chunked.Logits)
	}
	if chunked.Activations != plain.Activations || both.Activations >= plain.Activations/4 ||
		both.Activations < tokens*l*h*4 || both.Activations-tokens*l*h*4 != plain.Activations/l {
		t.Errorf("activations: plain %d, checkpointed %d", plain.Activations, both.Activations)
	}
	for _, e := range []MemoryEstimate{chunked, both} {
		if e.Weights != plain.Weights || e.Gradients != plain.Gradients || e.Optimizer != plain.Optimizer || e.KVCache != plain.KVCache {
			t.Errorf("the layout changed more than the transients: %+v vs %+v", e, plain)
		}
	}
	if e := EstimateTrainMemory(c, b, seq, LoRAConfig{}, TrainLayout{InPlaceGradients: true}); 2*e.Gradients != plain.Gradients || e.Optimizer != plain.Optimizer {
		t.Errorf("in-place gradients: %v", e)
	}
	// A chunk longer than the micro-batch is the micro-batch.
	if e := EstimateTrainMemory(c, 1, 16, LoRAConfig{}, TrainLayout{LogProbChunk: chunk}); e.Logits != 3*16*v*4+2*16*h*4 {
		t.Errorf("short micro-batch: logits %d", e.Logits)
	}
}
