package experiment

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

func TestExperimentArmsAndIDs(t *testing.T) {
	arms, err := ParseArms("fixed, llm ,rules", "F;F,G;F+G+H0+T")
	if err != nil {
		t.Fatal(err)
	}
	var labels []string
	for _, a := range arms {
		labels = append(labels, a.Label)
	}
	if got := strings.Join(labels, " "); got != "fixed llm[F] llm[F,G] llm[F,G,H0,T] rules" {
		t.Fatalf("arms: %s", got)
	}
	// self and base are llm arms answered by a checkpoint.
	arms, err = ParseArms("fixed,self,base", "F,G,H0,T")
	if err != nil || len(arms) != 3 || arms[1] != (Arm{Label: "self[F,G,H0,T]", Strategy: "llm", Modules: arms[1].Modules, Engineer: "self"}) ||
		arms[2].Label != "base[F,G,H0,T]" || arms[2].Engineer != "base" || arms[2].Strategy != "llm" {
		t.Fatalf("self/base arms: %+v, %v", arms, err)
	}
	if cp, ep := LLMEngineer(arms); !cp || ep {
		t.Fatalf("LLMEngineer(self, base) = %v, %v", cp, ep)
	}
	if id := RunID("llm[F,G,H0,T]", 3); id != "exp-llm-F-G-H0-T-s3" {
		t.Fatalf("run id %q", id)
	}
	for _, bad := range []struct{ strategies, modules, msg string }{
		{"fixed,fixed", "F", `--strategies: "fixed" given twice`},
		{"nosuch", "F", `--strategies: unknown strategy "nosuch" (want ` + strings.Join(ArmNames(), ", ") + ")"},
		{"llm", "F;F", "--modules: variant F given twice"},
		{"llm", "F,Q", `--modules "F,Q": `},
		{"", "F", "--strategies: no strategy given"},
	} {
		_, err := ParseArms(bad.strategies, bad.modules)
		var oe *fielderr.Error
		if !errors.As(err, &oe) || !strings.HasPrefix(oe.Usage(), bad.msg) {
			t.Errorf("ParseArms(%q, %q) = %v, want a *fielderr.Error %q", bad.strategies, bad.modules, err, bad.msg)
		}
	}
	if got := CommandLine("t2t experiment", []string{"--modules", "F;F,G", "--out", "x y", ""}); got != `t2t experiment --modules 'F;F,G' --out 'x y' ''` {
		t.Fatalf("command line %s", got)
	}
	var buf bytes.Buffer
	w := &prefixWriter{w: &buf, prefix: "> "}
	io.WriteString(w, "a\nb")
	io.WriteString(w, "c\n\nd\n")
	if buf.String() != "> a\n> bc\n> \n> d\n" {
		t.Fatalf("prefixed: %q", buf.String())
	}
}

// testOptions are t2t experiment's defaults.
func testOptions() Options {
	return Options{
		RunSettings: train.RunSettings{Stages: 8, Epochs: 1, EvalPerSize: 10, ValPerSize: 20, GroupSize: 8, LearnerBatch: 32, InstancesPerUnit: 16,
			Policy: "gridnet", Hidden: "128,128", Device: "cpu", MistakeRate: 0.05, LR: 1e-3},
		Config: BaseConfig(env.DefaultLocalConfig()), Rollouts: 2, SuiteSeed: DefaultSuiteSeed,
	}
}

// legacyFingerprint is the fingerprint as cmd/t2t computed it from a
// hand-kept list of settings before this package existed.
func legacyFingerprint(arm Arm, seed uint64, o *Options) string {
	settings := struct {
		Config                                   string
		Stages, EvalPer, ValPer, Group, Batch    int
		Rollouts, PerUnit                        int
		Policy, Hidden, Device, LLMURL, LLMModel string
		Mistake, LR                              float64
		SuiteSeed                                uint64 `json:",omitempty"`
	}{env.Config(o.Config).Hash(), o.Stages, o.EvalPerSize, o.ValPerSize, o.GroupSize, o.LearnerBatch, o.Rollouts, o.InstancesPerUnit,
		o.Policy, o.Hidden, o.Device, o.LLMURL, o.LLMModel, o.MistakeRate, o.LR, 0}
	if o.SuiteSeed != 2026 {
		settings.SuiteSeed = uint64(o.SuiteSeed)
	}
	b, _ := json.Marshal(struct {
		Arm, Strategy, Modules string
		Seed                   uint64
		Settings               any
	}{arm.Label, arm.Strategy, arm.Modules.String(), seed, settings})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// TestFingerprintMatchesLegacy: runs saved before Options existed keep
// their fingerprints, so a rerun reuses them.
func TestFingerprintMatchesLegacy(t *testing.T) {
	arms, err := ParseArms("fixed,llm", "F;F,G,H0,T")
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	variants := []func(*Options){
		func(*Options) {},
		func(o *Options) { o.SuiteSeed = 7 },
		func(o *Options) { o.Policy, o.MistakeRate, o.Config.Instances = "scripted", 0.1, 32 },
		func(o *Options) { o.LLMURL, o.LLMModel, o.Hidden, o.LR = "http://x/v1", "m", "32", 3e-4 },
	}
	for i, v := range variants {
		v(&o)
		for _, a := range arms {
			for _, seed := range []uint64{1, 3} {
				if got, want := o.Fingerprint(a, seed), legacyFingerprint(a, seed, &o); got != want {
					t.Errorf("variant %d, %s seed %d: fingerprint %s, legacy %s", i, a.Label, seed, got, want)
				}
			}
		}
	}
}

// TestFingerprintGolden: fingerprints computed before train.RunSettings
// became the one tree of run settings (at 78e1967) stay as they were, for a
// gridnet run and for an LLM run with every LLM setting set.
func TestFingerprintGolden(t *testing.T) {
	arms, err := ParseArms("fixed,self", "F,G,H0,T")
	if err != nil {
		t.Fatal(err)
	}
	o := testOptions()
	if got, want := o.Fingerprint(arms[0], 1), "668ac740287b6614bce82808"; got != want {
		t.Errorf("gridnet, fixed, seed 1: %s, want %s", got, want)
	}
	o.Epochs, o.Policy, o.LR = 2, "qwen3", 1e-6
	o.Model, o.Engine, o.MaxNewTokens, o.Prompt, o.Thinking = "/m", "torch", 256, "compact", true
	o.EngineerMaxTokens, o.EngineerTemperature, o.EngineerRetries, o.EngineerPrompt = 300, 0.5, 2, "compact"
	o.EngineSpec = engine.Spec{Kind: "torch"}
	if got, want := o.Fingerprint(arms[1], 3), "65baaeb66d794a2283463df2"; got != want {
		t.Errorf("qwen3, self, seed 3: %s, want %s", got, want)
	}
}

// notFingerprinted are the Options fields left out of the fingerprint;
// each says why in its doc comment. Adding one is a decision this list
// records.
var notFingerprinted = []string{"EngineSpec", "Arms", "Seeds", "LLMAPIKey", "Title", "Command", "Baseline", "Dir", "Resume", "Out", "Logger", "NewPolicy"}

// TestFingerprintCoversEveryField changes each Options field in turn, and
// each field of its train.RunSettings: every one must change the
// fingerprint but those in notFingerprinted, which must not. The arm and
// the seed change it too.
func TestFingerprintCoversEveryField(t *testing.T) {
	base := testOptions()
	arm := Arm{Label: "fixed", Strategy: "fixed"}
	fp := base.Fingerprint(arm, 1)
	typ := reflect.TypeFor[Options]()
	for i := range typ.NumField() {
		f := typ.Field(i)
		if f.Type == reflect.TypeFor[train.RunSettings]() { // each of its settings on its own
			for j := range f.Type.NumField() {
				o := testOptions()
				changeField(t, f.Type.Field(j).Name, reflect.ValueOf(&o.RunSettings).Elem().Field(j), &o)
				if o.Fingerprint(arm, 1) == fp {
					t.Errorf("field RunSettings.%s does not change the fingerprint", f.Type.Field(j).Name)
				}
			}
			continue
		}
		o := testOptions()
		if !changeField(t, f.Name, reflect.ValueOf(&o).Elem().Field(i), &o) {
			continue // a func, interface or pointer field: none is fingerprinted
		}
		if changed := o.Fingerprint(arm, 1) != fp; changed == slices.Contains(notFingerprinted, f.Name) {
			t.Errorf("field %s: changes the fingerprint %v, want %v", f.Name, changed, !changed)
		}
	}
	for _, other := range []struct {
		arm  Arm
		seed uint64
	}{{Arm{Label: "rules", Strategy: "rules"}, 1}, {arm, 2}, {Arm{Label: "fixed", Strategy: "fixed", Modules: engineer.Modules{F: true}}, 1},
		{Arm{Label: "fixed", Strategy: "fixed", Engineer: "self"}, 1}} {
		if base.Fingerprint(other.arm, other.seed) == fp {
			t.Errorf("arm %+v seed %d has the fingerprint of fixed seed 1", other.arm, other.seed)
		}
	}
	// One epoch is left out (runs saved before epochs existed); two are in.
	o := testOptions()
	o.Epochs = 0
	if o.Fingerprint(arm, 1) != fp {
		t.Error("epochs 0 and 1 have different fingerprints")
	}
	o.Epochs = 2
	if o.Fingerprint(arm, 1) == fp {
		t.Error("--epochs 2 has the fingerprint of one epoch")
	}
	// The default suite seed is left out; another is in.
	o = testOptions()
	o.SuiteSeed = 2027
	if o.Fingerprint(arm, 1) == fp {
		t.Error("--suite-seed 2027 has the default's fingerprint")
	}
}

func TestOptionErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		err  *fielderr.Error
		want string
	}{
		{&fielderr.Error{Flag: "strategies", Reason: "no strategy given"}, "--strategies: no strategy given"},
		{&fielderr.Error{Flag: "modules", Value: strconv.Quote(""), Reason: "empty"}, `--modules "": empty`},
		{&fielderr.Error{Flag: "seeds", Value: 0, Reason: "out of range"}, "--seeds 0: out of range"},
	} {
		if got := tc.err.Usage(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.err, got, tc.want)
		}
	}
}

// TestRunReusesSavedRuns runs one scripted arm for one stage, reruns to
// reuse it, then changes a setting: the saved run is stale and runs again.
func TestRunReusesSavedRuns(t *testing.T) {
	cfg := env.DefaultLocalConfig()
	cfg.Instances = 16
	built := 0
	var out bytes.Buffer
	o := Options{
		RunSettings: train.RunSettings{Stages: 1, EvalPerSize: 1, ValPerSize: 1, GroupSize: 2, LearnerBatch: 8, InstancesPerUnit: 16,
			Policy: "scripted", MistakeRate: 0.2},
		Config: BaseConfig(cfg), Rollouts: 1, SuiteSeed: DefaultSuiteSeed,
		Arms: []Arm{{Label: "fixed", Strategy: "fixed"}}, Seeds: []uint64{1}, Title: "t", Baseline: "nosuch",
		Dir: t.TempDir(), Resume: true, Out: &out,
	}
	o.NewPolicy = func(_ Arm, _ uint64) (train.Policy, func() error, error) {
		built++
		return &train.ScriptedPolicy{MistakeRate: o.MistakeRate}, nil, nil
	}
	exp, err := Run(context.Background(), o)
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if len(exp.Runs) != 1 || exp.Baseline != "" || exp.Runs[0].RunID != "exp-fixed-s1" || len(exp.Runs[0].Stages) != 1 || built != 1 {
		t.Fatalf("experiment %+v, %d policies built", exp, built)
	}
	if !strings.Contains(out.String(), "[1/1] fixed seed 1: run exp-fixed-s1") || !strings.Contains(out.String(), "  [fixed s1] ") {
		t.Fatalf("output:\n%s", out.String())
	}
	b, err := os.ReadFile(RunPath(o.Dir, "exp-fixed-s1"))
	if err != nil {
		t.Fatal(err)
	}
	var f RunFile
	if err := json.Unmarshal(b, &f); err != nil || f.Fingerprint != o.Fingerprint(o.Arms[0], 1) {
		t.Fatalf("run file: %v, fingerprint %q", err, f.Fingerprint)
	}
	js, _ := os.ReadFile(filepath.Join(o.Dir, "experiment.json"))
	if _, err := report.ParseExperimentJSON(js); err != nil {
		t.Fatalf("experiment.json: %v", err)
	}
	out.Reset()
	again, err := Run(context.Background(), o)
	if err != nil || built != 1 || !strings.Contains(out.String(), ": reusing ") || !reflect.DeepEqual(again.Runs, exp.Runs) {
		t.Fatalf("rerun: %v, %d policies built\n%s", err, built, out.String())
	}
	o.MistakeRate = 0.3
	out.Reset()
	if _, err := Run(context.Background(), o); err != nil || built != 2 || strings.Contains(out.String(), ": reusing ") {
		t.Fatalf("changed setting: %v, %d policies built\n%s", err, built, out.String())
	}
	if _, err := Run(context.Background(), Options{}); !errors.Is(err, ErrOptions) {
		t.Fatalf("empty options: %v", err)
	}
}

// changeField changes the value v of field name of o; false for the
// kinds it does not change (funcs, interfaces, pointers).
func changeField(t *testing.T, name string, v reflect.Value, o *Options) bool {
	t.Helper()
	switch v.Kind() {
	case reflect.Int:
		v.SetInt(v.Int() + 1)
	case reflect.Uint64:
		v.SetUint(v.Uint() + 1)
	case reflect.Float64:
		v.SetFloat(v.Float()/2 + 0.25)
	case reflect.String:
		v.SetString(v.String() + "x")
	case reflect.Bool:
		v.SetBool(!v.Bool())
	case reflect.Slice:
		v.Set(reflect.Append(v, reflect.Zero(v.Type().Elem())))
	case reflect.Struct:
		switch v.Type() {
		case reflect.TypeFor[BaseConfig]():
			o.Config.Instances++
		case reflect.TypeFor[engine.Spec]():
			o.EngineSpec.Threads++
		default:
			t.Fatalf("field %s: no change known for %s", name, v.Type())
		}
	case reflect.Func, reflect.Interface, reflect.Pointer:
		return false
	default:
		t.Fatalf("field %s: no change known for kind %s: teach this test", name, v.Kind())
	}
	return true
}
