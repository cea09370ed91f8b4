package env

import (
	"math/rand/v2"
	"reflect"
	"testing"
)

// planPolicy picks a move for agent i: mostly a legal move toward the goal,
// sometimes any move (to reach holes, the border and conflicts).
func planPolicy(rng *rand.Rand, s *Sim, in *Instance, i int) Move {
	if rng.IntN(8) == 0 {
		return Move(rng.IntN(NumMoves))
	}
	var legal [NumMoves]bool
	s.LegalMask(i, legal[:])
	p, g := s.Pos(i), in.Agents[i].Goal
	best, bestD := Wait, planAbs(p.R-g.R)+planAbs(p.C-g.C)
	for m := Up; m < NumMoves; m++ {
		q := m.Apply(p)
		if d := planAbs(q.R-g.R) + planAbs(q.C-g.C); legal[m] && d < bestD && rng.IntN(4) != 0 {
			best, bestD = m, d
		}
	}
	return best
}

func TestSimTrajectoryVerifies(t *testing.T) {
	rng := planRNG(t)
	var rep, rep2 Report
	var outcomes [4]int
	for range 2000 {
		n := 3 + rng.IntN(6)
		k := 1 + rng.IntN(min(n, 4))
		in := planRandInstance(rng, n, k, 0.25*rng.Float64())
		maxSteps := 1 + rng.IntN(3*n)
		s := NewSim(in, maxSteps)
		moves := make([]Move, k)
		var sawHole, sawOOB, sawConflict bool
		for !s.Done() {
			for i := range moves {
				moves[i] = planPolicy(rng, s, in, i)
			}
			res := s.Step(moves)
			if res.T != s.T() || res.Done != s.Done() || res.AllAtGoal != s.AllAtGoal() || res.Ignored {
				t.Fatalf("result %+v disagrees with sim (t %d done %v)", res, s.T(), s.Done())
			}
			for i := range k {
				ev := res.Events[i]
				sawHole = sawHole || ev&EventHole != 0
				sawOOB = sawOOB || ev&EventOutOfBounds != 0
				sawConflict = sawConflict || ev&(EventVertexConflict|EventEdgeConflict) != 0
				if (ev&EventAtGoal != 0) != (s.Pos(i) == in.Agents[i].Goal) {
					t.Fatalf("agent %d at-goal event %b at %v", i, ev, s.Pos(i))
				}
				if ev&(EventHole|EventOutOfBounds) != 0 && !s.Stopped(i) {
					t.Fatalf("agent %d fell but is not stopped", i)
				}
			}
			if res.Failed != (sawHole || sawOOB || sawConflict) || res.Failed != s.Failed() {
				t.Fatalf("failed %v, events hole %v oob %v conflict %v", res.Failed, sawHole, sawOOB, sawConflict)
			}
		}
		if res := s.Step(moves); !res.Ignored || !res.Done || res.T != s.T() {
			t.Fatalf("step after done: %+v", res)
		}
		p := s.Plan()
		for i, path := range p.Paths {
			if len(path) != s.T()+1 || path[len(path)-1] != s.Pos(i) {
				t.Fatalf("agent %d path %v, t %d pos %v", i, path, s.T(), s.Pos(i))
			}
		}
		Verify(in, &p, &rep)
		if rep.Passed[CheckHoleFree] == sawHole || rep.Passed[CheckInBounds] == sawOOB || rep.Passed[CheckConflictFree] == sawConflict {
			t.Fatalf("verifier %v disagrees with sim events hole %v oob %v conflict %v; plan %v", rep.Failures, sawHole, sawOOB, sawConflict, p.Paths)
		}
		if !rep.Passed[CheckLegalMove] || !rep.Passed[CheckStartCorrect] || !rep.Passed[CheckAgentCount] {
			t.Fatalf("sim plan broke a structural check: %v", rep.Failures)
		}
		if rep.Passed[CheckGoalReached] != s.AllAtGoal() || rep.Valid != (s.AllAtGoal() && !s.Failed()) {
			t.Fatalf("valid %v, sim all-at-goal %v failed %v: %v", rep.Valid, s.AllAtGoal(), s.Failed(), rep.Failures)
		}
		// The plan as text verifies identically.
		ms, err := PlanMoves(&p)
		if err != nil {
			t.Fatal(err)
		}
		VerifyAnswer(in, FormatMoves(ms), &rep2)
		if !reflect.DeepEqual(rep.Failures, rep2.Failures) || rep.Valid != rep2.Valid || rep.SOC != rep2.SOC {
			t.Fatalf("plan and its text verify differently:\n%v\n%v", rep.Failures, rep2.Failures)
		}
		switch {
		case rep.Valid:
			outcomes[0]++
		case sawConflict:
			outcomes[1]++
		case s.Failed():
			outcomes[2]++
		default:
			outcomes[3]++
		}
		// Reset restores the start.
		s.Reset()
		for i, a := range in.Agents {
			if s.Pos(i) != a.Start || s.T() != 0 || s.Failed() || s.Stopped(i) || s.LastMove(i) != Wait {
				t.Fatal("reset")
			}
		}
		if q := s.Plan(); len(q.Paths) != k || len(q.Paths[0]) != 1 {
			t.Fatalf("plan after reset %v", q.Paths)
		}
	}
	t.Logf("valid %d, conflict %d, hole/bounds %d, out of steps %d", outcomes[0], outcomes[1], outcomes[2], outcomes[3])
	for i, o := range outcomes {
		if o == 0 {
			t.Errorf("outcome %d never happened: the test does not cover it", i)
		}
	}
}

func TestSimEvents(t *testing.T) {
	rows := []string{"....", ".H..", "....", "...."}
	t.Run("swap", func(t *testing.T) {
		in := planInst(t, rows, planAg(0, 0, 0, 1), planAg(0, 1, 0, 0))
		s := NewSim(in, 10)
		res := s.Step([]Move{Right, Left})
		want := EventEdgeConflict | EventAtGoal | EventArrived
		if res.Events[0] != want || res.Events[1] != want || res.Conflicts != 1 || !res.Failed || !res.Done || res.AllAtGoal != true {
			t.Fatalf("%+v", res)
		}
		// The move was recorded as written, not blocked.
		if p := s.Plan(); !reflect.DeepEqual(p.Paths, [][]Pos{{{0, 0}, {0, 1}}, {{0, 1}, {0, 0}}}) {
			t.Fatalf("plan %v", p.Paths)
		}
	})
	t.Run("vertex and leaving goal", func(t *testing.T) {
		in := planInst(t, rows, planAg(0, 0, 0, 1), planAg(0, 2, 2, 2))
		s := NewSim(in, 10)
		res := s.Step([]Move{Right, Wait})
		if res.Failed || res.Events[0] != EventAtGoal|EventArrived || res.Events[1] != 0 || res.Done {
			t.Fatalf("%+v", res)
		}
		res = s.Step([]Move{Down, Left})
		if !res.Failed || res.Events[0] != EventLeftGoal|EventHole || res.Events[1] != 0 {
			t.Fatalf("%+v", res)
		}
		if !s.Stopped(0) || s.Stopped(1) || s.Pos(0) != (Pos{1, 1}) {
			t.Fatal("stopped flags")
		}
	})
	t.Run("collide in place", func(t *testing.T) {
		in := planInst(t, rows, planAg(0, 0, 3, 3), planAg(0, 2, 2, 2))
		s := NewSim(in, 10)
		res := s.Step([]Move{Right, Left})
		if res.Events[0] != EventVertexConflict || res.Events[1] != EventVertexConflict || res.Conflicts != 1 {
			t.Fatalf("%+v", res)
		}
	})
	t.Run("off the grid", func(t *testing.T) {
		in := planInst(t, rows, planAg(0, 0, 3, 3))
		s := NewSim(in, 10)
		res := s.Step([]Move{Up})
		if res.Events[0] != EventOutOfBounds || !res.Done || s.Pos(0) != (Pos{-1, 0}) {
			t.Fatalf("%+v", res)
		}
		var rep Report
		p := s.Plan()
		Verify(in, &p, &rep)
		if rep.Passed[CheckInBounds] || rep.Counts[CheckInBounds] != 1 {
			t.Fatalf("%v", rep.Failures)
		}
		var mask [NumMoves]bool
		s.LegalMask(0, mask[:])
		if mask != [NumMoves]bool{true, false, false, false, false} {
			t.Fatalf("stopped agent mask %v", mask)
		}
	})
	t.Run("max steps and trivial", func(t *testing.T) {
		in := planInst(t, rows, planAg(0, 0, 3, 3))
		s := NewSim(in, 2)
		s.Step([]Move{Wait})
		if s.Done() {
			t.Fatal("done early")
		}
		if res := s.Step([]Move{Move(99)}); !res.Done || s.Pos(0) != (Pos{0, 0}) {
			t.Fatalf("bad move acts as wait, then done: %+v", res)
		}
		triv := planInst(t, rows, planAg(2, 2, 2, 2))
		if s := NewSim(triv, 5); !s.Done() || !s.AllAtGoal() {
			t.Fatal("agent on its goal: done at t=0")
		}
	})
}

func TestSimPanics(t *testing.T) {
	in := planOpen4(t)
	for name, f := range map[string]func(){
		"maxSteps": func() { NewSim(in, 0) },
		"moves":    func() { NewSim(in, 3).Step([]Move{Up}) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestLegalMask(t *testing.T) {
	in := planInst(t, []string{"...", ".H.", "..."}, planAg(0, 1, 2, 2), planAg(1, 0, 0, 0))
	s := NewSim(in, 5)
	var m [NumMoves]bool
	s.LegalMask(0, m[:])
	// (0,1): UP off grid, DOWN hole, LEFT/RIGHT fine. Other agents do not matter.
	if m != [NumMoves]bool{Wait: true, Up: false, Down: false, Left: true, Right: true} {
		t.Fatalf("agent 0: %v", m)
	}
	s.LegalMask(1, m[:])
	if m != [NumMoves]bool{Wait: true, Up: true, Down: true, Left: false, Right: false} {
		t.Fatalf("agent 1: %v", m)
	}
}

func TestObserveLayout(t *testing.T) {
	rows := []string{".....", ".H...", ".....", "...H.", "....."}
	in := planInst(t, rows, planAg(0, 0, 2, 2), planAg(1, 0, 4, 4), planAg(4, 4, 0, 4))
	s := NewSim(in, 8)
	const r = ObsRadius
	const w = 2*r + 1
	if ObsSize(r) != ObsChannels*w*w+ObsScalars || ObsSize(r) != 235 || ObsSize(0) != ObsChannels+ObsScalars {
		t.Fatalf("ObsSize(%d) = %d", r, ObsSize(r))
	}
	at := func(obs []float32, ch, y, x int) float32 { return obs[ch*w*w+y*w+x] }
	obs := s.Observe(0, r, nil)
	if len(obs) != ObsSize(r) {
		t.Fatalf("len %d", len(obs))
	}
	for y := range w {
		for x := range w {
			wall := y < r || x < r // grid row y-2 < 0 or col x-2 < 0
			if (at(obs, ObsWall, y, x) == 1) != wall {
				t.Errorf("wall (%d,%d) = %v", y, x, at(obs, ObsWall, y, x))
			}
		}
	}
	check := func(obs []float32, ch, y, x int, want float32) {
		t.Helper()
		if got := at(obs, ch, y, x); got != want {
			t.Errorf("channel %d cell (%d,%d) = %v want %v", ch, y, x, got, want)
		}
	}
	sum := func(obs []float32, ch int) (s float32) {
		for _, v := range obs[ch*w*w : (ch+1)*w*w] {
			s += v
		}
		return s
	}
	check(obs, ObsHole, 3, 3, 1)  // hole (1,1)
	check(obs, ObsAgent, 3, 2, 1) // agent 1 at (1,0)
	check(obs, ObsOwnGoal, 4, 4, 1)
	for ch, want := range map[int]float32{ObsHole: 1, ObsAgent: 1, ObsOwnGoal: 1, ObsOtherGoal: 0, ObsAgentMoveDR: 0, ObsAgentMoveDC: 0, ObsAgentAtGoal: 0} {
		if got := sum(obs, ch); got != want {
			t.Errorf("channel %d sums to %v want %v", ch, got, want)
		}
	}
	sc := obs[ObsChannels*w*w:]
	if sc[ObsGoalDR] != 2.0/5 || sc[ObsGoalDC] != 2.0/5 || sc[ObsAtGoal] != 0 || sc[ObsTime] != 0 {
		t.Errorf("scalars %v", sc)
	}
	// (0,0) → (2,2) around the hole at (1,1) is 4 steps; DOWN and RIGHT
	// shorten it, UP and LEFT leave the grid.
	if sc[ObsGoalDist] != 4.0/25 {
		t.Errorf("goal distance %v, want 4/25", sc[ObsGoalDist])
	}
	if g := sc[ObsMoveGain : ObsMoveGain+NumMoves]; g[Wait] != 0 || g[Up] != -1 || g[Down] != 1 || g[Left] != -1 || g[Right] != 1 {
		t.Errorf("move gains %v, want [0 -1 1 -1 1]", g)
	}

	// Agent 0 RIGHT to (0,1); agent 1 DOWN to (2,0); agent 2 UP to (3,4).
	s.Step([]Move{Right, Down, Up})
	obs = s.Observe(0, r, obs[:0])
	check(obs, ObsAgent, 4, 1, 1)
	check(obs, ObsAgentMoveDR, 4, 1, 1)
	check(obs, ObsAgentMoveDC, 4, 1, 0)
	check(obs, ObsHole, 3, 2, 1)
	check(obs, ObsOwnGoal, 4, 3, 1)
	if sum(obs, ObsAgent) != 1 || sum(obs, ObsOtherGoal) != 0 {
		t.Errorf("agent 2 at (3,4) and the goals (0,4), (4,4) are outside the window")
	}
	sc = obs[ObsChannels*w*w:]
	if sc[ObsGoalDR] != 2.0/5 || sc[ObsGoalDC] != 1.0/5 || sc[ObsTime] != 1.0/8 {
		t.Errorf("scalars %v", sc)
	}
	// Agent 2 at (3,4) sees the hole (3,3) and agent 1's goal (4,4); its own
	// goal (0,4) and the other agents are outside the window.
	obs = s.Observe(2, r, obs)
	if sum(obs, ObsOwnGoal) != 0 {
		t.Error("own goal (0,4) is 3 rows up")
	}
	check(obs, ObsHole, 2, 1, 1)
	check(obs, ObsOtherGoal, 3, 2, 1)
	check(obs, ObsWall, 2, 3, 1)
	if sum(obs, ObsAgent) != 0 {
		t.Error("agent 2 sees an agent")
	}
	// Agent 1 on its goal is flagged: move agent 1 to (4,4)? Use a fresh sim.
	in2 := planInst(t, []string{"...", "...", "..."}, planAg(0, 0, 0, 1), planAg(1, 1, 1, 1))
	s2 := NewSim(in2, 4)
	obs = s2.Observe(0, 1, nil)
	at1 := func(ch, y, x int) float32 { return obs[ch*9+y*3+x] }
	if at1(ObsAgent, 2, 2) != 1 || at1(ObsAgentAtGoal, 2, 2) != 1 || at1(ObsOwnGoal, 1, 2) != 1 || at1(ObsOtherGoal, 2, 2) != 1 {
		t.Errorf("radius-1 observation %v", obs)
	}
	s2.Step([]Move{Right, Wait})
	obs = s2.Observe(0, 1, obs)
	if obs[ObsChannels*9+ObsAtGoal] != 1 || obs[ObsChannels*9+ObsGoalDR] != 0 {
		t.Errorf("at goal scalars %v", obs[ObsChannels*9:])
	}
}

func TestSimZeroAllocs(t *testing.T) {
	rng := planRNG(t)
	in := planRandInstance(rng, 6, 3, 0)
	s := NewSim(in, 1000)
	moves := []Move{Wait, Wait, Wait}
	obs := make([]float32, 0, ObsSize(ObsRadius))
	var mask [NumMoves]bool
	if a := testing.AllocsPerRun(100, func() {
		s.Step(moves)
		obs = s.Observe(1, ObsRadius, obs)
		s.LegalMask(2, mask[:])
		_ = s.Pos(0)
		_ = s.T()
		_ = s.Done()
	}); a != 0 {
		t.Fatalf("%v allocs per step", a)
	}
	if a := testing.AllocsPerRun(100, s.Reset); a != 0 {
		t.Fatalf("Reset: %v allocs", a)
	}
}

func TestSetIntentSafeMaskAndClaimedPlane(t *testing.T) {
	// Agent 0 at (1,0) heads right; agent 1 at (1,2) heads left: both want (1,1).
	in := planInst(t, []string{"...", "...", "..."}, planAg(1, 0, 1, 2), planAg(1, 2, 1, 0))
	s := NewSim(in, 6)
	var m [NumMoves]bool
	s.SafeMask(1, m[:])
	if !m[Left] {
		t.Fatal("LEFT masked before any intent")
	}
	s.SetIntent(0, Right)
	s.SafeMask(1, m[:])
	if m[Left] || !m[Wait] || !m[Up] || !m[Down] || m[Right] {
		t.Fatalf("after agent 0 claims (1,1): mask %v, want LEFT and RIGHT(off grid) masked", m)
	}
	const r = ObsRadius
	const w = 2*r + 1
	obs := s.Observe(1, r, nil)
	// (1,1) is one column left of agent 1: window cell (r, r-1).
	if obs[ObsClaimed*w*w+r*w+r-1] != 1 {
		t.Fatal("claimed cell not in agent 1's observation")
	}
	if s.Observe(0, r, nil)[ObsClaimed*w*w+r*w+r+1] != 0 {
		t.Fatal("agent 0 sees its own claim")
	}
	// Swap: agent 0 declares RIGHT into... use a 2-cell corridor.
	in2 := planInst(t, []string{"..", "HH"}, planAg(0, 0, 0, 1), planAg(0, 1, 0, 0))
	s2 := NewSim(in2, 4)
	s2.SetIntent(0, Right)
	s2.SafeMask(1, m[:])
	if m[Left] {
		t.Fatal("swap with a declared move not masked")
	}
	s2.Step([]Move{Right, Wait})
	s2.SafeMask(1, m[:])
	obs = s2.Observe(1, r, obs)
	for i := ObsClaimed * w * w; i < (ObsClaimed+1)*w*w; i++ {
		if obs[i] != 0 {
			t.Fatal("intents survived Step")
		}
	}
}
