package torch

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

func TestSplitRows(t *testing.T) {
	for _, tc := range []struct {
		rows, n int
		want    string
	}{
		{4, 2, "[[0 2] [2 4]]"}, {5, 2, "[[0 2] [2 5]]"}, {1, 2, "[[0 0] [0 1]]"}, {7, 3, "[[0 2] [2 4] [4 7]]"}, {3, 1, "[[0 3]]"},
	} {
		if got := fmt.Sprint(splitRows(tc.rows, tc.n)); got != tc.want {
			t.Errorf("splitRows(%d, %d) = %s, want %s", tc.rows, tc.n, got, tc.want)
		}
	}
}

// cpuRanks is a torch spec of n gloo ranks on the CPU, one thread each.
func cpuRanks(t *testing.T, n int) engine.Spec {
	devs := make([]string, n)
	for i := range devs {
		devs[i] = "cpu"
	}
	return engine.Spec{Kind: engine.Torch, Devices: devs, Threads: 1, Log: func(l string) { t.Log("worker: " + l) }}
}

// readWeights reads every tensor of dir/model.safetensors as float32.
func readWeights(t *testing.T, dir string) map[string][]float32 {
	t.Helper()
	f, err := safetensors.Open(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string][]float32{}
	for _, name := range f.Header.Names() {
		tn, err := f.Read(name)
		if err != nil {
			t.Fatal(err)
		}
		if out[name], err = tn.Float32(nil); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// weightDiff is the largest |a−b| over the tensors of two checkpoints (which must hold the same
// names and shapes).
func weightDiff(t *testing.T, a, b string) float64 {
	t.Helper()
	wa, wb := readWeights(t, a), readWeights(t, b)
	if len(wa) != len(wb) {
		t.Fatalf("%d vs %d tensors", len(wa), len(wb))
	}
	var d float64
	for name, x := range wa {
		y, ok := wb[name]
		if !ok || len(x) != len(y) {
			t.Fatalf("tensor %s: missing or mis-shaped in %s", name, b)
		}
		dd, _ := maxDiff(x, y)
		d = math.Max(d, dd)
	}
	return d
}

// TestGroupStepsAsOneRank: two gloo ranks, each stepping on half of a batch's rows, take the
// steps one worker takes on the whole batch (loss ≤ 1e-4 relative, weights ≤ 1e-5 after three
// steps); the ranks' weights are equal; the group's checkpoint is one Hugging Face directory
// that a fresh single worker loads; LogProbs split over the ranks agree with one worker's.
func TestGroupStepsAsOneRank(t *testing.T) {
	requireTorch(t)
	const seed = 41
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	dir := checkpoint(t, cfg, seed)
	ctx := context.Background()
	one, err := Load(ctx, engine.Spec{Kind: engine.Torch, Threads: 1}, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer one.Close()
	grp, err := LoadGroup(ctx, cpuRanks(t, 2), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer grp.Close()
	if h := grp.Workers()[1].Hello(); h.Rank != 1 || h.WorldSize != 2 || h.Backend != "gloo" || h.Sharding != "replicated" {
		t.Fatalf("rank 1's hello: %+v", h)
	}
	t.Logf("group: %s", grp.Device())
	gc := learner.DefaultGRPOConfig()
	gc.LR, gc.MicroBatch, gc.WeightDecay = 1e-3, 2, 0.01
	for _, m := range []engine.Model{one, grp} {
		if err := m.SetTrainConfig(gc); err != nil {
			t.Fatal(err)
		}
	}
	b := grpoBatch(t, one, rand.New(rand.NewPCG(seed, 2)))
	lp1, err := one.LogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	lp2, err := grp.LogProbs(b)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(lp1, lp2); d > 1e-5 {
		t.Fatalf("log-probs: one rank vs two differ by %g", d)
	}
	for step := 1; step <= 3; step++ {
		s1, err := one.Step(engine.StepGRPO, b)
		if err != nil {
			t.Fatal(err)
		}
		s2, err := grp.Step(engine.StepGRPO, b)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("step %d: loss one rank %.9g, two ranks %.9g; grad norm %.9g vs %.9g", step, s1.Loss, s2.Loss, s1.GradNorm, s2.GradNorm)
		if rel := math.Abs(s1.Loss-s2.Loss) / math.Max(math.Abs(s1.Loss), 1e-12); rel > 1e-4 {
			t.Errorf("step %d: loss %g on one rank, %g on two: relative difference %g > 1e-4", step, s1.Loss, s2.Loss, rel)
		}
		if s1.Positions != s2.Positions || s1.Step != s2.Step || s1.MicroBatches != s2.MicroBatches {
			t.Errorf("step %d: one rank %+v, two ranks %+v", step, s1, s2)
		}
	}
	tmp := t.TempDir()
	d1, d2, r1 := filepath.Join(tmp, "one"), filepath.Join(tmp, "group"), filepath.Join(tmp, "rank1")
	for _, s := range []struct {
		m   engine.Model
		dir string
	}{{one, d1}, {grp, d2}, {grp.ranks[1], r1}} {
		if err := s.m.Save(s.dir, safetensors.F32); err != nil {
			t.Fatal(err)
		}
	}
	if d := weightDiff(t, d1, d2); d > 1e-5 {
		t.Errorf("after 3 steps the weights of one rank and of two differ by %g > 1e-5", d)
	}
	if d := weightDiff(t, d2, r1); d != 0 {
		t.Errorf("rank 0's and rank 1's weights differ by %g", d)
	}
	fresh, err := Load(ctx, engine.Spec{Kind: engine.Torch, Threads: 1}, d2)
	if err != nil {
		t.Fatalf("the group's checkpoint in a fresh worker: %v", err)
	}
	defer fresh.Close()
	compareLogits(t, "group checkpoint in one worker", one, fresh, randomSeqs(rand.New(rand.NewPCG(seed, 3)), cfg.VocabSize, 5, 9), 1e-4)
}

// TestGroupRankKilled: a rank killed while the other waits for it in a step's collective ends
// the call with an error naming the killed rank, the group kills the other rank, later calls
// fail the same way, and no worker process is left.
func TestGroupRankKilled(t *testing.T) {
	requireTorch(t)
	const seed = 43
	t.Logf("seed %d", seed)
	dir := checkpoint(t, tinyConfig(t), seed)
	grp, err := LoadGroup(context.Background(), cpuRanks(t, 2), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer grp.Close()
	wks := grp.Workers()
	b := grpoBatch(t, grp, rand.New(rand.NewPCG(seed, 2)))
	bm, err := grp.ranks[0].batchMap(b)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		// Rank 0 steps on the whole batch and waits in its first collective for rank 1, which
		// sleeps until it is killed.
		done <- grp.each(func(i int, m *Model) error {
			if i == 0 {
				_, err := m.step(engine.StepGRPO, bm)
				return err
			}
			return m.wk.call("sleep", map[string]any{"seconds": 600.0}, nil, nil)
		})
	}()
	if err := syscall.Kill(wks[1].PID(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case err = <-done:
	case <-time.After(2 * time.Minute): // a hang guard, not a timing assertion
		t.Fatal("the group's call did not return after rank 1 was killed")
	}
	var re *RankError
	want := fmt.Sprintf("torch rank 1 (pid %d, cpu) exited: signal: killed", wks[1].PID())
	if !errors.As(err, &re) || re.Rank != 1 || !strings.HasPrefix(err.Error(), want) || !errors.Is(err, ErrWorkerDied) || !errors.Is(err, learner.ErrEngineLost) {
		t.Fatalf("err = %v, want a *RankError starting %q", err, want)
	}
	if _, err := grp.Logits([][]int32{{1, 2}}); !errors.As(err, &re) || re.Rank != 1 {
		t.Fatalf("a call after the death: %v, want rank 1's *RankError", err)
	}
	for _, wk := range wks {
		<-wk.Exited() // the group killed rank 0; both have been reaped
		if err := syscall.Kill(wk.PID(), 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("worker pid %d still exists after the group failed: kill(0) = %v", wk.PID(), err)
		}
	}
}

// TestGroupRefusedShare: a batch whose bad row lies in rank 1's share is refused by every rank
// (the error is rank 1's own, not a follower's), changes nothing, and the group steps on.
func TestGroupRefusedShare(t *testing.T) {
	requireTorch(t)
	const seed = 47
	t.Logf("seed %d", seed)
	cfg := tinyConfig(t)
	grp, err := LoadGroup(context.Background(), cpuRanks(t, 2), checkpoint(t, cfg, seed))
	if err != nil {
		t.Fatal(err)
	}
	defer grp.Close()
	seqs := [][]int32{{3, 4, 5, 6}}
	before, err := grp.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	b := grpoBatch(t, grp, rand.New(rand.NewPCG(seed, 2)))
	good := b.Actions[len(b.Actions)-1]
	b.Actions[len(b.Actions)-1] = int32(cfg.VocabSize) // last row: rank 1's share
	_, err = grp.Step(engine.StepGRPO, b)
	var re *RemoteError
	if !errors.As(err, &re) || re.Kind != "bad_request" || !strings.Contains(re.Message, "batch.actions") || !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("err = %v, want rank 1's bad_request about batch.actions", err)
	}
	after, err := grp.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := maxDiff(before[0], after[0]); d != 0 {
		t.Fatalf("a refused step changed the logits by %g", d)
	}
	b.Actions[len(b.Actions)-1] = good
	if st, err := grp.Step(engine.StepGRPO, b); err != nil || st.Step != 1 {
		t.Fatalf("the step after a refused one: %+v, %v", st, err)
	}
}

// TestGroupStartFails: ranks that cannot start (no CUDA here) fail LoadGroup at once with an
// error naming a rank and its device (and no goroutine behind: goleak).
func TestGroupStartFails(t *testing.T) {
	requireTorch(t)
	spec := engine.Spec{Kind: engine.Torch, Devices: []string{"cuda:0", "cuda:1"}, Threads: 1}
	grp, err := LoadGroup(context.Background(), spec, checkpoint(t, tinyConfig(t), 53))
	if err == nil {
		_ = grp.Close()
		t.Skip("this machine has two CUDA devices")
	}
	if !strings.HasPrefix(err.Error(), "torch rank ") || !strings.Contains(err.Error(), "cuda:") || !errors.Is(err, ErrWorkerDied) {
		t.Fatalf("err = %v, want a start error naming a rank and its device", err)
	}
	t.Logf("start error: %v", err)
}
