package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

func TestBenchGRPO(t *testing.T) {
	for _, tc := range []struct {
		name  string
		args  []string
		flops float64 // per step: FLOPs/token · 4 rows · 32 tokens
	}{
		{"full", nil, (6*152704 + 49152) * 128}, // N = 152,704: the tiny model of vocab 1228
		{"lora", []string{"--lora-rank", "4"}, (4*152704 + 6*8192 + 49152) * 128},
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
			var r bench.GRPOReport
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
	var r bench.DecodeReport
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
	cfg, _ := hfmodel.Preset(hfmodel.Preset4BShape)
	if need := hfmodel.EstimateMemory(cfg, 8, 128, false).Total(); bench.MemAvailable() > 0 && bench.MemAvailable() < need {
		code, _, e := t2t(t, "bench", "grpo", "--preset", "4b-shape", "--prompt-len", "64", "--completion-len", "64")
		if code != 2 || !strings.Contains(e, "exceeds the memory available") {
			t.Errorf("4b-shape on the CPU: exit %d: %s", code, e)
		}
	}
}
