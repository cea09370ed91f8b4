package engineer

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

func TestParseStrategy(t *testing.T) {
	opts := Options{LLM: LLMOptions{BaseURL: "http://127.0.0.1:1/v1", Model: "m"}}
	for _, name := range StrategyNames() {
		s, err := ParseStrategy(name, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if s.Name() != name {
			t.Errorf("%s: Name() = %q", name, s.Name())
		}
	}
	if s, err := ParseStrategy(" Rules ", Options{}); err != nil || s.Name() != NameRules {
		t.Errorf("case and spaces: %v", err)
	}
	if _, err := ParseStrategy("genetic", opts); !errors.Is(err, ErrUnknownStrategy) {
		t.Errorf("unknown: %v", err)
	}
	bad := []Options{
		{}, // llm without URL
		{LLM: LLMOptions{BaseURL: "ftp://x/v1", Model: "m"}},
		{LLM: LLMOptions{BaseURL: "http://x/v1"}},
		{LLM: LLMOptions{BaseURL: "http://x/v1", Model: "m", Temperature: 3}},
		{LLM: LLMOptions{BaseURL: "http://x/v1", Model: "m", CallBudget: -1}},
	}
	for i, o := range bad {
		if _, err := ParseStrategy(NameLLM, o); !errors.Is(err, ErrOptions) {
			t.Errorf("bad llm options %d: %v", i, err)
		}
	}
	if _, err := ParseStrategy(NameRules, Options{Rules: &RulesOptions{Low: 0.9, High: 0.1}}); !errors.Is(err, ErrOptions) {
		t.Errorf("bad rules options: %v", err)
	}
	lo := DefaultLearnabilityOptions()
	lo.Floor = -1
	if _, err := ParseStrategy(NameLearnability, Options{Learnability: &lo}); !errors.Is(err, ErrOptions) {
		t.Errorf("bad learnability options: %v", err)
	}
	if _, err := ParseStrategy(NameRandom, Options{Limits: &Limits{HoleMax: 2}}); !errors.Is(err, ErrOptions) {
		t.Errorf("bad limits: %v", err)
	}
}

// engHeuristics returns the strategies that need no endpoint.
func engHeuristics(t *testing.T, opts Options) []Strategy {
	t.Helper()
	var out []Strategy
	for _, name := range []string{NameFixed, NameRandom, NameRules, NameLearnability} {
		s, err := ParseStrategy(name, opts)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	return out
}

// TestHeuristicsConformance: on random histories every strategy returns a
// valid config without error, within the limits, with its attempts
// recorded; a cancelled context is the only error.
func TestHeuristicsConformance(t *testing.T) {
	rng, seed := engTestRNG(t, 21)
	lim := DefaultLimits()
	for _, s := range engHeuristics(t, Options{Seed: seed}) {
		for i := range 150 {
			h := engRandHistory(rng)
			p, err := s.Propose(context.Background(), h)
			if err != nil {
				t.Fatalf("%s case %d: %v", s.Name(), i, err)
			}
			if err := p.Config.Validate(); err != nil {
				t.Fatalf("%s case %d: invalid config: %v\n%+v", s.Name(), i, err, p.Config)
			}
			if p.Rationale == "" || len(p.Attempts) == 0 {
				t.Fatalf("%s case %d: no rationale or attempts", s.Name(), i)
			}
			accepted := 0
			for _, a := range p.Attempts {
				if a.Accepted {
					accepted++
				}
			}
			if accepted != 1 {
				t.Fatalf("%s case %d: %d accepted attempts", s.Name(), i, accepted)
			}
			if s.Name() == NameFixed {
				continue // keeps whatever round 0 was
			}
			prev := engPrevious(h, env.DefaultConfig())
			if p.Config.Agents != prev.Agents || p.Config.Instances != prev.Instances || len(p.Config.Sizes) != len(prev.Sizes) {
				t.Fatalf("%s case %d: shape changed: %+v → %+v", s.Name(), i, prev, p.Config)
			}
			for j, sc := range p.Config.Sizes {
				if sc.HoleRatio > lim.HoleMax+1e-12 || sc.WaitRatio > lim.WaitMax+1e-12 {
					// Only random draws from scratch; rules and learnability
					// clip too, whatever the previous config held.
					t.Fatalf("%s case %d: size %d outside limits: %+v", s.Name(), i, j, sc)
				}
			}
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := s.Propose(ctx, engHandHistory()); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled context gave %v", s.Name(), err)
		}
	}
}

func TestFixed(t *testing.T) {
	h := engHandHistory()
	p, err := NewFixed(Options{}).Propose(context.Background(), h)
	if err != nil || p.Config.Hash() != h.Stages[0].Config.Hash() {
		t.Errorf("fixed did not keep round 0: %v", err)
	}
	base := env.DefaultLocalConfig()
	p, _ = NewFixed(Options{Base: &base}).Propose(context.Background(), nil)
	if p.Config.Hash() != base.Hash() {
		t.Error("fixed without stages did not return the base config")
	}
}

func TestRandomDeterministic(t *testing.T) {
	h := engHandHistory()
	draw := func(seed uint64, stages int) env.Config {
		r, err := NewRandom(Options{Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		hh := *h
		hh.Stages = h.Stages[:stages]
		p, err := r.Propose(context.Background(), &hh)
		if err != nil {
			t.Fatal(err)
		}
		return p.Config
	}
	a, b := draw(7, 2), draw(7, 2)
	if a.Hash() != b.Hash() {
		t.Error("same seed and stage gave different configs")
	}
	if draw(7, 3).Hash() == a.Hash() || draw(8, 2).Hash() == a.Hash() {
		t.Error("another stage or seed gave the same config")
	}
	if draw(7, 0).Validate() != nil {
		t.Error("round-0 draw invalid")
	}
	// Feasibility: a check that rejects everything leaves the previous config.
	r, _ := NewRandom(Options{Seed: 1, Feasible: func(env.Config) error { return errors.New("never") }})
	p, err := r.Propose(context.Background(), h)
	if err != nil || !p.Fallback || p.Config.Hash() != h.Stages[2].Config.Hash() || len(p.Attempts) != randomTries {
		t.Errorf("all infeasible: fallback %v, %d attempts, %v", p.Fallback, len(p.Attempts), err)
	}
	// A check that rejects large hole ratios gets a redraw that passes it.
	lowHoles := func(c env.Config) error {
		for _, s := range c.Sizes {
			if s.HoleRatio > 0.4 {
				return fmt.Errorf("size %d: hole ratio %.2f", s.Size, s.HoleRatio)
			}
		}
		return nil
	}
	rng, seed := engTestRNG(t, 5)
	for range 50 {
		r, _ := NewRandom(Options{Seed: rng.Uint64(), Feasible: lowHoles})
		p, _ := r.Propose(context.Background(), h)
		if lowHoles(p.Config) != nil {
			t.Fatalf("seed %d: an infeasible config was proposed", seed)
		}
	}
}

// engOneStage builds a history of one stage over the given sizes, with the
// validation valid rates pv (optimal = 0.6·valid) and training rates pt.
func engOneStage(sizes []int, pv, pt []float64, n int64) *History {
	c := env.Config{Agents: 2, Instances: 1000}
	for _, s := range sizes {
		c.Sizes = append(c.Sizes, env.SizeConfig{Size: s, DataRatio: 1 / float64(len(sizes)), HoleRatio: 0.2, WaitRatio: 0.3})
	}
	st := StageResult{Config: c}
	for i, s := range sizes {
		st.Val = append(st.Val, engStat(s, n, pv[i], 0.6*pv[i], int64(float64(n)*(1-pv[i]))))
		if pt != nil {
			st.Train = append(st.Train, engStat(s, 5*n, pt[i], 0.6*pt[i], int64(float64(5*n)*(1-pt[i]))))
		}
	}
	return &History{Stages: []StageResult{st}}
}

func TestLearnabilityData(t *testing.T) {
	l, err := NewLearnability(Options{})
	if err != nil {
		t.Fatal(err)
	}
	h := engOneStage([]int{3, 4, 5}, []float64{0.02, 0.5, 0.98}, nil, 200)
	p, err := l.Propose(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	d := []float64{p.Config.Sizes[0].DataRatio, p.Config.Sizes[1].DataRatio, p.Config.Sizes[2].DataRatio}
	if !(d[1] > d[0] && d[1] > d[2]) {
		t.Errorf("p=0.5 should get the most data: %v", d)
	}
	for i, v := range d {
		if v < l.lo.Floor-1e-9 {
			t.Errorf("size %d below the floor: %v", i+3, d)
		}
	}
	// Same for valid-only and optimal-only learnability.
	for _, w := range []float64{0, 1} {
		lo := DefaultLearnabilityOptions()
		lo.OptimalWeight = w
		l2, _ := NewLearnability(Options{Learnability: &lo})
		p, _ := l2.Propose(context.Background(), h)
		if !(p.Config.Sizes[1].DataRatio > p.Config.Sizes[0].DataRatio) {
			t.Errorf("optimal weight %v: %+v", w, p.Config.Sizes)
		}
	}
	// Score: the blend of the smoothed rates' p(1−p) plus the bonus.
	s := SizeStats{Episodes: 99, Valid: 49, Optimal: 10}
	v, o := 49.5/100, 10.5/100
	if got, want := l.Score(s), 0.5*v*(1-v)+0.5*o*(1-o)+0.25/10; math.Abs(got-want) > 1e-12 {
		t.Errorf("score %v, want %v", got, want)
	}
	// A size mostly valid but rarely optimal still has something to teach.
	mostlyValid := SizeStats{Episodes: 200, Valid: 196, Optimal: 40}
	solved := SizeStats{Episodes: 200, Valid: 196, Optimal: 190}
	if !(l.Score(mostlyValid) > 2*l.Score(solved)) {
		t.Errorf("valid-not-optimal %v vs solved %v", l.Score(mostlyValid), l.Score(solved))
	}
	// Uncertainty: the same rate over fewer episodes scores higher; an
	// unmeasured size scores at least as high as any measured one.
	few, many := SizeStats{Episodes: 4, Valid: 0}, SizeStats{Episodes: 400, Valid: 0}
	if !(l.Score(few) > l.Score(many)) {
		t.Errorf("few %v, many %v", l.Score(few), l.Score(many))
	}
	if l.Score(SizeStats{}) < l.Score(SizeStats{Episodes: 100, Valid: 50, Optimal: 25}) {
		t.Error("an unmeasured size scores below a measured one")
	}
}

func TestLearnabilitySteer(t *testing.T) {
	l, _ := NewLearnability(Options{})
	// Training rates steer: 0.95 (too easy: +MaxStep), 0.55 (in band: 0),
	// 0.3 (−0.1), 0.05 (−MaxStep); validation differs on purpose.
	h := engOneStage([]int{3, 4, 5, 6}, []float64{0.5, 0.5, 0.5, 0.5}, []float64{0.95, 0.55, 0.3, 0.05}, 100)
	p, _ := l.Propose(context.Background(), h)
	want := []float64{0.1, 0, -0.1, -0.1}
	for i, sc := range p.Config.Sizes {
		if math.Abs(sc.HoleRatio-(0.2+want[i])) > 1e-9 || math.Abs(sc.WaitRatio-(0.3+want[i])) > 1e-9 {
			t.Errorf("size %d: hole %.3f wait %.3f, want steps %+.2f", sc.Size, sc.HoleRatio, sc.WaitRatio, want[i])
		}
	}
	// Too few training episodes: validation steers.
	h = engOneStage([]int{3}, []float64{0.9}, []float64{0.1}, 3)
	p, _ = l.Propose(context.Background(), h)
	if p.Config.Sizes[0].HoleRatio <= 0.2 {
		t.Errorf("validation did not steer: %+v", p.Config.Sizes[0])
	}
}

// TestLearnabilityColdStart: while no size reaches ColdStart, hole and wait
// ratios are raised where the policy does well but never lowered; once one
// size does, the other sizes ease as usual; ColdStart 0 turns the guard off.
func TestLearnabilityColdStart(t *testing.T) {
	l, _ := NewLearnability(Options{})
	cold := engOneStage([]int{3, 4, 5}, []float64{0.1, 0.05, 0}, []float64{0.15, 0.03, 0}, 200)
	p, _ := l.Propose(context.Background(), cold)
	for _, sc := range p.Config.Sizes {
		if sc.HoleRatio != 0.2 || sc.WaitRatio != 0.3 {
			t.Errorf("cold start, size %d: hole %.3f wait %.3f, want the base 0.2/0.3", sc.Size, sc.HoleRatio, sc.WaitRatio)
		}
	}
	if !strings.Contains(p.Rationale, "cold start") {
		t.Errorf("rationale does not name the cold start: %q", p.Rationale)
	}
	warm := engOneStage([]int{3, 4, 5}, []float64{0.1, 0.05, 0}, []float64{0.25, 0.03, 0}, 200)
	p, _ = l.Propose(context.Background(), warm)
	if p.Config.Sizes[1].HoleRatio >= 0.2 || p.Config.Sizes[2].WaitRatio >= 0.3 {
		t.Errorf("one size at 0.25 should end the cold start: %+v", p.Config.Sizes)
	}
	lo := DefaultLearnabilityOptions()
	lo.ColdStart = 0
	off, _ := NewLearnability(Options{Learnability: &lo})
	p, _ = off.Propose(context.Background(), cold)
	if p.Config.Sizes[0].HoleRatio >= 0.2 {
		t.Errorf("ColdStart 0 should ease as before: %+v", p.Config.Sizes[0])
	}
}

// TestLearnabilityProgress: a size whose training valid rate rose by
// Progress or more since the stage before is not eased; one that stalled
// is; steps up are never held back.
func TestLearnabilityProgress(t *testing.T) {
	l, _ := NewLearnability(Options{})
	before := engOneStage([]int{3, 4, 5}, []float64{0.3, 0.3, 0.5}, []float64{0.10, 0.28, 0.60}, 200)
	after := engOneStage([]int{3, 4, 5}, []float64{0.3, 0.3, 0.5}, []float64{0.30, 0.29, 0.95}, 200)
	h := &History{Stages: []StageResult{before.Stages[0], after.Stages[0]}}
	h.Stages[1].Stage = 1
	p, _ := l.Propose(context.Background(), h)
	got := []float64{p.Config.Sizes[0].HoleRatio, p.Config.Sizes[1].HoleRatio, p.Config.Sizes[2].HoleRatio}
	if got[0] != 0.2 {
		t.Errorf("size 3 rose 0.10→0.30 and should keep hole 0.2, got %.3f", got[0])
	}
	if got[1] >= 0.2 {
		t.Errorf("size 4 stalled at 0.29 and should ease, got hole %.3f", got[1])
	}
	if got[2] <= 0.2 {
		t.Errorf("size 5 at 0.95 should get harder, got hole %.3f", got[2])
	}
	if !strings.Contains(p.Rationale, "learning, not eased") {
		t.Errorf("rationale does not say why size 3 was kept: %q", p.Rationale)
	}
	lo := DefaultLearnabilityOptions()
	lo.Progress = 0
	off, _ := NewLearnability(Options{Learnability: &lo})
	if p, _ = off.Propose(context.Background(), h); p.Config.Sizes[0].HoleRatio >= 0.2 {
		t.Errorf("Progress 0 should ease size 3: %+v", p.Config.Sizes[0])
	}
}

func TestRulesBehaviour(t *testing.T) {
	r, err := NewRules(Options{})
	if err != nil {
		t.Fatal(err)
	}
	ro := DefaultRulesOptions()
	sizes := []int{3, 4, 5, 6, 7}
	// size 3 mastered, 4 and 5 in band, 6 low (failures: holes), 7 near zero.
	h := engOneStage(sizes, []float64{0.95, 0.5, 0.4, 0.1, 0.01}, []float64{0.95, 0.5, 0.4, 0.1, 0.01}, 200)
	for i := range h.Stages[0].Train {
		h.Stages[0].Train[i].Categories = [env.NumCategories]int64{}
	}
	h.Stages[0].Train[3].Categories[env.CategoryHole] = 50
	h.Stages[0].Train[3].Categories[env.CategoryParse] = 50
	p, err := r.Propose(context.Background(), h)
	if err != nil {
		t.Fatal(err)
	}
	c := p.Config
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	d := func(i int) float64 { return c.Sizes[i].DataRatio }
	if !(d(1) > d(0) && d(1) > d(3) && d(2) > d(4) && d(0) > d(4)) {
		t.Errorf("data not shifted toward the band: %+v", c.Sizes)
	}
	steps := []struct{ hole, wait float64 }{{ro.Step, ro.Step}, {0, 0}, {0, 0}, {-ro.Step, 0}, {-2 * ro.Step, -2 * ro.Step}}
	for i, s := range steps {
		if math.Abs(c.Sizes[i].HoleRatio-(0.2+s.hole)) > 1e-9 || math.Abs(c.Sizes[i].WaitRatio-(0.3+s.wait)) > 1e-9 {
			t.Errorf("size %d: hole %.3f wait %.3f, want %+.2f %+.2f", sizes[i], c.Sizes[i].HoleRatio, c.Sizes[i].WaitRatio, s.hole, s.wait)
		}
	}
	// Conflicts dominating a low size lower the wait ratio only.
	h.Stages[0].Train[3].Categories = [env.NumCategories]int64{}
	h.Stages[0].Train[3].Categories[env.CategoryConflict] = 80
	p, _ = r.Propose(context.Background(), h)
	if s := p.Config.Sizes[3]; math.Abs(s.HoleRatio-0.2) > 1e-9 || math.Abs(s.WaitRatio-0.25) > 1e-9 {
		t.Errorf("conflict-dominated size: %+v", s)
	}
}

// TestSettleBacksOff: a feasibility check that rejects the full step gets
// a partial step, and one that rejects every change keeps the previous
// config.
func TestSettleBacksOff(t *testing.T) {
	h := engOneStage([]int{3, 4}, []float64{0.95, 0.95}, []float64{0.95, 0.95}, 200)
	// Rules raise holes 0.2 → 0.25; allow at most 0.23.
	feasible := func(c env.Config) error {
		for _, s := range c.Sizes {
			if s.HoleRatio > 0.23 {
				return fmt.Errorf("%w: hole ratio %.3f at size %d", env.ErrInfeasible, s.HoleRatio, s.Size)
			}
		}
		return nil
	}
	r, _ := NewRules(Options{Feasible: feasible})
	p, _ := r.Propose(context.Background(), h)
	if p.Fallback || len(p.Attempts) != 2 || p.Attempts[0].Accepted || !p.Attempts[1].Accepted || math.Abs(p.Config.Sizes[0].HoleRatio-0.225) > 1e-9 {
		t.Errorf("half step expected: %+v", p)
	}
	r, _ = NewRules(Options{Feasible: func(c env.Config) error {
		if c.Sizes[0].HoleRatio != 0.2 {
			return errors.New("frozen")
		}
		return nil
	}})
	p, _ = r.Propose(context.Background(), h)
	if !p.Fallback || p.Config.Hash() != h.Stages[0].Config.Hash() || len(p.Attempts) != 3 {
		t.Errorf("fallback expected: %+v", p)
	}
}
