package env

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"maps"
	"math"
	"testing"
)

// genTestConfig is a small stage: sizes 3..6, two agents.
func genTestConfig() Config {
	return Config{
		Agents:    2,
		Instances: 48,
		Sizes: []SizeConfig{
			{Size: 3, DataRatio: 0.2, HoleRatio: 0.1, WaitRatio: 0.5},
			{Size: 4, DataRatio: 0.3, HoleRatio: 0.2, WaitRatio: 0.25},
			{Size: 5, DataRatio: 0.3, HoleRatio: 0.3, WaitRatio: 0.4},
			{Size: 6, DataRatio: 0.2, HoleRatio: 0.5, WaitRatio: 0.3},
		},
	}
}

func genHash(t testing.TB, ins []*Instance) string {
	t.Helper()
	b, err := json.Marshal(ins)
	if err != nil {
		t.Fatal(err)
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

func TestGenerateDeterministicAndSplittable(t *testing.T) {
	seed := solvTestSeed(t, 42)
	cfg := genTestConfig()
	all, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	again, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	h := genHash(t, all)
	if h2 := genHash(t, again); h != h2 {
		t.Fatalf("same seed, different instances: %s vs %s", h, h2)
	}
	t.Logf("stage hash %s", h)
	genCheckSplits(t, cfg, seed, all, 7, 7, 30)
	for _, i := range []int{0, 13, cfg.Instances - 1} {
		one, err := GenerateOne(cfg, seed, i)
		if err != nil {
			t.Fatal(err)
		}
		if genHash(t, []*Instance{one}) != genHash(t, all[i:i+1]) {
			t.Fatalf("GenerateOne(%d) differs from Generate", i)
		}
		genCheckRegenerates(t, one)
	}
	other, err := Generate(cfg, seed+1, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	if genHash(t, other) == h {
		t.Fatal("different seeds gave the same stage")
	}
}

// genCheckSplits checks that generating the stage in the pieces cut at the
// given indices gives all, the one-shot stage.
func genCheckSplits(t *testing.T, cfg Config, seed uint64, all []*Instance, cuts ...int) {
	t.Helper()
	var parts []*Instance
	lo := 0
	for _, hi := range append(cuts, cfg.Instances) {
		p, err := Generate(cfg, seed, lo, hi)
		if err != nil {
			t.Fatal(err)
		}
		parts, lo = append(parts, p...), hi
	}
	if genHash(t, parts) != genHash(t, all) {
		t.Fatalf("generation split at %v differs from one-shot generation", cuts)
	}
}

// genCheckRegenerates checks that the instance's stored seed regenerates it.
func genCheckRegenerates(t *testing.T, in *Instance) {
	t.Helper()
	re, err := GenerateSeeded(in.Width, in.NumHoles(), len(in.Agents), in.NeedsWait, in.Seed)
	if err != nil {
		t.Fatal(err)
	}
	if genHash(t, []*Instance{re}) != genHash(t, []*Instance{in}) {
		t.Fatalf("GenerateSeeded does not regenerate a %dx%d, %d-agent instance", in.Width, in.Width, len(in.Agents))
	}
}

func TestGenerateShares(t *testing.T) {
	seed := solvTestSeed(t, 7)
	cfg := genTestConfig()
	cfg.Instances = 61 // shares that do not divide evenly
	ins, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	counts, waits := genAlloc(cfg)
	total := 0
	for i, sc := range cfg.Sizes {
		total += counts[i]
		// Largest remainder: each count is the floor or ceiling of its quota.
		q := sc.DataRatio * float64(cfg.Instances)
		if float64(counts[i]) < math.Floor(q) || float64(counts[i]) > math.Ceil(q) {
			t.Errorf("size %d: %d instances for quota %.2f", sc.Size, counts[i], q)
		}
	}
	if total != cfg.Instances {
		t.Fatalf("counts sum to %d, want %d", total, cfg.Instances)
	}
	gotN := map[int]int{}
	gotW := map[int]int{}
	for _, in := range ins {
		gotN[in.Width]++
		if in.NeedsWait {
			gotW[in.Width]++
		}
	}
	for i, sc := range cfg.Sizes {
		if gotN[sc.Size] != counts[i] {
			t.Errorf("size %d: %d instances, want %d", sc.Size, gotN[sc.Size], counts[i])
		}
		want := int(math.Round(sc.WaitRatio * float64(counts[i])))
		if gotW[sc.Size] != want || waits[i] != want {
			t.Errorf("size %d: %d need a wait, want %d", sc.Size, gotW[sc.Size], want)
		}
	}
	for i, in := range ins {
		sc := cfg.Sizes[0]
		for _, s := range cfg.Sizes {
			if s.Size == in.Width {
				sc = s
			}
		}
		if h := in.NumHoles(); h != int(math.Round(sc.HoleRatio*float64(in.Width*in.Width))) {
			t.Errorf("instance %d: %d holes on %dx%d for hole ratio %g", i, h, in.Width, in.Width, sc.HoleRatio)
		}
	}
}

// TestGenerateAgentRange checks a 2..4 agent range: each size's stratum is
// split evenly over the counts that fit it (size 3 holds at most 3), wait
// and no-wait slots alike, and the stage stays deterministic, splittable
// and regenerable from the instances' seeds.
func TestGenerateAgentRange(t *testing.T) {
	seed := solvTestSeed(t, 11)
	cfg := genTestConfig()
	cfg.AgentsMax = 4
	cfg.Instances = 61
	if err := CheckFeasible(cfg); err != nil {
		t.Fatal(err)
	}
	ins, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	type key struct{ size, k int }
	got, gotWait := map[key]int{}, map[key]int{}
	for _, in := range ins {
		k := key{in.Width, len(in.Agents)}
		got[k]++
		if in.NeedsWait {
			gotWait[k]++
		}
	}
	// The rule, stated independently: the counts a size holds take turns
	// over the stage's wait slots, and separately over its no-wait slots,
	// size after size.
	want, wantWait := map[key]int{}, map[key]int{}
	counts, waits := genAlloc(cfg)
	turnWait, turnRest := 0, 0
	for i, sc := range cfg.Sizes {
		ks := []int{2, 3, 4}
		if sc.Size == 3 {
			ks = []int{2, 3}
		}
		for range waits[i] {
			k := key{sc.Size, ks[turnWait%len(ks)]}
			want[k]++
			wantWait[k]++
			turnWait++
		}
		for range counts[i] - waits[i] {
			want[key{sc.Size, ks[turnRest%len(ks)]}]++
			turnRest++
		}
	}
	if !maps.Equal(got, want) || !maps.Equal(gotWait, wantWait) {
		t.Fatalf("instances per (size, agents): got %v (waits %v), want %v (waits %v)", got, gotWait, want, wantWait)
	}
	if got[key{4, 4}] == 0 || got[key{3, 4}] != 0 {
		t.Fatalf("4 agents: %d on 4x4, %d on 3x3", got[key{4, 4}], got[key{3, 4}])
	}
	genCheckSplits(t, cfg, seed, ins, 20)
	for _, in := range ins[:8] {
		genCheckRegenerates(t, in)
	}
	// agents_max equal to agents is no range: the same stage as without it.
	a, b := genTestConfig(), genTestConfig()
	b.AgentsMax = b.Agents
	x, err := Generate(a, seed, 0, a.Instances)
	if err != nil {
		t.Fatal(err)
	}
	y, err := Generate(b, seed, 0, b.Instances)
	if err != nil {
		t.Fatal(err)
	}
	if genHash(t, x) != genHash(t, y) {
		t.Fatal("agents_max == agents changed the stage")
	}
}

// TestGenerateAgentRangeSmall: a stage with fewer instances than sizes ×
// counts still reaches the larger counts, and a range from one agent gives
// its wait instances two agents or more.
func TestGenerateAgentRangeSmall(t *testing.T) {
	seed := solvTestSeed(t, 5)
	cfg := Config{Agents: 2, AgentsMax: 5, Instances: 4}
	for n := 3; n <= 6; n++ {
		cfg.Sizes = append(cfg.Sizes, SizeConfig{Size: n, DataRatio: 0.25, HoleRatio: 0.2, WaitRatio: 0.3})
	}
	ins, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	got := map[[2]int]bool{}
	for _, in := range ins {
		got[[2]int{in.Width, len(in.Agents)}] = true
	}
	want := map[[2]int]bool{{3, 2}: true, {4, 3}: true, {5, 4}: true, {6, 5}: true}
	if !maps.Equal(got, want) {
		t.Errorf("4 instances of 2..5 agents on sizes 3..6: (size, agents) %v, want %v", got, want)
	}

	one := Config{Agents: 1, AgentsMax: 3, Instances: 40, Sizes: []SizeConfig{
		{Size: 4, DataRatio: 0.5, HoleRatio: 0.1, WaitRatio: 0.5}, {Size: 5, DataRatio: 0.5, HoleRatio: 0.1, WaitRatio: 0.5}}}
	if err := CheckFeasible(one); err != nil {
		t.Fatalf("1..3 agents with waits: %v", err)
	}
	ins, err = Generate(one, seed, 0, one.Instances)
	if err != nil {
		t.Fatal(err)
	}
	single := 0
	for _, in := range ins {
		if in.NeedsWait && len(in.Agents) < 2 {
			t.Fatalf("a wait instance with %d agent", len(in.Agents))
		}
		if len(in.Agents) == 1 {
			single++
		}
	}
	if single == 0 {
		t.Error("1..3 agents: no single-agent instance")
	}
}

// TestGenerateInstancesValid checks every generated instance against an
// independent annotation with the default (larger) budget and the
// generator's placement rules.
func TestGenerateInstancesValid(t *testing.T) {
	seed := solvTestSeed(t, 99)
	cfg := genTestConfig()
	cfg.Agents = 3
	cfg.Sizes = cfg.Sizes[1:]
	ins, err := Generate(cfg, seed, 0, cfg.Instances)
	if err != nil {
		t.Fatal(err)
	}
	for i, in := range ins {
		if err := in.Validate(); err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		if in.ID != in.ComputeID() {
			t.Fatalf("instance %d: ID %s is not the content id", i, in.ID)
		}
		if in.Seed != InstanceSeed(seed, i) {
			t.Fatalf("instance %d: seed %d, want InstanceSeed", i, in.Seed)
		}
		seen := map[Pos]bool{}
		for _, a := range in.Agents {
			for _, p := range []Pos{a.Start, a.Goal} {
				if seen[p] {
					t.Fatalf("instance %d: cell %v used twice by starts and goals", i, p)
				}
				seen[p] = true
			}
		}
		re := in.Clone()
		re.SOC, re.Makespan, re.NeedsWait = 0, 0, false
		if err := Annotate(re, SolveOptions{}); err != nil {
			t.Fatalf("instance %d: %v", i, err)
		}
		if re.SOC != in.SOC || re.Makespan != in.Makespan || re.NeedsWait != in.NeedsWait {
			t.Fatalf("instance %d: generator says %d/%d/%v, annotation %d/%d/%v", i, in.SOC, in.Makespan, in.NeedsWait, re.SOC, re.Makespan, re.NeedsWait)
		}
		sol, err := Solve(in, SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		solvCheckPlan(t, in, sol.Plan, false)
	}
}

func TestCheckFeasible(t *testing.T) {
	if err := CheckFeasible(DefaultConfig()); err != nil {
		t.Fatalf("default config: %v", err)
	}
	if err := CheckFeasible(genTestConfig()); err != nil {
		t.Fatalf("test config: %v", err)
	}
	mod := func(f func(*Config)) Config {
		c := genTestConfig().Clone()
		f(&c)
		return c
	}
	cases := []struct {
		name    string
		cfg     Config
		size    int  // size named by a *GenError, 0 for field errors
		invalid bool // a field error
		probe   bool // rejected by the sampling probe only
	}{
		{"5 agents on 3x3", mod(func(c *Config) { c.Agents = 5 }), 3, false, false},
		{"90% holes on 3x3", mod(func(c *Config) { c.Sizes[0].HoleRatio = 0.9 }), 3, false, false},
		{"90% holes on 10x10", Config{Agents: 3, Instances: 10, Sizes: []SizeConfig{{Size: 10, DataRatio: 1, HoleRatio: 0.9}}}, 10, false, true},
		{"holes leave too few cells", mod(func(c *Config) { c.Sizes[0].HoleRatio = 0.7 }), 3, false, false},
		{"wait with one agent", mod(func(c *Config) { c.Agents = 1 }), 3, false, false},
		{"no room at 80% holes on 10x10", Config{Agents: 3, Instances: 10, Sizes: []SizeConfig{{Size: 10, DataRatio: 1, HoleRatio: 0.8}}}, 10, false, true},
		{"agents 0", mod(func(c *Config) { c.Agents = 0 }), 0, true, false},
		{"agents_max below agents", mod(func(c *Config) { c.AgentsMax = 1 }), 0, true, false},
		{"agents_max above 10", mod(func(c *Config) { c.AgentsMax = MaxAgents + 1 }), 0, true, false},
		{"range: holes leave too few cells for the most agents", mod(func(c *Config) { c.AgentsMax = 4; c.Sizes[1].HoleRatio = 0.6 }), 4, false, false},
		{"range: the probe fails for the most agents", Config{Agents: 2, AgentsMax: 5, Instances: 10, Sizes: []SizeConfig{{Size: 8, DataRatio: 1, HoleRatio: 0.7}}}, 8, false, true},
		{"negative instances", mod(func(c *Config) { c.Instances = -1 }), 0, true, false},
		{"size too small", mod(func(c *Config) { c.Sizes[0].Size = 1 }), 0, true, false},
		{"size twice", mod(func(c *Config) { c.Sizes[1].Size = 3 }), 0, true, false},
		{"ratio above 1", mod(func(c *Config) { c.Sizes[2].WaitRatio = 1.5 }), 0, true, false},
		{"NaN ratio", mod(func(c *Config) { c.Sizes[2].HoleRatio = math.NaN() }), 0, true, false},
		{"no sizes", Config{Agents: 2, Instances: 4}, 0, true, false},
		{"data ratios all zero", mod(func(c *Config) {
			for i := range c.Sizes {
				c.Sizes[i].DataRatio = 0
			}
		}), 0, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFeasible(tc.cfg)
			if !errors.Is(err, ErrInfeasible) {
				t.Fatalf("want ErrInfeasible, got %v", err)
			}
			if tc.invalid {
				var fe *FieldError
				if !errors.Is(err, ErrInvalidConfig) || !errors.As(err, &fe) {
					t.Fatalf("want a field error, got %v", err)
				}
				return
			}
			var ge *GenError
			if !errors.As(err, &ge) || ge.Size != tc.size || ge.Index != -1 || ge.Reason == "" {
				t.Fatalf("want a GenError naming size %d, got %v", tc.size, err)
			}
			if tc.probe {
				return
			}
			// Generation refuses it too, without searching.
			if _, err := GenerateOne(tc.cfg, 1, 0); !errors.Is(err, ErrInfeasible) {
				t.Fatalf("GenerateOne: want ErrInfeasible, got %v", err)
			}
		})
	}
	// The probe's case passes for its fewest agents alone.
	if err := CheckFeasible(Config{Agents: 2, Instances: 10, Sizes: []SizeConfig{{Size: 8, DataRatio: 1, HoleRatio: 0.7}}}); err != nil {
		t.Errorf("2 agents at 70%% holes on 8x8: %v", err)
	}
	// A size with no instances is not checked.
	c := mod(func(c *Config) { c.Sizes[0].DataRatio = 0; c.Sizes[0].HoleRatio = 0.99 })
	if err := CheckFeasible(c); err != nil {
		t.Fatalf("a size without instances made the config infeasible: %v", err)
	}
}

// TestGenerateGivesUp checks that a request the sampler cannot meet ends
// in a GenError instead of looping: two agents on an open 2x2 grid can
// always rotate, so none needs a wait.
func TestGenerateGivesUp(t *testing.T) {
	cfg := Config{Agents: 2, Instances: 1, Sizes: []SizeConfig{{Size: 2, DataRatio: 1, HoleRatio: 0, WaitRatio: 1}}}
	if err := CheckFeasible(cfg); err != nil {
		t.Skipf("rejected up front: %v", err)
	}
	_, err := GenerateOne(cfg, 5, 0)
	var ge *GenError
	if err == nil {
		t.Log("the sampler found an instance; nothing to check")
		return
	}
	if !errors.Is(err, ErrInfeasible) || !errors.As(err, &ge) || ge.Index != 0 || ge.Size != 2 {
		t.Fatalf("want a GenError for instance 0 of size 2, got %v", err)
	}
	t.Log(err)
}

func TestGenerateRange(t *testing.T) {
	cfg := genTestConfig()
	for _, r := range [][2]int{{-1, 2}, {3, 2}, {0, cfg.Instances + 1}} {
		if _, err := Generate(cfg, 1, r[0], r[1]); err == nil {
			t.Errorf("range %v: want an error", r)
		}
	}
	if _, err := GenerateOne(cfg, 1, cfg.Instances); err == nil {
		t.Error("index past the end: want an error")
	}
	ins, err := Generate(cfg, 1, 5, 5)
	if err != nil || len(ins) != 0 {
		t.Errorf("empty range: %v, %d instances", err, len(ins))
	}
}
