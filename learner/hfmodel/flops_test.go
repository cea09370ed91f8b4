package hfmodel

import (
	"testing"
)

// The FLOPs formula against a hand count for the tiny preset (hidden 64, 2 layers, 4 q / 2 kv
// heads of 16, intermediate 128, vocab 512, tied).
func TestTrainFLOPsPerTokenTiny(t *testing.T) {
	cfg, err := Preset(PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	// Per layer: 2 norms (2·64) + q (64·64) + k, v (2·32·64) + o (64·64) + q/k norms (2·16)
	// + gate, up, down (3·64·128) = 37,024; 2 layers + final norm 64 + tied table 512·64.
	const n = 2*37024 + 64 + 512*64
	if cfg.NumParams() != n || n != 106880 || cfg.MatmulParams() != n {
		t.Fatalf("NumParams %d, MatmulParams %d, hand count %d", cfg.NumParams(), cfg.MatmulParams(), n)
	}
	// seqLen 32: 6·N + 12·layers·(heads·head_dim)·seqLen = 641,280 + 12·2·64·32 (49,152).
	if got := cfg.TrainFLOPsPerToken(32, 0); got != 690432 {
		t.Fatalf("full fine-tuning: %v FLOPs/token, want 690432", got)
	}
	// LoRA r4 on all seven projections: 4·(128+96+96+128+192+192+192)·2 layers = 8,192
	// adapter parameters; 4·N + 6·8,192 + 49,152.
	lc := LoRAConfig{Rank: 4, Alpha: 8, Targets: LoRATargets}
	if p := cfg.LoRAParams(lc); p != 8192 {
		t.Fatalf("LoRA params %d, want 8192", p)
	}
	if got := cfg.TrainFLOPsPerToken(32, 8192); got != 4*106880+6*8192+49152 {
		t.Fatalf("LoRA: %v FLOPs/token", got)
	}
	// Untied: the input table is a lookup, the head a matmul of the same size: same N.
	cfg.TieWordEmbeddings = false
	if got := cfg.TrainFLOPsPerToken(32, 0); got != 690432 || cfg.MatmulParams() != n {
		t.Fatalf("untied: %v FLOPs/token (N %d), want 690432", got, cfg.MatmulParams())
	}
}
