package evaluate

import (
	"slices"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// planPlayer plays plan(in) for every instance.
type planPlayer struct {
	t    *testing.T
	plan func(in *env.Instance) *env.Plan
}

func (p *planPlayer) Name() string { return "plan" }

func (p *planPlayer) Play(ins []*env.Instance, groupSize int, _ float64, _ uint64) (*learner.Rollout, error) {
	ro := &learner.Rollout{}
	for _, in := range ins {
		for range groupSize {
			ep := learner.Episode{Instance: in, Plan: *p.plan(in)}
			env.Verify(in, &ep.Plan, &ep.Report)
			ro.Episodes = append(ro.Episodes, ep)
		}
	}
	return ro, nil
}

// TestProbeMapUse: the rows-first plan, blind to holes, never changes when they move; the
// solver's plan changes on every instance where its plan on the moved map crosses a real hole,
// and the counts are those the plans give when checked one by one.
func TestProbeMapUse(t *testing.T) {
	const seed = 2026
	t.Logf("seed %d", seed)
	s := quickSuite(t, 4)
	ins := s.Instances
	solve := func(in *env.Instance) *env.Plan { // a moved map may have no solution: no plan then
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			return &env.Plan{}
		}
		return &sol.Plan
	}
	var rep env.Report
	wantCrossing := map[string]int{}
	for _, in := range ins {
		moved := WithHolesMoved(in)
		if moved.ID == in.ID || moved.ID != moved.ComputeID() || WithHolesMoved(in).ID != moved.ID {
			t.Fatalf("%s: the moved copy's id %s is not its own, or not reproducible", in.ID, moved.ID)
		}
		free := len(in.Holes) - in.NumHoles()
		for _, c := range starts(in) {
			if !in.Hole(c) {
				free--
			}
		}
		if want := min(in.NumHoles(), free); moved.NumHoles() != want {
			t.Fatalf("%s: %d holes moved to %d, want %d", in.ID, in.NumHoles(), moved.NumHoles(), want)
		}
		for i, h := range moved.Holes {
			if h && in.Holes[i] {
				t.Fatalf("%s: cell %d is a hole before and after", in.ID, i)
			}
		}
		for _, a := range moved.Agents {
			if moved.Hole(a.Start) || moved.Hole(a.Goal) {
				t.Fatalf("%s: a hole moved onto a start or goal", in.ID)
			}
		}
		for name, plan := range map[string]func(*env.Instance) *env.Plan{"blind": env.ManhattanPlan, "solver": solve} {
			env.Verify(in, plan(WithHolesMoved(in)), &rep)
			if !rep.Passed[env.CheckHoleFree] {
				wantCrossing[name]++
			}
		}
	}
	if wantCrossing["blind"] == 0 || wantCrossing["solver"] == 0 {
		t.Fatalf("no instance where a plan on the moved map crosses a real hole (%v): the test shows nothing", wantCrossing)
	}
	for _, tc := range []struct {
		name        string
		plan        func(*env.Instance) *env.Plan
		wantChanged func(m MapUse) bool
	}{
		{"blind", env.ManhattanPlan, func(m MapUse) bool { return m.Changed == 0 && m.Avoided == 0 && m.Through == m.Crossing }},
		{"solver", solve, func(m MapUse) bool { return m.Avoided == m.Crossing && m.Changed > m.Crossing && m.Through == 0 }},
	} {
		p := &planPlayer{t: t, plan: tc.plan}
		eps, err := PlayEpisodes(p, ins, PlayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, err := ProbeMapUse(p, ins, eps, PlayOptions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", tc.name, m)
		if m.Instances != len(ins) || m.Crossing != wantCrossing[tc.name] || !tc.wantChanged(m) {
			t.Errorf("%s: %+v (want %d instances, %d crossing)", tc.name, m, len(ins), wantCrossing[tc.name])
		}
	}
	if _, err := ProbeMapUse(&planPlayer{t: t, plan: env.ManhattanPlan}, ins, nil, PlayOptions{}); err == nil {
		t.Error("episodes that do not match the instances: no error")
	}
}

// starts lists the distinct cells the agents start or end on.
func starts(in *env.Instance) []env.Pos {
	var cells []env.Pos
	for _, a := range in.Agents {
		for _, c := range []env.Pos{a.Start, a.Goal} {
			if !slices.Contains(cells, c) {
				cells = append(cells, c)
			}
		}
	}
	return cells
}
