package movingai

import (
	"fmt"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// benchInstances is how many instances of each agent count the solver
// benchmark solves: the first ten groups of the committed 32×32 scen.
const benchInstances = 10

// BenchmarkSolveImported solves (SOC-optimal, default budgets) the first
// ten k-agent instances imported from the committed 32×32 map with 20%
// obstacles, for k = 2..10, cycling through them: one op is one solve, so
// ns/op is the mean time per instance. nodes/inst and expansions/inst are
// the mean constraint-tree nodes and low-level expansions per instance.
func BenchmarkSolveImported(b *testing.B) {
	m, rows := readRandom(b)
	for k := 2; k <= env.MaxAgents; k++ {
		ins, err := Import(m, rows, ImportOptions{Agents: k, First: benchInstances})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			s := env.NewSolver()
			nodes, expansions, i := 0, 0, 0
			b.ReportAllocs()
			for b.Loop() {
				sol, err := s.Solve(ins[i%len(ins)], env.SolveOptions{})
				if err != nil {
					b.Fatalf("instance %d (%s): %v", i%len(ins), ins[i%len(ins)].ID, err)
				}
				nodes += sol.Nodes
				expansions += sol.Expansions
				i++
			}
			b.ReportMetric(float64(nodes)/float64(i), "nodes/inst")
			b.ReportMetric(float64(expansions)/float64(i), "expansions/inst")
		})
	}
}
