package env

import (
	"errors"
	"math"
	"testing"
)

func planNear(a, b float64) bool { return math.Abs(a-b) < 1e-12 }

type planRewardCase struct {
	name string
	in   *Instance
	rep  *Report
	obj  Objective
	want float64
}

func TestAccuracyReward(t *testing.T) {
	rows := []string{"....", "....", "....", "...."}
	in := planInst(t, rows, planAg(0, 0, 0, 2), planAg(3, 0, 3, 1))
	in.SOC, in.Makespan = 10, 5 // costs set by hand; only the arithmetic matters here
	valid := func(soc, mk int) *Report { return &Report{Valid: true, SOC: soc, Makespan: mk} }
	cases := []planRewardCase{
		{"invalid", in, &Report{Valid: false, SOC: 10, Makespan: 5}, SumOfCosts, 0},
		{"optimal", in, valid(10, 7), SumOfCosts, 1},
		{"better than recorded optimum", in, valid(9, 5), SumOfCosts, 1},
		{"c=1 of c_max=20", in, valid(11, 5), SumOfCosts, 1 - 0.7*1/20.0},
		{"c=c_max", in, valid(30, 5), SumOfCosts, 0.3},
		{"c just below c_max", in, valid(29, 5), SumOfCosts, 1 - 0.7*19/20.0},
		{"c>c_max", in, valid(31, 5), SumOfCosts, 0.3},
		{"makespan optimal", in, valid(30, 5), MakespanObjective, 1},
		{"makespan c=2 of 10", in, valid(10, 7), MakespanObjective, 1 - 0.7*2/10.0},
		{"makespan c>c_max", in, valid(10, 16), MakespanObjective, 0.3},
	}
	triv := planInst(t, rows, planAg(1, 1, 1, 1))
	cases = append(cases,
		planRewardCase{"optimum 0, cost 0", triv, valid(0, 0), SumOfCosts, 1},
		planRewardCase{"optimum 0, cost 2", triv, valid(2, 2), SumOfCosts, 0.3},
	)
	un := in.Clone()
	un.SOC, un.Makespan = 0, 0
	cases = append(cases, planRewardCase{"unsolved instance: validity only", un, valid(17, 9), SumOfCosts, 1})
	for _, c := range cases {
		if got := AccuracyReward(c.in, c.rep, c.obj); !planNear(got, c.want) {
			t.Errorf("%s: got %v want %v", c.name, got, c.want)
		}
	}
}

func TestAccuracyRewardFromVerify(t *testing.T) {
	in := planInst(t, []string{"....", "....", "....", "...."}, planAg(0, 0, 0, 2), planAg(3, 0, 3, 1))
	in.SOC, in.Makespan = 3, 2
	var rep Report
	VerifyAnswer(in, "<answer>Agent 0: RIGHT RIGHT\nAgent 1: WAIT RIGHT</answer>", &rep)
	if got := AccuracyReward(in, &rep, SumOfCosts); !planNear(got, 1-0.7*1/6.0) {
		t.Fatalf("soc reward %v (report %+v)", got, rep)
	}
	if got := AccuracyReward(in, &rep, MakespanObjective); got != 1 {
		t.Fatalf("makespan reward %v", got)
	}
	VerifyAnswer(in, "<answer>Agent 0: RIGHT RIGHT\nAgent 1: UP</answer>", &rep)
	if got := AccuracyReward(in, &rep, SumOfCosts); got != 0 {
		t.Fatalf("invalid plan reward %v", got)
	}
}

func TestLengthReward(t *testing.T) {
	c := DefaultRewardConfig()
	cases := []struct {
		tokens int
		want   float64
	}{
		{0, 0}, {1500, 0}, {1501, -1 / 2596.0}, {2798, -0.5}, {4095, -2595 / 2596.0}, {4096, -1}, {100000, -1},
	}
	for _, tc := range cases {
		if got := LengthReward(tc.tokens, c); !planNear(got, tc.want) {
			t.Errorf("LengthReward(%d) = %v want %v", tc.tokens, got, tc.want)
		}
	}
	if got := ShortShare([]int{1, 1500, 1501, 5000}, c); got != 0.5 {
		t.Errorf("ShortShare = %v", got)
	}
	if ShortShare(nil, c) != 0 {
		t.Error("ShortShare(nil)")
	}
}

func TestLengthSchedule(t *testing.T) {
	var s LengthSchedule
	if a, l := s.Weights(); a != 0.5 || l != 0.5 {
		t.Fatalf("zero value weights %v %v", a, l)
	}
	var nilS *LengthSchedule
	if a, l := nilS.Weights(); a != 0.5 || l != 0.5 {
		t.Fatalf("nil weights %v %v", a, l)
	}
	cases := []struct{ r, wAcc float64 }{
		{0, 0.5}, {0.49, 0.5}, {0.5, 0.5}, {0.6, 0.575}, {0.7, 0.65}, {0.8, 0.725}, {0.9, 0.8}, {0.95, 0.8}, {1, 0.8},
	}
	for _, c := range cases {
		s := LengthSchedule{EMA: c.r, Initialized: true}
		a, l := s.Weights()
		if !planNear(a, c.wAcc) || !planNear(a+l, 1) {
			t.Errorf("r=%v: weights %v %v want %v", c.r, a, l, c.wAcc)
		}
	}
	// EMA: first observation taken as is, then decay.
	s.Observe(0.2, 0.9)
	if !s.Initialized || s.EMA != 0.2 {
		t.Fatalf("first observe: %+v", s)
	}
	s.Observe(1, 0.9)
	if !planNear(s.EMA, 0.28) {
		t.Fatalf("second observe: %v want 0.28", s.EMA)
	}
	s.Observe(math.NaN(), 0.9)
	s.Observe(7, 0.5) // clipped to 1
	if !planNear(s.EMA, 0.64) {
		t.Fatalf("NaN ignored, 7 clipped: %v want 0.64", s.EMA)
	}
	for range 200 {
		s.Observe(1, 0.9)
	}
	if a, l := s.Weights(); a != 0.8 || !planNear(l, 0.2) {
		t.Fatalf("converged weights %v %v", a, l)
	}
}

func TestReward(t *testing.T) {
	in := planInst(t, []string{"....", "....", "....", "...."}, planAg(0, 0, 0, 2))
	in.SOC, in.Makespan = 2, 2
	c := DefaultRewardConfig()
	rep := &Report{Valid: true, SOC: 2, Makespan: 2}
	if got := Reward(in, rep, 100, c, nil); got != 0.5 {
		t.Errorf("short optimal, fresh schedule: %v", got)
	}
	if got := Reward(in, rep, 2798, c, nil); !planNear(got, 0.5-0.25) {
		t.Errorf("long optimal: %v", got)
	}
	s := &LengthSchedule{EMA: 0.7, Initialized: true}
	if got := Reward(in, rep, 4096, c, s); !planNear(got, 0.65-0.35) {
		t.Errorf("r=0.7, too long: %v", got)
	}
	if got := Reward(in, &Report{}, 5000, c, s); !planNear(got, -0.35) {
		t.Errorf("invalid, too long: %v", got)
	}
	c.Objective = MakespanObjective
	if got := Reward(in, &Report{Valid: true, SOC: 9, Makespan: 3}, 0, c, s); !planNear(got, 0.65*(1-0.7*1/4.0)) {
		t.Errorf("makespan objective: %v", got)
	}
}

func TestRewardConfigValidate(t *testing.T) {
	if err := DefaultRewardConfig().Validate(); err != nil {
		t.Fatal(err)
	}
	d := DefaultRewardConfig()
	if d.L1 != 1500 || d.L2 != 4096 || d.EMADecay != 0.9 || d.Objective != SumOfCosts {
		t.Fatalf("defaults %+v", d)
	}
	bad := []struct {
		field string
		mod   func(*RewardConfig)
	}{
		{"objective", func(c *RewardConfig) { c.Objective = 7 }},
		{"l1", func(c *RewardConfig) { c.L1 = -1 }},
		{"l2", func(c *RewardConfig) { c.L2 = c.L1 }},
		{"ema_decay", func(c *RewardConfig) { c.EMADecay = 1 }},
		{"ema_decay", func(c *RewardConfig) { c.EMADecay = -0.1 }},
		{"ema_decay", func(c *RewardConfig) { c.EMADecay = math.NaN() }},
		{"partial", func(c *RewardConfig) { c.Partial = RewardFloor }},
		{"partial", func(c *RewardConfig) { c.Partial = -0.01 }},
		{"partial", func(c *RewardConfig) { c.Partial = math.NaN() }},
	}
	for _, b := range bad {
		c := DefaultRewardConfig()
		b.mod(&c)
		err := c.Validate()
		var fe *FieldError
		if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &fe) || fe.Field != b.field {
			t.Errorf("%s: got %v", b.field, err)
		}
	}
}

// TestPartialCredit verifies real answers on a 3-agent instance and checks
// Report.CleanAgents and the accuracy reward with and without partial
// credit: an agent is clean when no failure names it (a conflict names
// both agents).
func TestPartialCredit(t *testing.T) {
	// Agents 0 and 1 walk along rows 0 and 2; agent 2 waits at (3,3).
	// (1,1) and (1,2) are holes.
	in := planInst(t, []string{"....", ".HH.", "....", "...."}, planAg(0, 0, 0, 2), planAg(2, 0, 2, 2), planAg(3, 3, 3, 3))
	in.SOC, in.Makespan = 4, 2
	cases := []struct {
		name   string
		answer string
		clean  int
	}{
		{"valid", "<answer>Agent 0: RIGHT RIGHT\nAgent 1: RIGHT RIGHT\nAgent 2: WAIT</answer>", 3},
		{"agent 0 into a hole", "<answer>Agent 0: DOWN RIGHT UP RIGHT\nAgent 1: RIGHT RIGHT\nAgent 2: WAIT</answer>", 2},
		{"agent 1 short of its goal", "<answer>Agent 0: RIGHT RIGHT\nAgent 1: RIGHT\nAgent 2: WAIT</answer>", 2},
		{"agents 1 and 2 collide", "<answer>Agent 0: RIGHT RIGHT\nAgent 1: DOWN RIGHT RIGHT RIGHT UP LEFT\nAgent 2: LEFT RIGHT</answer>", 1},
		{"agent 2 missing (a plan, not text)", "", 2},
		{"an extra agent (a plan, not text)", "", 3},
		{"every agent fails", "<answer>Agent 0: DOWN\nAgent 1: UP\nAgent 2: UP</answer>", 0},
		{"not parsable", "no plan here", 0},
	}
	row0 := []Pos{{0, 0}, {0, 1}, {0, 2}}
	row2 := []Pos{{2, 0}, {2, 1}, {2, 2}}
	plans := map[string]*Plan{
		cases[4].name: {Paths: [][]Pos{row0, row2}},
		cases[5].name: {Paths: [][]Pos{row0, row2, {{3, 3}}, {{0, 3}}}},
	}
	var rep Report
	for _, c := range cases {
		if p, ok := plans[c.name]; ok {
			Verify(in, p, &rep)
		} else {
			VerifyAnswer(in, c.answer, &rep)
		}
		if rep.CleanAgents != c.clean {
			t.Errorf("%s: CleanAgents %d want %d (failures %v)", c.name, rep.CleanAgents, c.clean, rep.Failures)
			continue
		}
		paper := DefaultRewardConfig()
		partial := paper
		partial.Partial = 0.2
		want := 0.2 * float64(c.clean) / 3
		if rep.Valid {
			want = AccuracyReward(in, &rep, SumOfCosts)
		}
		if got := partial.Accuracy(in, &rep); !planNear(got, want) {
			t.Errorf("%s: partial 0.2 gives R_acc %v want %v", c.name, got, want)
		}
		if got, want := paper.Accuracy(in, &rep), AccuracyReward(in, &rep, SumOfCosts); got != want {
			t.Errorf("%s: partial 0 gives R_acc %v, the paper's %v", c.name, got, want)
		}
		if got := Reward(in, &rep, 10, partial, nil); !planNear(got, 0.5*want) {
			t.Errorf("%s: Reward %v want %v", c.name, got, 0.5*want)
		}
	}
	if got := PartialCredit(&Instance{}, &rep); got != 0 {
		t.Errorf("no agents: %v", got)
	}
}
