package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/testutil"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// TestMain fails the package's tests if a goroutine outlives them (Cluster runs Redis and the
// simulated actors).
func TestMain(m *testing.M) { goleak.VerifyTestMain(m, testutil.IgnoreProtoactor()...) }

var tinySetup = Setup{Source: Source{Preset: hfmodel.PresetTiny, Seed: 1}, Engine: engine.Spec{Device: gomlxtrain.DeviceCPU}}

// GRPO on an in-memory tiny model: the FLOPs per step are qwen3's per-token count times the
// step's tokens, a micro-batch of 2 rows of T = 31 pads to [2, 32], and the steps move the
// weights.
func TestGRPOFLOPsAndPaddedShape(t *testing.T) {
	o := DefaultGRPOOptions()
	o.Batch, o.PromptLen, o.CompletionLen, o.MicroBatch, o.Steps, o.LR, o.PeakTFLOPS = 4, 16, 16, 2, 2, 1e-3, 0.5
	var logged []string
	s := tinySetup
	s.Log = func(line string) { logged = append(logged, line) }
	rep, err := RunGRPO(context.Background(), s, o)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := s.Source.Config()
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case cfg.VocabSize != textpolicy.DefaultTinyVocab:
		t.Errorf("tiny preset: vocab %d, want the tiny tokenizer's %d", cfg.VocabSize, textpolicy.DefaultTinyVocab)
	case len(logged) != 1 || !strings.HasPrefix(logged[0], "tiny, 0.1527M parameters; memory estimate per micro-batch of 2 × 32 tokens: "):
		t.Errorf("log %q", logged)
	case rep.Model != "tiny" || rep.Device != "cpu" || rep.Bench != "grpo" || !strings.HasPrefix(rep.Backend, "gomlx: "):
		t.Errorf("header %+v", rep)
	case rep.FLOPsPerStep != cfg.TrainFLOPsPerToken(32, 0)*128:
		t.Errorf("FLOPs/step %v, want %v", rep.FLOPsPerStep, cfg.TrainFLOPsPerToken(32, 0)*128)
	case rep.PaddedShape != [2]int{2, 32}:
		t.Errorf("padded shape %v, want [2 32]", rep.PaddedShape)
	case math.Abs(rep.MFU-rep.AchievedTF/0.5) > 1e-12 || !(rep.ParamDelta > 0) || !(rep.BuildSec > 0):
		t.Errorf("MFU %v, achieved %v, Δ %v, build %v", rep.MFU, rep.AchievedTF, rep.ParamDelta, rep.BuildSec)
	}
}

// Decode warms up on the same padded shapes and generates every token of every row.
func TestDecodeWarmupAndTokens(t *testing.T) {
	ctx := context.Background()
	m, err := engine.NewRandom(ctx, engine.Spec{Device: gomlxtrain.DeviceCPU}, mustPreset(t), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	o := DefaultDecodeOptions()
	o.Batch, o.PromptLen, o.NewTokens, o.Temperature = 3, 10, 12, 0
	rep, err := Decode(m, o)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Generated != 36 || math.Abs(rep.DecodeTokPS*rep.DecodeSec-3*11) > 1e-6 || rep.Model != "" || rep.BuildSec != 0 {
		t.Errorf("%+v", rep)
	}
}

func mustPreset(t *testing.T) hfmodel.Config {
	t.Helper()
	c, err := hfmodel.Preset(hfmodel.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Each input problem is typed: a field error naming the option, an *OpenError for a
// checkpoint that does not load, a *MemoryError for a CPU run that does not fit.
func TestRunErrors(t *testing.T) {
	ctx := context.Background()
	field := func(err error) string {
		var ce *fielderr.Error
		if !errors.As(err, &ce) {
			return "not a field error: " + errString(err)
		}
		return ce.Field
	}
	grpo := func(edit func(*Setup, *GRPOOptions)) error {
		s, o := tinySetup, DefaultGRPOOptions()
		edit(&s, &o)
		_, err := RunGRPO(ctx, s, o)
		return err
	}
	decode := func(edit func(*Setup, *DecodeOptions)) error {
		s, o := tinySetup, DefaultDecodeOptions()
		edit(&s, &o)
		_, err := RunDecode(ctx, s, o)
		return err
	}
	for _, tc := range []struct {
		err   error
		field string
	}{
		{grpo(func(_ *Setup, o *GRPOOptions) { o.Batch = 0 }), "GRPOOptions.Batch"},
		{grpo(func(_ *Setup, o *GRPOOptions) { o.CompletionLen = -3 }), "GRPOOptions.CompletionLen"},
		{grpo(func(_ *Setup, o *GRPOOptions) { o.LoRARank = -1 }), "GRPOOptions.LoRARank"},
		{grpo(func(_ *Setup, o *GRPOOptions) { o.PeakTFLOPS = math.Inf(1) }), "GRPOOptions.PeakTFLOPS"},
		{grpo(func(_ *Setup, o *GRPOOptions) { o.LR = 2 }), "GRPOConfig.LR"},
		{grpo(func(_ *Setup, o *GRPOOptions) { o.PromptLen = 40000; o.CompletionLen = 1000 }), "GRPOOptions.PromptLen+CompletionLen"},
		{grpo(func(s *Setup, _ *GRPOOptions) { s.Source.Preset = "7b" }), "preset"},
		{grpo(func(s *Setup, _ *GRPOOptions) { s.Source.Shape.Hidden = 30 }), "Shape.Hidden"},
		{decode(func(_ *Setup, o *DecodeOptions) { o.NewTokens = 1 }), "DecodeOptions.NewTokens"},
		{decode(func(_ *Setup, o *DecodeOptions) { o.Temperature = math.NaN() }), "DecodeOptions.Temperature"},
		{decode(func(_ *Setup, o *DecodeOptions) { o.PromptLen = 40960 }), "DecodeOptions.PromptLen+NewTokens"},
	} {
		if got := field(tc.err); got != tc.field {
			t.Errorf("%v: field %s, want %s", tc.err, got, tc.field)
		}
	}
	var oe *OpenError
	err := grpo(func(s *Setup, _ *GRPOOptions) { s.Source.Dir = "/nonexistent/t2t-model" })
	if !errors.As(err, &oe) || oe.Dir != "/nonexistent/t2t-model" {
		t.Errorf("missing checkpoint: %v", err)
	}
	if err := decode(func(s *Setup, _ *DecodeOptions) { s.Engine.Device = "gpu" }); !errors.As(err, &oe) || oe.Dir != "" || !errors.Is(err, learner.ErrBadDevice) {
		t.Errorf("bad device: %v", err)
	}
	// A 4b-shape step on the CPU is refused before anything is allocated (unless this machine
	// really has the memory).
	cfg, _ := hfmodel.Preset(hfmodel.Preset4BShape)
	if need := hfmodel.EstimateMemory(cfg, 8, 128, false).Total(); MemAvailable() > 0 && MemAvailable() < need {
		var me *MemoryError
		err := grpo(func(s *Setup, o *GRPOOptions) { s.Source.Preset = hfmodel.Preset4BShape })
		if !errors.As(err, &me) || me.Need != need || !errors.Is(err, ErrNotEnoughMemory) {
			t.Errorf("4b-shape on the CPU: %v", err)
		}
	}
	if MemAvailable() < 0 || PeakRSS() <= 0 {
		t.Errorf("MemAvailable %d, PeakRSS %d", MemAvailable(), PeakRSS())
	}
}

func errString(err error) string {
	if err == nil {
		return "nil"
	}
	return err.Error()
}

// The tables of t2t bench grpo and decode, from fixed reports: the format of the command's
// output (run with -update to accept a change).
func TestReportText(t *testing.T) {
	cfg := mustPreset(t)
	mem := MemoryReport{HostPeakRSS: 45 << 20, GoSys: 17 << 20, GoHeapPeak: 8 << 20, Device: "none (CPU backend: tensors are in the Go heap)"}
	g := &GRPOReport{Bench: "grpo", Model: "tiny", Device: "cpu", Backend: "gomlx: SimpleGo (go)", Params: 106880, Trainable: 106880,
		Batch: 2, PromptLen: 8, CompLen: 8, MicroBatch: 8, PaddedShape: [2]int{2, 16}, EstimateB: 3 << 20, BuildSec: 0.001, WarmupSec: 0.03,
		Steps: 1, StepSec: 0.011, StepMinSec: 0.011, TokensPerSec: 2919.9, FLOPsPerStep: 2.131e7, FLOPsFormula: GRPOFLOPsFormula,
		AchievedTF: 0.001944, Loss: -2.23452, GradNorm: 10.1311, ParamDelta: 0.000109, Memory: mem, Config: cfg}
	var b bytes.Buffer
	if err := g.WriteText(&b, "t2t bench grpo"); err != nil {
		t.Fatal(err)
	}
	g.PeakTFLOPS, g.PeakLabel, g.MFU = 1, "H200 x", 0.0016
	if err := g.WriteText(&b, "t2t bench grpo"); err != nil {
		t.Fatal(err)
	}
	d := &DecodeReport{Bench: "decode", Model: "tiny", Device: "cpu", Backend: "gomlx: SimpleGo (go)", Params: 106880, Batch: 2, PromptLen: 4,
		NewTokens: 4, EstimateB: 1 << 18, PrefillSec: 0.0019, DecodeSec: 0.0017, TotalSec: 0.0036, DecodeTokPS: 3539.8, PerTokenMS: 0.56,
		PrefillTokPS: 4320, Generated: 8, Memory: mem, Config: cfg}
	if err := d.WriteText(&b, "t2t bench decode"); err != nil {
		t.Fatal(err)
	}
	testutil.Golden(t, filepath.Join("testdata", "report.txt.golden"), b.Bytes())
}

// The cluster simulation on the embedded Redis: the profiles asked for, where each saturates.
func TestClusterProfiles(t *testing.T) {
	o := DefaultClusterOptions()
	o.Rollouts, o.RecordUnits, o.Profiles = []int{1, 2}, 5, []string{"gridnet"}
	var b bytes.Buffer
	points, err := Cluster(context.Background(), o, &b)
	if err != nil {
		t.Fatal(err)
	}
	if len(points) != 2 || !strings.Contains(b.String(), "profile gridnet:") || strings.Contains(b.String(), "profile control") ||
		!strings.Contains(b.String(), "saturates at R=2") {
		t.Errorf("%d points:\n%s", len(points), b.String())
	}
	for _, bad := range []ClusterOptions{{RecordUnits: 1, Rollouts: []int{0}}, {RecordUnits: 0, Rollouts: []int{1}}, {RecordUnits: 1, Rollouts: []int{1}, Profiles: []string{"nope"}}} {
		var ce *fielderr.Error
		if err := bad.Validate(); !errors.As(err, &ce) {
			t.Errorf("%+v: %v", bad, err)
		}
	}
	if names := ClusterProfileNames(); len(names) < 2 || names[0] != "gridnet" {
		t.Errorf("profiles %v", names)
	}
}

// The memory estimate of a LoRA run counts the adapters of the rank asked for, and the log
// line says which.
func TestGRPOLoRAEstimateAtItsRank(t *testing.T) {
	cfg, err := tinySetup.Source.Config()
	if err != nil {
		t.Fatal(err)
	}
	for _, rank := range []int{4, 8, 16} {
		o := DefaultGRPOOptions()
		o.Batch, o.PromptLen, o.CompletionLen, o.MicroBatch, o.Steps, o.LoRARank = 2, 8, 8, 2, 1, rank
		var logged []string
		s := tinySetup
		s.Log = func(line string) { logged = append(logged, line) }
		rep, err := RunGRPO(context.Background(), s, o)
		if err != nil {
			t.Fatal(err)
		}
		want := hfmodel.EstimateTrainMemory(cfg, 2, 16, o.lora(), s.Engine.TrainLayout())
		if want.TrainableParams != cfg.LoRAParams(o.lora()) || rep.EstimateB != want.Total() || rep.Trainable != want.TrainableParams {
			t.Errorf("r%d: estimate %d B for %d trainable, report %d B / %d trainable", rank, want.Total(), want.TrainableParams, rep.EstimateB, rep.Trainable)
		}
		note := fmt.Sprintf("(LoRA r%d adapters)", rank)
		if len(logged) != 1 || !strings.Contains(logged[0], note) || strings.Contains(logged[0], "r16") != (rank == 16) {
			t.Errorf("r%d: log %q, want %q", rank, logged, note)
		}
	}
	full := hfmodel.EstimateTrainMemory(cfg, 2, 16, hfmodel.LoRAConfig{}, hfmodel.TrainLayout{})
	if full != hfmodel.EstimateMemory(cfg, 2, 16, false) || full.TrainableParams != cfg.NumParams() {
		t.Errorf("rank 0: %+v, want full fine-tuning", full)
	}
	if hfmodel.EstimateMemory(cfg, 2, 16, true) != hfmodel.EstimateTrainMemory(cfg, 2, 16, hfmodel.DefaultLoRAConfig(), hfmodel.TrainLayout{}) {
		t.Error("EstimateMemory(lora) is not EstimateTrainMemory at DefaultLoRAConfig")
	}
}
