package deploy_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/traces"
	"github.com/t2t-lab/t2t/train"
)

var deploySeed = flag.Uint64("deployseed", 0, "run seed of the local-cluster test (0: a fixed default)")

// TestLocalClusterScript runs deploy/local-cluster.sh with three nodes (a
// coordinator+learner+engineer node and two rollout nodes, a real
// redis-server) and a short scripted run, then reads every node's span
// file: each node recorded spans, the rollout nodes ran every unit, each
// stage's critical-path parts sum to its wall time, and the stage spans
// agree with the stage durations the coordinator reported.
func TestLocalClusterScript(t *testing.T) {
	if _, err := exec.LookPath("redis-server"); err != nil {
		if os.Getenv("T2T_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not found on PATH and T2T_REQUIRE_REDIS=1: %v", err)
		}
		t.Skip("redis-server not found on PATH (apt-get install -y redis-server); set T2T_REQUIRE_REDIS=1 to fail instead")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	seed := *deploySeed
	if seed == 0 {
		seed = 4
	}
	t.Logf("seed %d (replay with -deployseed %d)", seed, seed)
	const nodes, stages, instances, perUnit = 3, 2, 256, 16
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", "local-cluster.sh", strconv.Itoa(nodes), "--stages", strconv.Itoa(stages),
		"--policy", "scripted", "--instances", strconv.Itoa(instances), "--seed", strconv.FormatUint(seed, 10), "--out", dir)
	cmd.Env = append(os.Environ(), "T2T_BIN="+deployBinary(t))
	// SIGTERM first on timeout, so the script's trap stops its children.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 20 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		for i := 1; i <= nodes; i++ {
			b, _ := os.ReadFile(filepath.Join(dir, fmt.Sprintf("node-%d.err", i)))
			t.Logf("node-%d stderr:\n%s", i, b)
		}
		t.Fatalf("local-cluster.sh: %v\n%s", err, out)
	}
	t.Logf("local-cluster.sh:\n%s", out)
	if !strings.Contains(string(out), "Stages: where the wall time went") {
		t.Fatalf("no trace analysis in the output")
	}

	var files []string
	for i := 1; i <= nodes; i++ {
		files = append(files, filepath.Join(dir, fmt.Sprintf("node-%d.jsonl", i)))
	}
	spans, err := traces.ReadSpans(files...)
	if err != nil {
		t.Fatal(err)
	}
	rep := traces.Analyze(spans)

	// Spans from every node; the rollout nodes ran every unit.
	perNode := map[string]int{}
	for _, s := range spans {
		perNode[s.Node]++
	}
	units := (instances + perUnit - 1) / perUnit
	ran := 0
	for i := 1; i <= nodes; i++ {
		name := fmt.Sprintf("node-%d", i)
		if perNode[name] == 0 {
			t.Errorf("no spans from %s (spans per node: %v)", name, perNode)
		}
		j := slices.IndexFunc(rep.Nodes, func(n traces.NodeUsage) bool { return n.Node == name })
		if j < 0 {
			continue
		}
		if i == 1 && rep.Nodes[j].WorkUnits != 0 {
			t.Errorf("the coordinator node ran %d units; it has no rollout role", rep.Nodes[j].WorkUnits)
		}
		if i > 1 && rep.Nodes[j].WorkUnits == 0 {
			t.Errorf("%s ran no unit", name)
		}
		ran += rep.Nodes[j].WorkUnits
	}
	if ran < stages*units {
		t.Errorf("%d executing work_unit spans, want at least %d (every unit of every stage)", ran, stages*units)
	}

	// The coordinator's own report of the run.
	var sum struct {
		Error string        `json:"error"`
		Run   *train.Result `json:"run"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "node-1.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &sum); err != nil || sum.Run == nil || sum.Error != "" {
		t.Fatalf("node-1 summary: %v %q\n%s", err, sum.Error, b)
	}
	if len(sum.Run.Stages) != stages || len(rep.Stages) != stages {
		t.Fatalf("%d stage reports, %d stage spans; want %d", len(sum.Run.Stages), len(rep.Stages), stages)
	}

	for i, st := range rep.Stages {
		var parts time.Duration
		for _, p := range st.Parts {
			parts += p
		}
		if st.Wall <= 0 || math.Abs(float64(parts-st.Wall)) > 0.05*float64(st.Wall) {
			t.Errorf("stage %s: critical-path parts sum to %v, wall %v (want within 5%%)", st.Stage, parts, st.Wall)
		}
		if st.Stage != strconv.Itoa(i) || st.Node != "node-1" || st.WorkUnits < units {
			t.Errorf("stage span %d: stage %q node %q with %d units, want stage %d on node-1 with >= %d", i, st.Stage, st.Node, st.WorkUnits, i, units)
		}
		// The coordinator measures a stage from the end of the previous
		// stage's evaluation to the start of this one's (train.StageReport
		// .Duration); the stage span runs from the building of its units
		// to the end of its evaluation and of the engineer's proposal.
		// So the stage's rollout work (generation, verification) fits in
		// the reported duration, and the two differ by at most the
		// evaluation and engineer time at the end and the proposal and
		// config broadcast before the units (the previous stage's
		// engineer time), plus scheduling slack.
		d := sum.Run.Stages[i].Duration
		work := st.Parts[traces.Generation] + st.Parts[traces.Verification]
		if work > d+time.Millisecond {
			t.Errorf("stage %d: rollout work on the critical path %v exceeds the reported stage duration %v", i, work, d)
		}
		slack := st.Parts[traces.Evaluation] + st.Parts[traces.EngineerProposal] + d/20 + 100*time.Millisecond
		if i > 0 {
			slack += rep.Stages[i-1].Parts[traces.EngineerProposal]
		}
		if i > 0 && (st.Wall > d+slack || d > st.Wall+slack) {
			t.Errorf("stage %d: span wall %v vs reported duration %v: differ by more than %v", i, st.Wall, d, slack)
		}
		if i == 0 && st.Wall > d+slack {
			// Stage 0's duration also covers the rollout nodes joining.
			t.Errorf("stage 0: span wall %v exceeds the reported duration %v by more than %v", st.Wall, d, slack)
		}
		t.Logf("stage %d: wall %v, reported %v, parts %v", i, st.Wall, d, st.Parts)
	}
}
