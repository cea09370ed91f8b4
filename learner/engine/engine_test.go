package engine

import (
	"errors"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// TestSpecValidate: the options each engine has; the others are *fielderr.Error naming
// the field.
func TestSpecValidate(t *testing.T) {
	for _, c := range []struct {
		spec  Spec
		field string // "" = valid
	}{
		{Spec{}, ""},
		{Spec{Kind: Torch, Device: "cuda:1", Autocast: "bf16", ActivationCheckpointing: true}, ""},
		{Spec{Kind: GoMLX, ActivationCheckpointing: true}, "activation-checkpointing"},
		{Spec{ActivationCheckpointing: true}, "activation-checkpointing"}, // gomlx by default
		{Spec{Kind: GoMLX, Autocast: "bf16"}, "autocast"},
		{Spec{Kind: Torch, Device: "tpu"}, "device"},
	} {
		err := c.spec.Validate()
		var ce *fielderr.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%+v: %v", c.spec, err)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field):
			t.Errorf("%+v: %v, want a field error on %s", c.spec, err, c.field)
		}
	}
	if err := (Spec{Kind: "jax"}).Validate(); !errors.Is(err, ErrUnknownEngine) {
		t.Errorf("jax: %v", err)
	}
}

// TestTrainLayout: each engine's memory layout for the estimate.
func TestTrainLayout(t *testing.T) {
	if l := (Spec{}).TrainLayout(); l != (hfmodel.TrainLayout{}) {
		t.Errorf("gomlx: %+v, want the plain layout", l)
	}
	want := hfmodel.TrainLayout{LogProbChunk: TorchLogProbChunk, ActivationCheckpointing: true, InPlaceGradients: true}
	if l := (Spec{Kind: Torch, ActivationCheckpointing: true}).TrainLayout(); l != want {
		t.Errorf("torch: %+v, want %+v", l, want)
	}
}
