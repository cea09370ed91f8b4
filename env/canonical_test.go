package env

import (
	"errors"
	"reflect"
	"testing"
)

// On an open map an agent goes vertically first, then horizontally; a hole in the way makes it
// turn earlier; the other agent's path makes it wait as late as it can.
func TestCanonicalPlanShapes(t *testing.T) {
	in := planInst(t, []string{"....", "....", "....", "...."}, Agent{Start: Pos{0, 0}, Goal: Pos{2, 3}})
	zigzag := &Plan{Paths: [][]Pos{{{0, 0}, {0, 1}, {1, 1}, {1, 2}, {2, 2}, {2, 3}}}}
	got, err := CanonicalPlan(in, zigzag)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]Pos{{{0, 0}, {1, 0}, {2, 0}, {2, 1}, {2, 2}, {2, 3}}}
	if !reflect.DeepEqual(got.Paths, want) {
		t.Errorf("open map: %v, want %v", got.Paths, want)
	}

	holed := planInst(t, []string{"...", "H..", "..."}, Agent{Start: Pos{0, 0}, Goal: Pos{2, 2}})
	got, err = CanonicalPlan(holed, &Plan{Paths: [][]Pos{{{0, 0}, {0, 1}, {0, 2}, {1, 2}, {2, 2}}}})
	if err != nil {
		t.Fatal(err)
	}
	want = [][]Pos{{{0, 0}, {0, 1}, {1, 1}, {2, 1}, {2, 2}}}
	if !reflect.DeepEqual(got.Paths, want) {
		t.Errorf("hole below the start: %v, want %v", got.Paths, want)
	}

	// Agent 1 crosses agent 0's column at t = 1: agent 0 (going down) must let it pass.
	cross := planInst(t, []string{"...", "...", "..."},
		Agent{Start: Pos{0, 1}, Goal: Pos{2, 1}}, Agent{Start: Pos{1, 0}, Goal: Pos{1, 2}})
	p := &Plan{Paths: [][]Pos{{{0, 1}, {0, 1}, {0, 1}, {1, 1}, {2, 1}}, {{1, 0}, {1, 1}, {1, 2}}}}
	got, err = CanonicalPlan(cross, p)
	if err != nil {
		t.Fatal(err)
	}
	var rep Report
	Verify(cross, got, &rep)
	soc, _ := got.Costs(cross)
	if !rep.Valid || soc != 6 {
		t.Fatalf("crossing: %v valid %v soc %d, want valid with soc 6", got.Paths, rep.Valid, soc)
	}

	// A plan that is not valid is refused.
	if _, err := CanonicalPlan(in, &Plan{Paths: [][]Pos{{{0, 0}, {1, 1}}}}); err == nil {
		t.Error("an invalid plan was canonicalised")
	}
}

// On generated instances the canonical plan is valid, keeps every agent's cost, is a fixed
// point, and does not depend on which optimal plan it started from.
func TestCanonicalPlanGenerated(t *testing.T) {
	rng := planRNG(t)
	cfg := Config{Agents: 3, Instances: 60, Sizes: []SizeConfig{
		{Size: 3, DataRatio: 0.3, HoleRatio: 0.2, WaitRatio: 0.3},
		{Size: 5, DataRatio: 0.4, HoleRatio: 0.3, WaitRatio: 0.5},
		{Size: 7, DataRatio: 0.3, HoleRatio: 0.2, WaitRatio: 0.3},
	}}
	ins, err := Generate(cfg, rng.Uint64(), 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	changed, unstable := 0, 0
	for _, in := range ins {
		sol, err := Solve(in, SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := CanonicalPlan(in, &sol.Plan)
		if err != nil {
			t.Fatalf("%s: %v", in.ID, err)
		}
		var rep Report
		Verify(in, got, &rep)
		if !rep.Valid {
			t.Fatalf("%s: canonical plan %v not valid: %v", in.ID, got.Paths, rep.Failures)
		}
		for i, path := range got.Paths {
			if c, c0 := PathCost(path, in.Agents[i].Goal), PathCost(sol.Plan.Paths[i], in.Agents[i].Goal); c != c0 || len(path) != c+1 {
				t.Fatalf("%s agent %d: cost %d (path of %d cells), solver's %d", in.ID, i, c, len(path), c0)
			}
		}
		again, err := CanonicalPlan(in, got)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(again.Paths, got.Paths) {
			unstable++
		}
		if !reflect.DeepEqual(got.Paths, sol.Plan.Paths) {
			changed++
		}
	}
	t.Logf("%d of %d solver plans changed by canonicalisation; %d not a fixed point after %d passes", changed, len(ins), unstable, canonicalRounds)
	if changed == 0 || unstable > len(ins)/20 {
		t.Errorf("changed %d, not fixed points %d of %d", changed, unstable, len(ins))
	}
}

func TestManhattanPlan(t *testing.T) {
	in := planInst(t, []string{"...", ".H.", "..."}, Agent{Start: Pos{2, 2}, Goal: Pos{0, 0}}, Agent{Start: Pos{1, 0}, Goal: Pos{1, 0}})
	got := ManhattanPlan(in)
	want := [][]Pos{{{2, 2}, {1, 2}, {0, 2}, {0, 1}, {0, 0}}, {{1, 0}}}
	if !reflect.DeepEqual(got.Paths, want) {
		t.Fatalf("ManhattanPlan = %v, want %v", got.Paths, want)
	}
	var rep Report
	Verify(in, got, &rep)
	if !rep.Valid {
		t.Errorf("the unobstructed Manhattan plan is not valid: %v", rep.Failures)
	}
	// Through the hole: the plan is refused by the verifier.
	in = planInst(t, []string{"...", ".H.", "..."}, Agent{Start: Pos{0, 1}, Goal: Pos{2, 1}})
	Verify(in, ManhattanPlan(in), &rep)
	if rep.Valid || rep.Passed[CheckHoleFree] {
		t.Errorf("a Manhattan plan through a hole passed: %+v", rep.Passed)
	}
}

// TestPrioritizedPlan: on generated 3- and 5-agent instances a prioritized plan, when there is
// one, is valid and costs at least the optimum; its first agent always takes a shortest path
// (where the optimal plans often have it wait or detour for a later agent), and each agent's
// path depends on the agents before it alone: the plan of the instance cut to agents 0..i has
// the same paths.
func TestPrioritizedPlan(t *testing.T) {
	rng := planRNG(t)
	none, optimalFirstDelayed := 0, 0
	for _, k := range []int{3, 5} {
		cfg := Config{Agents: k, Instances: 40, Sizes: []SizeConfig{
			{Size: 6, DataRatio: 0.5, HoleRatio: 0.2, WaitRatio: 0.75},
			{Size: 8, DataRatio: 0.5, HoleRatio: 0.2, WaitRatio: 0.75},
		}}
		ins, err := Generate(cfg, rng.Uint64(), 0, cfg.Instances)
		if err != nil {
			t.Fatal(err)
		}
		for _, in := range ins {
			sol, err := Solve(in, SolveOptions{})
			if err != nil {
				t.Fatal(err)
			}
			opt, err := CanonicalPlan(in, &sol.Plan)
			if err != nil {
				t.Fatal(err)
			}
			solo := func(i int) int { // agent i's shortest path, alone on the map
				p, err := PrioritizedPlan(&Instance{ID: in.ID, Width: in.Width, Height: in.Height, Holes: in.Holes, Agents: in.Agents[i : i+1]})
				if err != nil {
					t.Fatalf("%s agent %d alone: %v", in.ID, i, err)
				}
				return len(p.Paths[0]) - 1
			}
			if PathCost(opt.Paths[0], in.Agents[0].Goal) > solo(0) {
				optimalFirstDelayed++
			}
			got, err := PrioritizedPlan(in)
			if errors.Is(err, ErrNoPrioritized) {
				none++
				continue
			} else if err != nil {
				t.Fatal(err)
			}
			var rep Report
			Verify(in, got, &rep)
			if !rep.Valid {
				t.Fatalf("%s: prioritized plan %v not valid: %v", in.ID, got.Paths, rep.Failures)
			}
			soc := 0
			for i, path := range got.Paths {
				soc += PathCost(path, in.Agents[i].Goal)
			}
			if soc < in.SOC {
				t.Fatalf("%s: prioritized plan costs %d, below the optimum %d", in.ID, soc, in.SOC)
			}
			if c := len(got.Paths[0]) - 1; c != solo(0) {
				t.Errorf("%s: the first agent's path costs %d, its shortest %d", in.ID, c, solo(0))
			}
			for i := 1; i < k; i++ {
				cut := *in
				cut.Agents = in.Agents[:i]
				pre, err := PrioritizedPlan(&cut)
				if err != nil {
					t.Fatalf("%s cut to %d agents: %v", in.ID, i, err)
				}
				if !reflect.DeepEqual(pre.Paths, got.Paths[:i]) {
					t.Fatalf("%s: agents 0..%d plan %v alone, %v with the later agents", in.ID, i-1, pre.Paths, got.Paths[:i])
				}
			}
		}
	}
	t.Logf("no prioritized plan: %d of 80; optimal plans whose first agent waits or detours: %d", none, optimalFirstDelayed)
	if optimalFirstDelayed == 0 || none > 20 {
		t.Errorf("first agent delayed in %d optimal plans (want some), %d instances without a prioritized plan (want few)", optimalFirstDelayed, none)
	}
}

// TestPrioritizedPlanNone: the first agent parks on its goal in the only way through before the
// second can pass: no prioritized plan, an error that wraps ErrNoPrioritized.
func TestPrioritizedPlanNone(t *testing.T) {
	in := solvParse(t, []string{
		"...",
		"HH.",
		"...",
	}, solvAg(0, 2, 1, 2), solvAg(0, 0, 2, 0))
	if p, err := PrioritizedPlan(in); !errors.Is(err, ErrNoPrioritized) {
		t.Errorf("plan %v, error %v; want ErrNoPrioritized", p, err)
	}
}
