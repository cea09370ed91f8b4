package env

import (
	"errors"
	"flag"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

var solverSuiteFlag = flag.Bool("solversuite", false, "TestSolverPaperSuite: generate and annotate the paper-sized evaluation suite on 2 goroutines and report timings")

// solvPaperSuite returns the paper-shaped evaluation suite: 3, 4 and 5
// agents; sizes k..10; wait-ratio subsets 0.25, 0.50 and 0.75; 50 instances
// per size per subset (3,150 in all). Hole ratios cycle 0.1..0.5 over the
// sizes, starting at 0.1 on the smallest size of each agent count.
func solvPaperSuite() []Config {
	var out []Config
	for k := 3; k <= 5; k++ {
		for _, wr := range []float64{0.25, 0.50, 0.75} {
			c := Config{Agents: k}
			m := PaperMaxSize - k + 1
			for n := k; n <= PaperMaxSize; n++ {
				hr := 0.1 * float64(1+(n-k)%5)
				c.Sizes = append(c.Sizes, SizeConfig{Size: n, DataRatio: 1 / float64(m), HoleRatio: hr, WaitRatio: wr})
			}
			c.Instances = 50 * m
			out = append(out, c)
		}
	}
	return out
}

// solvBenchSets are fixed instance sets for BenchmarkSolve, drawn by the
// generator (so each instance is one the generator accepts).
func solvBenchSets(b *testing.B) map[string][]*Instance {
	b.Helper()
	sets := map[string]Config{
		"k5_10x10_h50": {Agents: 5, Instances: 24, Sizes: []SizeConfig{{Size: 10, DataRatio: 1, HoleRatio: 0.5, WaitRatio: 0.5}}},
		"k3_6x6_h20":   {Agents: 3, Instances: 24, Sizes: []SizeConfig{{Size: 6, DataRatio: 1, HoleRatio: 0.2, WaitRatio: 0.5}}},
		"k5_7x7_h30":   {Agents: 5, Instances: 24, Sizes: []SizeConfig{{Size: 7, DataRatio: 1, HoleRatio: 0.3, WaitRatio: 0.5}}},
	}
	out := map[string][]*Instance{}
	for name, cfg := range sets {
		ins, err := Generate(cfg, 2026, 0, cfg.Instances)
		if err != nil {
			b.Fatal(err)
		}
		out[name] = ins
	}
	return out
}

// BenchmarkSolve measures one SOC-optimal Solve per instance (ns/op is per
// instance) with a reused Solver, and Annotate (three searches).
func BenchmarkSolve(b *testing.B) {
	sets := solvBenchSets(b)
	names := make([]string, 0, len(sets))
	for name := range sets {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		ins := sets[name]
		b.Run(name+"/soc", func(b *testing.B) {
			s := NewSolver()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Solve(ins[i%len(ins)], SolveOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/makespan", func(b *testing.B) {
			s := NewSolver()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.Solve(ins[i%len(ins)], SolveOptions{Objective: MakespanObjective}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(name+"/annotate", func(b *testing.B) {
			s := NewSolver()
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				in := ins[i%len(ins)].Clone()
				if err := s.Annotate(in, SolveOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGenerate measures GenerateOne (rejection sampling included) per
// instance on one stage configuration per agent count of the paper suite
// (wait ratio 0.5).
func BenchmarkGenerate(b *testing.B) {
	for _, cfg := range solvPaperSuite() {
		if cfg.Sizes[0].WaitRatio != 0.5 {
			continue
		}
		b.Run(fmt.Sprintf("k%d", cfg.Agents), func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := GenerateOne(cfg, 11, i%cfg.Instances); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestSolverPaperSuite generates and annotates the paper-sized suite with
// two goroutines pulling instance indices, and reports the wall time and
// the slowest instances. Run with -solversuite (it takes about a minute);
// it asserts only that every instance is generated.
func TestSolverPaperSuite(t *testing.T) {
	if !*solverSuiteFlag {
		t.Skip("run with -solversuite")
	}
	seed := solvTestSeed(t, 2026)
	type job struct {
		cfg   int
		index int
	}
	cfgs := solvPaperSuite()
	var jobs []job
	for ci, c := range cfgs {
		if err := CheckFeasible(c); err != nil {
			t.Fatalf("suite config %d: %v", ci, err)
		}
		for i := 0; i < c.Instances; i++ {
			jobs = append(jobs, job{ci, i})
		}
	}
	dur := make([]time.Duration, len(jobs))
	stats := make([]genStats, len(jobs))
	ins := make([]*Instance, len(jobs))
	var next atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var errs []error
	start := time.Now()
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				j := int(next.Add(1) - 1)
				if j >= len(jobs) {
					return
				}
				t0 := time.Now()
				cfg, idx := cfgs[jobs[j].cfg], jobs[j].index
				p, err := genNewPlan(cfg, seed+uint64(jobs[j].cfg))
				var in *Instance
				if err == nil {
					si, wait, k := p.slot(idx)
					sc := cfg.Sizes[si]
					in, err = genDrawStats(&genScratch{}, NewSolver(), sc.Size, genHoleCount(sc.HoleRatio, sc.Size), k, wait, InstanceSeed(p.seed, idx), idx, &stats[j])
				}
				dur[j] = time.Since(t0)
				ins[j] = in
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		var ge *GenError
		if errors.As(err, &ge) {
			t.Errorf("generation failed: %v", err)
		} else {
			t.Errorf("unexpected error: %v", err)
		}
	}
	order := make([]int, len(jobs))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return int(dur[b] - dur[a]) })
	var sum time.Duration
	for _, d := range dur {
		sum += d
	}
	p99 := dur[order[len(order)/100]]
	t.Logf("suite: %d instances in %v wall on 2 goroutines (%.1f ms CPU-ish per instance); p99 %v, max %v",
		len(jobs), wall.Round(time.Millisecond), float64(sum.Microseconds())/1000/float64(len(jobs)), p99.Round(time.Microsecond), dur[order[0]].Round(time.Microsecond))
	var tot genStats
	for _, st := range stats {
		tot.placements += st.placements
		tot.candidates += st.candidates
		tot.budget += st.budget
		tot.unsolvable += st.unsolvable
		tot.mismatched += st.mismatched
		tot.work += st.work
	}
	t.Logf("sampler: %d placements, %d candidates solved: %d out of budget, %d unsolvable, %d wrong needs_wait; %d expansions",
		tot.placements, tot.candidates, tot.budget, tot.unsolvable, tot.mismatched, tot.work)
	perK := map[int]time.Duration{}
	waits := map[int]int{}
	for j, jb := range jobs {
		perK[cfgs[jb.cfg].Agents] += dur[j]
		if ins[j] != nil && ins[j].NeedsWait {
			waits[cfgs[jb.cfg].Agents]++
		}
	}
	for k := 3; k <= 5; k++ {
		t.Logf("agents %d: total %v, %d instances need a wait", k, perK[k].Round(time.Millisecond), waits[k])
	}
	for _, j := range order[:min(10, len(order))] {
		c := cfgs[jobs[j].cfg]
		in := ins[j]
		desc := "failed"
		if in != nil {
			desc = fmt.Sprintf("%dx%d holes=%d soc=%d mk=%d wait=%v", in.Width, in.Height, in.NumHoles(), in.SOC, in.Makespan, in.NeedsWait)
		}
		t.Logf("slow: %v agents=%d wr=%.2f index=%d %s; %+v", dur[j].Round(time.Microsecond), c.Agents, c.Sizes[0].WaitRatio, jobs[j].index, desc, stats[j])
	}
}

// BenchmarkCheckFeasible measures the dry check on the default
// configuration, on the hardest paper-suite configuration (5 agents, 50%
// holes on 10x10), and on a configuration the probe rejects (80% holes on
// 10x10 with 3 agents).
func BenchmarkCheckFeasible(b *testing.B) {
	suite := solvPaperSuite()
	cases := []struct {
		name string
		cfg  Config
		ok   bool
	}{
		{"default", DefaultConfig(), true},
		{"suite_k5", suite[len(suite)-1], true},
		{"reject_h80", Config{Agents: 3, Instances: 10, Sizes: []SizeConfig{{Size: 10, DataRatio: 1, HoleRatio: 0.8}}}, false},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := CheckFeasible(c.cfg); (err == nil) != c.ok {
					b.Fatal(err)
				}
			}
		})
	}
}
