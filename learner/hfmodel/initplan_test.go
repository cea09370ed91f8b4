package hfmodel

import (
	"fmt"
	"strings"
	"testing"
)

// TestWritePlan: two lines, the shape and size of the preset, then the
// training memory estimate.
func TestWritePlan(t *testing.T) {
	cfg, err := Preset(PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := (InitOptions{Preset: PresetTiny}).WritePlan(&b, cfg); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want0 := fmt.Sprintf("preset tiny: %d layers, hidden %d, ", cfg.NumHiddenLayers, cfg.HiddenSize)
	want1 := "training memory (GRPO, micro-batch 8 × 2048 tokens): " + EstimateMemory(cfg, 8, 2048, false).String()
	if len(lines) != 2 || !strings.HasPrefix(lines[0], want0) || !strings.HasSuffix(lines[0], "GiB of float32 weights") || lines[1] != want1 {
		t.Fatalf("wrote:\n%s", b.String())
	}
	// With shape overrides the line says the preset was reshaped.
	b.Reset()
	if err := (InitOptions{Preset: PresetTiny, Shape: Shape{Layers: 6}}).WritePlan(&b, cfg); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "preset tiny, reshaped: ") {
		t.Fatalf("with --layers 6 wrote:\n%s", b.String())
	}
}
