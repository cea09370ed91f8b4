package hfmodel

import (
	"math"
	"testing"
)

// GenerateMemory counts the KV cache of the padded shapes six times (three live copies, twice
// for the Go heap), grows with rows and
// tokens, and saturates instead of overflowing.
func TestGenerateMemory(t *testing.T) {
	cfg, err := Preset(PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	b, _, s := GenerateShape(16, 10, 40000)
	kv := int64(2*cfg.NumHiddenLayers*b*s*cfg.NumKeyValueHeads*cfg.HeadDim) * 4
	got := cfg.GenerateMemory(16, 10, 40000)
	if got < 6*kv || got > 7*kv {
		t.Fatalf("GenerateMemory(16, 10, 40000) = %d, want 6–7× the KV cache %d", got, kv)
	}
	if a, b := cfg.GenerateMemory(1, 10, 100), cfg.GenerateMemory(2, 10, 100); a >= b {
		t.Errorf("2 rows (%d) not above 1 row (%d)", b, a)
	}
	if a, b := cfg.GenerateMemory(1, 10, 100), cfg.GenerateMemory(1, 10, 1000); a >= b {
		t.Errorf("1000 new tokens (%d) not above 100 (%d)", b, a)
	}
	if a, b := cfg.GenerateMemory(1, 10, 100), cfg.GenerateMemory(1, 1000, 100); a >= b {
		t.Errorf("a 1000-token prompt (%d) not above a 10-token one (%d)", b, a)
	}
	huge := cfg
	huge.HiddenSize, huge.IntermediateSize, huge.NumAttentionHeads, huge.HeadDim = 1<<30, 1<<30, 1<<20, 1<<20
	for _, c := range []struct {
		cfg        Config
		n, p, news int
	}{{huge, 64, 1 << 20, 1 << 20}, {cfg, 16, 10, 1 << 41}, {cfg, 1 << 50, 10, 10}} {
		if got := c.cfg.GenerateMemory(c.n, c.p, c.news); got != math.MaxInt64 {
			t.Errorf("GenerateMemory(%d, %d, %d) of a huge shape = %d, want MaxInt64", c.n, c.p, c.news, got)
		}
	}
}
