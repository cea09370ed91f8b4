package train

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/genmetrics"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// TestNewPolicyGridNet: a gridnet from NewPolicy has the weights of one
// built by hand from the same widths and seed, and a warm start writes its
// line.
func TestNewPolicyGridNet(t *testing.T) {
	seed := testSeed(t)
	pol, closePol, err := NewPolicy(context.Background(), PolicySpec{Kind: PolicyGridNet, Hidden: []int{8}, Seed: seed,
		GroupSize: 4, LR: learner.DefaultGRPOConfig().LR})
	if err != nil {
		t.Fatal(err)
	}
	defer closePol()
	ins, err := env.Generate(smallConfig(), seed, 0, 6)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pol.Play(ins, 4, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	want, err := gridTestPolicy(t, seed).Play(ins, 4, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Actions, want.Actions) || !slices.Equal(got.LogProbs, want.LogProbs) {
		t.Fatal("NewPolicy's gridnet plays unlike one built by hand")
	}
	var out bytes.Buffer
	warm, _, err := NewPolicy(context.Background(), PolicySpec{Kind: PolicyGridNet, Hidden: []int{8}, Seed: seed, GroupSize: 4,
		LR: 1e-3, WarmStart: &WarmStart{Steps: 1, Config: smallConfig(), Out: &out}})
	if err != nil {
		t.Fatal(err)
	}
	if warm.Version() == 0 || !strings.HasPrefix(out.String(), "warm start: 1 behaviour-cloning steps, accuracy ") {
		t.Fatalf("warm start: version %d, line %q", warm.Version(), out.String())
	}
}

// TestNewPolicyErrors: bad settings are *fielderr.Error naming the field,
// worded for a command line by Usage; other packages' errors stay
// reachable.
func TestNewPolicyErrors(t *testing.T) {
	ctx := context.Background()
	grid := PolicySpec{Kind: PolicyGridNet, Hidden: []int{8}, GroupSize: 4, LR: 1e-3}
	for _, c := range []struct {
		name  string
		spec  PolicySpec
		field string
		usage string // "": not checked
		is    error
	}{
		{"mistake rate", PolicySpec{Kind: PolicyScripted, MistakeRate: 1.5}, "mistake-rate", "--mistake-rate 1.5: out of range [0,1]", nil},
		{"unknown kind", PolicySpec{Kind: "lstm"}, "policy", "--policy lstm: want gridnet, qwen3, scripted or qwen3-endpoint", nil},
		{"device", func() PolicySpec { s := grid; s.Device = "tpu"; return s }(), "device", "", learner.ErrBadDevice},
		{"lr", func() PolicySpec { s := grid; s.LR = -1; return s }(), "", "", nil},
		{"widths", func() PolicySpec { s := grid; s.Hidden = []int{0}; return s }(), "", "", nil},
		{"no model", PolicySpec{Kind: PolicyQwen3, Text: textpolicy.DefaultOptions()}, "policy", "--policy qwen3: needs --model DIR", nil},
		{"max new tokens", PolicySpec{Kind: PolicyQwen3, ModelDir: t.TempDir()}, "max-new-tokens", "--max-new-tokens 0: out of range [1,32768]", nil},
		{"model dir", PolicySpec{Kind: PolicyQwen3, ModelDir: t.TempDir(), Text: textpolicy.DefaultOptions()}, "model", "", nil},
		{"endpoint", PolicySpec{Kind: EndpointPolicyName}, "endpoint", "", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := NewPolicy(ctx, c.spec)
			var oe *fielderr.Error
			if !errors.As(err, &oe) || !errors.Is(err, ErrOptions) || oe.Flag != c.field {
				t.Fatalf("error %v (%T), want a *fielderr.Error about %q", err, err, c.field)
			}
			if c.usage != "" && oe.Usage() != c.usage {
				t.Fatalf("usage %q, want %q", oe.Usage(), c.usage)
			}
			if c.is != nil && !errors.Is(err, c.is) {
				t.Fatalf("%v does not wrap %v", err, c.is)
			}
			if c.field == "" {
				var ce *fielderr.Error
				if !errors.As(oe.Err, &ce) || !errors.Is(ce, learner.ErrInvalidConfig) || oe.Usage() != ce.Error() {
					t.Fatalf("%v: want learner's field error, worded as it is", err)
				}
			}
		})
	}
}

// TestOptionErrorWording: Error and Usage with and without a value or a
// field.
func TestOptionErrorWording(t *testing.T) {
	t.Parallel()
	cause := errors.New("learner: device \"x\": bad")
	for _, c := range []struct {
		e            *fielderr.Error
		err, usage   string
		wrapsOptions bool
	}{
		{&fielderr.Error{Kind: ErrOptions, Flag: "stages", Value: -1, Reason: "must be in [1,1000]"}, "train: invalid options: stages = -1: must be in [1,1000]", "--stages -1: must be in [1,1000]", true},
		{causeError("device", cause), `train: invalid options: device: learner: device "x": bad`, `--device: learner: device "x": bad`, true},
		{causeError("", cause), `train: invalid options: learner: device "x": bad`, `learner: device "x": bad`, true},
	} {
		if c.e.Error() != c.err || c.e.Usage() != c.usage || errors.Is(c.e, ErrOptions) != c.wrapsOptions {
			t.Errorf("%#v: Error %q, Usage %q; want %q, %q", c.e, c.e.Error(), c.e.Usage(), c.err, c.usage)
		}
	}
	if !errors.Is(causeError("device", cause), cause) {
		t.Error("the cause is not reachable")
	}
}

// TestEngineErrorSorts: device errors and model errors are the settings'
// fault, a missing torch is the environment's.
func TestEngineErrorSorts(t *testing.T) {
	t.Parallel()
	var oe *fielderr.Error
	if err := EngineError("model", errors.New("torch: config.json: no such file")); !errors.As(err, &oe) || oe.Usage() != "--model: config.json: no such file" {
		t.Fatalf("model error: %v", err)
	}
	if err := EngineError("model", learner.ErrNoXLA); !errors.As(err, &oe) || oe.Flag != "device" {
		t.Fatalf("device error: %v", err)
	}
	if err := EngineError("model", nil); err != nil {
		t.Fatalf("nil: %v", err)
	}
}

// TestQwen3PolicyLearningRate: --lr reaches a qwen3 policy's optimizer
// (it once stopped at the gridnet), and no --lr keeps textpolicy's 1e-6.
func TestQwen3PolicyLearningRate(t *testing.T) {
	dir := tinyQwen3Dir(t)
	for _, c := range []struct {
		args []string
		want float64
	}{{nil, 1e-6}, {[]string{"--lr", "3e-4"}, 3e-4}} {
		var f Flags
		fs := flag.NewFlagSet("train", flag.ContinueOnError)
		f.Register(fs)
		if err := fs.Parse(append([]string{"--policy", "qwen3", "--model", dir, "--max-new-tokens", "8"}, c.args...)); err != nil {
			t.Fatal(err)
		}
		spec, err := f.policySpec(smallConfig(), slog.New(slog.DiscardHandler), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		pol, closePol, err := NewPolicy(context.Background(), spec)
		if err != nil {
			t.Fatal(err)
		}
		got := pol.(*textpolicy.Policy).Options().GRPO.LR
		_ = closePol()
		if got != c.want {
			t.Fatalf("%v: the policy trains at lr %g, want %g", c.args, got, c.want)
		}
	}
}

// TestQwen3PolicyGenSlots: --gen-slots routes a qwen3 policy's sampling through one scheduler
// that concurrent Play calls share; a negative value is an option error.
func TestQwen3PolicyGenSlots(t *testing.T) {
	dir := tinyQwen3Dir(t)
	parse := func(args ...string) (PolicySpec, error) { return qwen3Spec(t, dir, smallConfig(), args...) }
	var oe *fielderr.Error
	if _, err := parse("--gen-slots", "-1"); !errors.As(err, &oe) || oe.Flag != "gen-slots" {
		t.Fatalf("--gen-slots -1: %v", err)
	}
	spec, err := parse("--gen-slots", "8")
	if err != nil {
		t.Fatal(err)
	}
	pol, closePol, err := NewPolicy(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer closePol()
	tp := pol.(*textpolicy.Policy)
	t0 := time.Unix(1_700_000_000, 0)
	meter := NewSamplingMeter(pol, t0)
	if meter == nil {
		t.Fatal("no sampling meter for a policy with --gen-slots")
	}
	ins, err := env.Generate(env.Config{Agents: 2, Instances: 4, Sizes: []env.SizeConfig{{Size: 3, DataRatio: 0.5, HoleRatio: 0.1, WaitRatio: 0.5}}}, 5, 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { _, errs[i] = tp.Play(ins[2*i:2*i+2], 2, 1, uint64(i)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st, ok := tp.LM().SchedulerStats()
	if !ok || st.Requests < 2 || st.Tokens == 0 {
		t.Errorf("scheduler stats %+v (enabled %v): the rollouts did not go through it", st, ok)
	}
	// The live page's reading of the scheduler: rows per decode step at
	// once, tokens/s only over at least SamplingMinSpan.
	sm := meter.Status(t0.Add(time.Second))
	if sm == nil || sm.Tokens != st.Tokens || sm.Steps != st.Steps || sm.RowsPerDecodeStep != float64(st.StepRows)/float64(st.Steps) ||
		sm.RowsPerDecodeStep < 1 || sm.TokensPerSecondOver != 0 || sm.Slots != 8 || sm.MeanQueueWait != st.QueueWait/time.Duration(st.Admitted) {
		t.Errorf("sampling after 1 s: %+v, scheduler %+v", sm, st)
	}
	if sm := meter.Status(t0.Add(8 * time.Second)); sm == nil || sm.TokensPerSecondOver != 8*time.Second || sm.TokensPerSecond != float64(st.Tokens)/8 {
		t.Errorf("sampling after 8 s: %+v, want %d tokens over 8 s", sm, st.Tokens)
	}
	if m := NewSamplingMeter(&ScriptedPolicy{}, t0); m != nil {
		t.Errorf("a scripted policy has a sampling meter")
	}
	t.Logf("sampling: %s", meter.Status(t0.Add(8*time.Second)))
}

// TestRunSamplingStats: a qwen3 policy with --gen-slots reports what its scheduler did per
// stage (StageReport.Sampling, the "sampling:" line) and exposes the counters on the run's
// metrics.
func TestRunSamplingStats(t *testing.T) {
	seed := testSeed(t)
	dir := tinyQwen3Dir(t)
	cfg := smallConfig()
	cfg.Instances = 8
	spec, err := qwen3Spec(t, dir, cfg, "--gen-slots", "8")
	if err != nil {
		t.Fatal(err)
	}
	pol, closePol, err := NewPolicy(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	defer closePol()
	m, err := telemetry.NewMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	opt := Options{RunID: "sampling", Stages: 1, Seed: seed, Config: cfg, InstancesPerUnit: 2, GroupSize: 2,
		LearnerBatch: 2, ValPerSize: 1, EvalPerSize: 1, Rollouts: 2, Out: &out, Metrics: m}
	res, err := Run(context.Background(), opt, pol, openStore(t))
	if err != nil {
		t.Fatal(err)
	}
	s := res.Stages[0].Sampling
	if s == nil || s.Steps == 0 || s.StepRows < s.Steps || s.Tokens == 0 || s.Slots != 8 || s.Requests < 4 {
		t.Fatalf("stage sampling %+v", s)
	}
	if !strings.Contains(out.String(), fmt.Sprintf("sampling: %.1f rows/step of 8 slots", s.RowsPerStep())) {
		t.Errorf("no sampling line in:\n%s", out.String())
	}
	mfs, err := m.Gatherer().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var steps float64
	for _, mf := range mfs {
		if mf.GetName() == genmetrics.Steps {
			steps = mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	if steps < float64(s.Steps) {
		t.Errorf("%s = %v, the stage alone ran %d steps", genmetrics.Steps, steps, s.Steps)
	}
	t.Logf("%.2f rows per decode step, %d steps", s.RowsPerStep(), s.Steps)
	// The policy's device memory (GoMLX on the CPU: this process's RSS), as
	// the live page reads it.
	dm := NewDeviceMeter(pol)
	if dm == nil {
		t.Fatal("no device meter for a qwen3 policy")
	}
	dm.Status(time.Now())
	dm.Wait()
	if d := dm.Status(time.Now()); d.Bytes <= 0 || d.PeakBytes < d.Bytes || d.Source != "process RSS" || d.Device == "" || d.Error != "" {
		t.Errorf("device memory %+v", d)
	}
}

// qwen3Spec is the policy spec of t2t train's flags for a qwen3 policy on the checkpoint in
// dir (8 new tokens, the compact prompt) plus args.
func qwen3Spec(t *testing.T, dir string, cfg env.Config, args ...string) (PolicySpec, error) {
	t.Helper()
	var f Flags
	fs := flag.NewFlagSet("train", flag.ContinueOnError)
	f.Register(fs)
	if err := fs.Parse(append([]string{"--policy", "qwen3", "--model", dir, "--max-new-tokens", "8", "--prompt", "compact"}, args...)); err != nil {
		t.Fatal(err)
	}
	return f.policySpec(cfg, slog.New(slog.DiscardHandler), io.Discard)
}
