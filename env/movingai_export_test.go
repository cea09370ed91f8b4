package env_test

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/env/movingai"
)

var solverExportFlag = flag.String("solverexport", "", "TestSolverExportMovingAI: write the comparison instances as MovingAI map/scen files and our SOC-optimal solve times to this directory")

// TestSolverExportMovingAI writes the wait-ratio-0.5 third of the paper
// suite (1,050 instances) as MovingAI .map/.scen files (movingai.Export: a
// map per grid, a scen per instance), for comparing with other MAPF
// solvers, together with ours.csv: the scen's name, agents, SOC and the
// time of a SOC-optimal Solve (fastest of five). Run with -solverexport=DIR.
func TestSolverExportMovingAI(t *testing.T) {
	dir := *solverExportFlag
	if dir == "" {
		t.Skip("run with -solverexport=DIR")
	}
	var ins []*env.Instance
	for ci, cfg := range env.SolvPaperSuite() {
		if cfg.Sizes[0].WaitRatio != 0.5 {
			continue
		}
		part, err := env.Generate(cfg, 2026+uint64(ci), 0, cfg.Instances)
		if err != nil {
			t.Fatal(err)
		}
		ins = append(ins, part...)
	}
	files, err := movingai.Export(ins, "paper suite")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if err := os.WriteFile(filepath.Join(dir, f.Name), f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scens := files[len(files)-len(ins):] // the maps come first, then one scen per instance in order
	var csv strings.Builder
	csv.WriteString("name,agents,soc,seconds\n")
	s := env.NewSolver()
	for i, in := range ins {
		// The fastest of five runs, which approximates CPU time on a
		// loaded machine.
		var sol env.Solution
		d := time.Duration(1 << 62)
		for range 5 {
			t0 := time.Now()
			sol, err = s.Solve(in, env.SolveOptions{})
			d = min(d, time.Since(t0))
			if err != nil {
				t.Fatal(err)
			}
		}
		fmt.Fprintf(&csv, "%s,%d,%d,%.6f\n", strings.TrimSuffix(scens[i].Name, ".scen"), len(in.Agents), sol.SOC, d.Seconds())
	}
	if err := os.WriteFile(filepath.Join(dir, "ours.csv"), []byte(csv.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
