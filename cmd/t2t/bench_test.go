package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/learner/qwen3"
)

// The FLOPs formula against a hand count for the tiny preset (hidden 64, 2 layers, 4 q / 2 kv
// heads of 16, intermediate 128, vocab 512, tied).
func TestTrainFLOPsPerTokenTiny(t *testing.T) {
	cfg, err := qwen3.Preset(qwen3.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	// Per layer: 2 norms (2·64) + q (64·64) + k, v (2·32·64) + o (64·64) + q/k norms (2·16)
	// + gate, up, down (3·64·128) = 37,024; 2 layers + final norm 64 + tied table 512·64.
	const n = 2*37024 + 64 + 512*64
	if cfg.NumParams() != n || n != 106880 {
		t.Fatalf("NumParams %d, hand count %d", cfg.NumParams(), n)
	}
	// seqLen 32: 6·N + 12·layers·(heads·head_dim)·seqLen = 641,280 + 12·2·64·32 (49,152).
	if got := TrainFLOPsPerToken(cfg, 32, 0); got != 690432 {
		t.Fatalf("full fine-tuning: %v FLOPs/token, want 690432", got)
	}
	// LoRA r4 on all seven projections: 4·(128+96+96+128+192+192+192)·2 layers = 8,192
	// adapter parameters; 4·N + 6·8,192 + 49,152.
	lc := qwen3.LoRAConfig{Rank: 4, Alpha: 8, Targets: qwen3.LoRATargets}
	if p := cfg.LoRAParams(lc); p != 8192 {
		t.Fatalf("LoRA params %d, want 8192", p)
	}
	if got := TrainFLOPsPerToken(cfg, 32, 8192); got != 4*106880+6*8192+49152 {
		t.Fatalf("LoRA: %v FLOPs/token", got)
	}
	// Untied: the input table is a lookup, the head a matmul of the same size: same N.
	cfg.TieWordEmbeddings = false
	if got := TrainFLOPsPerToken(cfg, 32, 0); got != 690432 {
		t.Fatalf("untied: %v FLOPs/token, want 690432", got)
	}
}

func TestBenchGRPO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		flops float64 // per step: FLOPs/token · 4 rows · 32 tokens
	}{
		{"full", nil, 690432 * 128},
		{"lora", []string{"--lora-rank", "4"}, (4*106880 + 6*8192 + 49152) * 128},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"bench", "grpo", "--preset", "tiny", "--batch", "4", "--prompt-len", "16", "--completion-len", "16",
				"--steps", "2", "--micro-batch", "2", "--lr", "1e-3", "--peak-tflops", "0.5", "--json"}, tc.args...)
			code, out, e := t2t(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, e)
			}
			if !strings.Contains(e, "memory estimate") {
				t.Errorf("no memory estimate on stderr: %s", e)
			}
			var r grpoReport
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			t.Logf("%s", out)
			switch {
			case r.Bench != "grpo" || !strings.HasPrefix(r.Backend, "gomlx: ") || r.Batch != 4 || r.Steps != 2:
				t.Errorf("header: %+v", r)
			case !(r.StepSec > 0) || !(r.TokensPerSec > 0) || math.Abs(r.TokensPerSec*r.StepSec-128) > 1e-6:
				t.Errorf("step %v s, %v tokens/s: want tokens/s · step = 4·32", r.StepSec, r.TokensPerSec)
			case r.FLOPsPerStep != tc.flops:
				t.Errorf("FLOPs/step %v, want %v", r.FLOPsPerStep, tc.flops)
			case math.Abs(r.AchievedTF-r.FLOPsPerStep/r.StepSec/1e12) > 1e-12 || math.Abs(r.MFU-r.AchievedTF/0.5) > 1e-12:
				t.Errorf("achieved %v TFLOP/s, MFU %v", r.AchievedTF, r.MFU)
			case math.IsNaN(r.Loss) || !(r.GradNorm > 0):
				t.Errorf("loss %v, grad norm %v", r.Loss, r.GradNorm)
			case !(r.ParamDelta > 0):
				t.Errorf("the steps did not move the probe logits")
			case r.PaddedShape != [2]int{2, 32}:
				t.Errorf("padded shape %v, want [2 32] (T = 31 → bucket 32)", r.PaddedShape)
			case r.Memory.GoSys <= 0 || r.Memory.GoHeapPeak <= 0:
				t.Errorf("memory %+v", r.Memory)
			}
			if tc.name == "lora" && (r.Trainable != 8192 || r.LoRARank != 4) {
				t.Errorf("LoRA: %d trainable, rank %d", r.Trainable, r.LoRARank)
			}
		})
	}
	// The table.
	code, out, e := t2t(t, "bench", "grpo", "--preset", "tiny", "--batch", "2", "--prompt-len", "8", "--completion-len", "8", "--steps", "1")
	if code != 0 {
		t.Fatalf("table: exit %d: %s", code, e)
	}
	for _, want := range []string{"GRPO step", "tokens/s", "model FLOPs/step", "not computed (pass --peak-tflops)", "weights moved", "host peak RSS"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchDecode(t *testing.T) {
	code, out, e := t2t(t, "bench", "decode", "--preset", "tiny", "--batch", "3", "--prompt-len", "10", "--new-tokens", "12", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	var r decodeReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	t.Logf("%s", out)
	switch {
	case r.Generated != 36:
		t.Errorf("generated %d tokens, want 3·12", r.Generated)
	case !(r.PrefillSec > 0) || !(r.DecodeSec > 0) || !(r.DecodeTokPS > 0):
		t.Errorf("prefill %v s, decode %v s, %v tokens/s", r.PrefillSec, r.DecodeSec, r.DecodeTokPS)
	case math.Abs(r.DecodeTokPS*r.DecodeSec-3*11) > 1e-6:
		t.Errorf("decode tokens/s · decode time = %v, want 3·11", r.DecodeTokPS*r.DecodeSec)
	case math.Abs(r.PrefillSec+r.DecodeSec-r.TotalSec) > 1e-6:
		t.Errorf("prefill %v + decode %v ≠ total %v", r.PrefillSec, r.DecodeSec, r.TotalSec)
	}
	code, out, e = t2t(t, "bench", "decode", "--preset", "tiny", "--batch", "2", "--prompt-len", "4", "--new-tokens", "4", "--temperature", "0")
	if code != 0 || !strings.Contains(out, "decode tokens/s") || !strings.Contains(out, "prefill") {
		t.Fatalf("table: exit %d: %s%s", code, out, e)
	}
}

// The warm-up generation runs the same padded shapes as the timed one (so it compiles its
// prefill and decode graphs) with as few tokens as can, and at least one decode step.
func TestWarmupTokens(t *testing.T) {
	for _, tc := range []struct{ b, p, n, want int }{
		{4, 512, 256, 193}, {3, 10, 12, 2}, {1, 3, 100, 89}, {2, 64, 64, 33}, {2, 64, 65, 65}, {2, 4, 2, 2},
	} {
		got := warmupTokens(tc.b, tc.p, tc.n)
		if got != tc.want {
			t.Errorf("warmupTokens(%d, %d, %d) = %d, want %d", tc.b, tc.p, tc.n, got, tc.want)
		}
		b, p, s := qwen3.GenerateShape(tc.b, tc.p, tc.n)
		if wb, wp, ws := qwen3.GenerateShape(tc.b, tc.p, got); wb != b || wp != p || ws != s || got < 2 || got > tc.n {
			t.Errorf("warmupTokens(%d, %d, %d) = %d: shape (%d, %d, %d), timed (%d, %d, %d)", tc.b, tc.p, tc.n, got, wb, wp, ws, b, p, s)
		}
		if _, _, ws := qwen3.GenerateShape(tc.b, tc.p, got-1); got > 2 && ws == s {
			t.Errorf("warmupTokens(%d, %d, %d) = %d: %d tokens run the same shapes", tc.b, tc.p, tc.n, got, got-1)
		}
	}
}

func TestBenchBadFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench"}, "missing subcommand"},
		{[]string{"bench", "train"}, "unknown subcommand"},
		{[]string{"bench", "grpo", "--batch", "-1"}, "--batch -1"},
		{[]string{"bench", "grpo", "--prompt-len", "0"}, "--prompt-len 0"},
		{[]string{"bench", "grpo", "--completion-len", "-3"}, "--completion-len -3"},
		{[]string{"bench", "grpo", "--steps", "0"}, "--steps 0"},
		{[]string{"bench", "grpo", "--lora-rank", "-1"}, "--lora-rank -1"},
		{[]string{"bench", "grpo", "--micro-batch", "0"}, "--micro-batch 0"},
		{[]string{"bench", "grpo", "--peak-tflops", "-5"}, "--peak-tflops -5"},
		{[]string{"bench", "grpo", "--preset", "7b"}, "--preset"},
		{[]string{"bench", "grpo", "--lr", "2"}, "LR"},
		{[]string{"bench", "grpo", "--device", "gpu"}, "--device"},
		{[]string{"bench", "grpo", "--model", "/nonexistent/t2t-model"}, "--model"},
		{[]string{"bench", "grpo", "--prompt-len", "40000", "--completion-len", "1000"}, "exceeds the model's 40960 positions"},
		{[]string{"bench", "decode", "--new-tokens", "1"}, "--new-tokens 1"},
		{[]string{"bench", "decode", "--batch", "0"}, "--batch 0"},
		{[]string{"bench", "decode", "--temperature", "-1"}, "--temperature -1"},
		{[]string{"bench", "decode", "--preset", "huge"}, "--preset"},
		{[]string{"bench", "decode", "extra"}, "unexpected argument"},
	} {
		code, _, e := t2t(t, tc.args...)
		if code != 2 || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, e, tc.want)
		}
	}
	// A 4b-shape GRPO step on the CPU is refused before anything is allocated (unless this
	// machine really has the memory).
	cfg, _ := qwen3.Preset(qwen3.Preset4BShape)
	if need := qwen3.EstimateMemory(cfg, 8, 128, false).Total(); memAvailable() > 0 && memAvailable() < need {
		code, _, e := t2t(t, "bench", "grpo", "--preset", "4b-shape", "--prompt-len", "64", "--completion-len", "64")
		if code != 2 || !strings.Contains(e, "exceeds the memory available") {
			t.Errorf("4b-shape on the CPU: exit %d: %s", code, e)
		}
	}
}
