package hfmodel

import (
	"errors"
	"math"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// The warm-up generation runs the same padded shapes as the timed one (so it compiles its
// prefill and decode graphs) with as few tokens as can, and at least one decode step.
func TestWarmupTokens(t *testing.T) {
	for _, tc := range []struct{ b, p, n, want int }{
		{4, 512, 256, 193}, {3, 10, 12, 2}, {1, 3, 100, 89}, {2, 64, 64, 33}, {2, 64, 65, 65}, {2, 4, 2, 2},
	} {
		got := WarmupTokens(tc.b, tc.p, tc.n)
		if got != tc.want {
			t.Errorf("WarmupTokens(%d, %d, %d) = %d, want %d", tc.b, tc.p, tc.n, got, tc.want)
		}
		b, p, s := GenerateShape(tc.b, tc.p, tc.n)
		if wb, wp, ws := GenerateShape(tc.b, tc.p, got); wb != b || wp != p || ws != s || got < 2 || got > tc.n {
			t.Errorf("WarmupTokens(%d, %d, %d) = %d: shape (%d, %d, %d), timed (%d, %d, %d)", tc.b, tc.p, tc.n, got, wb, wp, ws, b, p, s)
		}
		if _, _, ws := GenerateShape(tc.b, tc.p, got-1); got > 2 && ws == s {
			t.Errorf("WarmupTokens(%d, %d, %d) = %d: %d tokens run the same shapes", tc.b, tc.p, tc.n, got, got-1)
		}
	}
}

// Shape overrides of the tiny preset (hidden 64, 2 layers, 4/2 heads of 16, intermediate 128,
// vocab 512, θ 1e6): what each field changes, and the field each bad value names.
func TestShapeApply(t *testing.T) {
	tiny, err := Preset(PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name  string
		shape Shape
		want  func(c *Config) // applied to the preset: the expected result
		field string          // the field error's field when the shape is refused
	}{
		{"none", Shape{}, func(*Config) {}, ""},
		{"deeper narrower", Shape{Layers: 3, Hidden: 32, Intermediate: 96, RopeTheta: 1e4}, func(c *Config) {
			c.NumHiddenLayers, c.HiddenSize, c.HeadDim, c.IntermediateSize, c.RopeTheta = 3, 32, 8, 96, 1e4
		}, ""},
		{"heads keep the hidden size", Shape{Heads: 8}, func(c *Config) {
			c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim = 8, 4, 8
		}, ""},
		{"heads and kv heads", Shape{Hidden: 96, Heads: 6, KVHeads: 1, Vocab: 300}, func(c *Config) {
			c.HiddenSize, c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim, c.VocabSize = 96, 6, 1, 16, 300
		}, ""},
		{"one head", Shape{Heads: 1}, func(c *Config) { c.NumAttentionHeads, c.NumKeyValueHeads, c.HeadDim = 1, 1, 64 }, ""},
		{"negative layers", Shape{Layers: -1}, nil, "Shape.Layers"},
		{"negative kv heads", Shape{KVHeads: -2}, nil, "Shape.KVHeads"},
		{"negative vocab", Shape{Vocab: -2}, nil, "Shape.Vocab"},
		{"NaN theta", Shape{RopeTheta: math.NaN()}, nil, "Shape.RopeTheta"},
		{"hidden not a multiple of the heads", Shape{Hidden: 30}, nil, "Shape.Hidden"},
		{"odd head_dim", Shape{Hidden: 36}, nil, "Shape.Hidden"},
		{"heads that do not divide the kept hidden size", Shape{Heads: 3}, nil, "Shape.Hidden"},
		{"kv heads that do not divide the heads", Shape{KVHeads: 3}, nil, "num_key_value_heads"},
		{"theta ≤ 1", Shape{RopeTheta: 0.5}, nil, "rope_theta"},
	} {
		got, err := tc.shape.Apply(tiny)
		if tc.field != "" {
			var ce *fielderr.Error
			if !errors.As(err, &ce) || ce.Field != tc.field || !errors.Is(err, learner.ErrInvalidConfig) {
				t.Errorf("%s: %v, want a field error naming %s", tc.name, err, tc.field)
			}
			continue
		}
		want := tiny
		tc.want(&want)
		if err != nil || got.NumHiddenLayers != want.NumHiddenLayers || got.HiddenSize != want.HiddenSize || got.HeadDim != want.HeadDim ||
			got.NumAttentionHeads != want.NumAttentionHeads || got.NumKeyValueHeads != want.NumKeyValueHeads ||
			got.IntermediateSize != want.IntermediateSize || got.VocabSize != want.VocabSize || got.RopeTheta != want.RopeTheta {
			t.Errorf("%s: %+v, %v; want %+v", tc.name, got, err, want)
		}
	}
}
