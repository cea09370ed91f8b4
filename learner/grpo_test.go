package learner

import (
	"errors"
	"math"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

func TestGroupAdvantages(t *testing.T) {
	r := []float32{1, 0, 0, 1, 0.5, 0.5, 0.5, 0.5}
	got := GroupAdvantages(r, 4, false, nil)
	want := []float32{0.5, -0.5, -0.5, 0.5, 0, 0, 0, 0}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("unscaled[%d]=%v want %v", i, got[i], want[i])
		}
	}
	got = GroupAdvantages(r, 4, true, got)
	s := float32(1 / (0.5 + AdvEps)) // population std of {1,0,0,1} is 0.5
	for i := range want {
		if math.Abs(float64(got[i]-want[i]*s)) > 1e-5 {
			t.Fatalf("scaled[%d]=%v want %v", i, got[i], want[i]*s)
		}
	}
	st := ZeroSignal(r, 4)
	if st.Groups != 2 || st.ZeroSignal != 1 || st.ZeroShare() != 0.5 {
		t.Fatalf("ZeroSignal=%+v", st)
	}
	if st := ZeroSignal(r, 2); st.Groups != 4 || st.ZeroSignal != 2 {
		t.Fatalf("ZeroSignal(2)=%+v", st)
	}
}

func TestAgentGroupAdvantages(t *testing.T) {
	// One group of 3 episodes × 2 agents: agent 0 rewards {1,0,1}, agent 1 rewards {1,1,1}.
	r := []float32{1, 1, 0, 1, 1, 1}
	got := AgentGroupAdvantages(r, 3, 2, false, nil)
	want := []float32{1.0 / 3, 0, -2.0 / 3, 0, 1.0 / 3, 0}
	for i := range want {
		if math.Abs(float64(got[i]-want[i])) > 1e-6 {
			t.Fatalf("adv[%d]=%v want %v (all %v)", i, got[i], want[i], got)
		}
	}
}

func TestGRPOConfigValidate(t *testing.T) {
	if err := DefaultGRPOConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		field string
		mod   func(*GRPOConfig)
	}{
		{"GroupSize", func(c *GRPOConfig) { c.GroupSize = 1 }},
		{"ClipEps", func(c *GRPOConfig) { c.ClipEps = 0 }},
		{"ClipEps", func(c *GRPOConfig) { c.ClipEps = math.NaN() }},
		{"ISCap", func(c *GRPOConfig) { c.ISCap = 1.1 }},
		{"KLCoef", func(c *GRPOConfig) { c.KLCoef = -1 }},
		{"LR", func(c *GRPOConfig) { c.LR = 0 }},
		{"WeightDecay", func(c *GRPOConfig) { c.WeightDecay = 1 }},
		{"MaxGradNorm", func(c *GRPOConfig) { c.MaxGradNorm = -1 }},
		{"MicroBatch", func(c *GRPOConfig) { c.MicroBatch = 0 }},
		{"LengthBuckets", func(c *GRPOConfig) { c.LengthBuckets = []int{4, 2} }},
	}
	for _, c := range cases {
		cfg := DefaultGRPOConfig()
		c.mod(&cfg)
		err := cfg.Validate()
		var ce *fielderr.Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || ce.Field != "GRPOConfig."+c.field {
			t.Errorf("%s: got %v", c.field, err)
		}
	}
	cfg := DefaultGRPOConfig()
	cfg.ISCap = 0
	if err := cfg.Validate(); err != nil {
		t.Errorf("ISCap=0 must be valid: %v", err)
	}
}

// ---- Toy task: a sequence bandit. The policy is a table of logits per position; reward is the
// share of positions where the target action was chosen. Chance is 1/V.
