package gomlxnet

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/t2t-lab/t2t/learner/gridnet"

	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/t2t-lab/t2t/internal/testseed"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// Synthetic step task: an observation is a one-hot "target move" in its first gridnet.NumMoves slots
// plus gridObsNoise noise features; some non-target moves are illegal. Reward of an episode is
// the share of its decisions that took the target move.
const (
	gridObsNoise = 7
	gridObs      = gridnet.NumMoves + gridObsNoise
	gridEpLen    = 4
)

func newGridTestNet(t testing.TB, seed uint64, train learner.GRPOConfig) *Net {
	t.Helper()
	cfg := gridnet.Config{ObsSize: gridObs, Hidden: []int{32, 32}, Seed: seed}
	g, err := New(testBackend(t), cfg, train)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// gridTask draws n decisions: observations, legal masks and target moves.
func gridTask(rng *rand.Rand, n int) (obs []float32, legal []bool, target []int32) {
	obs = make([]float32, n*gridObs)
	legal = make([]bool, n*gridnet.NumMoves)
	target = make([]int32, n)
	for i := range n {
		tg := rng.IntN(gridnet.NumMoves)
		target[i] = int32(tg)
		obs[i*gridObs+tg] = 1
		for k := range gridObsNoise {
			obs[i*gridObs+gridnet.NumMoves+k] = float32(rng.NormFloat64())
		}
		for a := range gridnet.NumMoves {
			legal[i*gridnet.NumMoves+a] = a == tg || rng.Float64() > 0.3
		}
	}
	return
}

// gridRollout plays groups×GroupSize episodes of gridEpLen decisions (the episodes of a group
// share their observations) and returns the GRPO batch and the mean reward.
func gridRollout(t testing.TB, g *Net, rng *rand.Rand, groups, groupSize int) (*gridnet.Batch, float64) {
	t.Helper()
	perGroup := gridEpLen
	var b gridnet.Batch
	rewards := make([]float32, 0, groups*groupSize)
	for range groups {
		obs, legal, target := gridTask(rng, perGroup)
		for range groupSize {
			acts := make([]int32, perGroup)
			lps := make([]float32, perGroup)
			if err := g.Act(obs, perGroup, legal, 1, rng, acts, lps); err != nil {
				t.Fatal(err)
			}
			var r float32
			for i := range acts {
				if acts[i] == target[i] {
					r += 1.0 / gridEpLen
				}
			}
			rewards = append(rewards, r)
			b.Obs = append(b.Obs, obs...)
			b.Legal = append(b.Legal, legal...)
			b.Actions = append(b.Actions, acts...)
			b.LogProbs = append(b.LogProbs, lps...)
		}
	}
	adv := learner.GroupAdvantages(rewards, groupSize, true, nil)
	for _, a := range adv {
		for range gridEpLen {
			b.Advantages = append(b.Advantages, a)
		}
	}
	b.N = len(b.Actions)
	var mean float64
	for _, r := range rewards {
		mean += float64(r) / float64(len(rewards))
	}
	return &b, mean
}

func TestGridNetActRespectsLegalAndGreedy(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 51), 5))
	g := newGridTestNet(t, 3, learner.DefaultGRPOConfig())
	const n = 1100 // more than one inference chunk (1024 + a 128 bucket)
	obs, legal, _ := gridTask(rng, n)
	acts, lps := make([]int32, n), make([]float32, n)
	if err := g.Act(obs, n, legal, 1, rng, acts, lps); err != nil {
		t.Fatal(err)
	}
	lp1 := make([]float32, n)
	if err := g.LogProbs(obs, n, legal, acts, lp1); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		if !legal[i*gridnet.NumMoves+int(acts[i])] {
			t.Fatalf("row %d: illegal move %d sampled", i, acts[i])
		}
		if math.Abs(float64(lps[i]-lp1[i])) > 1e-5 || lps[i] > 0 {
			t.Fatalf("row %d: Act logprob %v, LogProbs %v", i, lps[i], lp1[i])
		}
	}
	// Greedy: the move with the highest legal log-prob, deterministic, rng unused.
	greedy := make([]int32, n)
	if err := g.Act(obs, n, legal, 0, nil, greedy, lps); err != nil {
		t.Fatal(err)
	}
	all := make([]float32, n)
	for a := range int32(gridnet.NumMoves) {
		cand := slices.Repeat([]int32{a}, n)
		for i := range n {
			if !legal[i*gridnet.NumMoves+int(a)] {
				cand[i] = greedy[i]
			}
		}
		if err := g.LogProbs(obs, n, legal, cand, all); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if all[i] > lps[i]+1e-6 {
				t.Fatalf("row %d: greedy move %d (lp %v) beaten by %d (lp %v)", i, greedy[i], lps[i], a, all[i])
			}
		}
	}
	// A row without legal moves and a short dst are errors.
	for i := range gridnet.NumMoves {
		legal[i] = false
	}
	if err := g.Act(obs, n, legal, 1, rng, acts, lps); !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("no legal move: got %v", err)
	}
	if err := g.Act(obs, n, nil, 1, rng, acts[:1], lps); !errors.Is(err, learner.ErrBadBatch) {
		t.Fatalf("short dst: got %v", err)
	}
}

// TestGridNetSamplingFrequencies checks sampled frequencies against the model's probabilities
// (and the temperature's effect) on one observation repeated.
func TestGridNetSamplingFrequencies(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 52), 5))
	g := newGridTestNet(t, 4, learner.DefaultGRPOConfig())
	obs, _, _ := gridTask(rng, 1)
	// Sharpen the policy so temperature matters: a few BC steps towards move 3.
	for range 30 {
		if _, err := g.BCUpdate(obs, 1, nil, []int32{3}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 4000
	rep := slices.Repeat(obs, n)
	probs := make([]float64, gridnet.NumMoves)
	lp := make([]float32, 1)
	for a := range int32(gridnet.NumMoves) {
		if err := g.LogProbs(obs, 1, nil, []int32{a}, lp); err != nil {
			t.Fatal(err)
		}
		probs[a] = math.Exp(float64(lp[0]))
	}
	for _, temp := range []float64{1, 2} {
		acts, lps := make([]int32, n), make([]float32, n)
		if err := g.Act(rep, n, nil, temp, rng, acts, lps); err != nil {
			t.Fatal(err)
		}
		want := make([]float64, gridnet.NumMoves)
		var z float64
		for a := range want {
			want[a] = math.Pow(probs[a], 1/temp)
			z += want[a]
		}
		for a := range want {
			want[a] /= z
			got := 0.0
			for _, x := range acts {
				if x == int32(a) {
					got++
				}
			}
			got /= n
			if sd := math.Sqrt(want[a] * (1 - want[a]) / n); math.Abs(got-want[a]) > 5*sd+1e-3 {
				t.Fatalf("τ=%v move %d: frequency %.4f, want %.4f", temp, a, got, want[a])
			}
		}
		for i := range n {
			if math.Abs(float64(lps[i])-math.Log(want[acts[i]])) > 1e-4 {
				t.Fatalf("τ=%v: logprob %v, want %v", temp, lps[i], math.Log(want[acts[i]]))
			}
		}
	}
}

func TestGridNetBCLearns(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 53), 5))
	train := learner.DefaultGRPOConfig()
	train.LR = 3e-3
	g := newGridTestNet(t, 5, train)
	var st learner.UpdateStats
	for it := range 150 {
		obs, legal, target := gridTask(rng, 128)
		var err error
		if st, err = g.BCUpdate(obs, 128, legal, target); err != nil {
			t.Fatal(err)
		}
		if st.Accuracy >= 0.98 {
			t.Logf("iteration %d: %+v", it, st)
			break
		}
	}
	if st.Accuracy < 0.98 || g.Version() != st.Step {
		t.Fatalf("behaviour cloning did not learn: %+v (version %d)", st, g.Version())
	}
}

func TestGridNetGRPOLearns(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 54), 5))
	train := learner.DefaultGRPOConfig()
	train.LR = 1e-2
	train.MicroBatch = 128 // 256 decisions: two micro-batches
	g := newGridTestNet(t, 6, train)
	var first, mean float64
	for it := range 150 {
		b, m := gridRollout(t, g, rng, 8, train.GroupSize)
		if it == 0 {
			first = m
		}
		mean = m
		if mean >= 0.9 {
			t.Logf("iteration %d: mean reward %.3f (first %.3f)", it, mean, first)
			break
		}
		if _, err := g.Update(b); err != nil {
			t.Fatal(err)
		}
	}
	// Chance with ~30% of moves illegal is about 1/3.5.
	if first > 0.45 || mean < 0.9 {
		t.Fatalf("mean reward %.3f → %.3f, want from chance to ≥ 0.9", first, mean)
	}
}

func gridWeights(t testing.TB, g *Net) []float32 {
	t.Helper()
	var out []float32
	for _, v := range append(slices.Clone(g.ws), g.bs...) {
		out = append(out, tensors.MustCopyFlatData[float32](v.MustValue())...)
	}
	return out
}

// TestGridNetCheckpointResumeIsExact: N steps, save, load into a fresh model, M more steps
// gives bit-identical weights to N+M uninterrupted steps with the same seed.
func TestGridNetCheckpointResumeIsExact(t *testing.T) {
	seed := testseed.Get(t, 61)
	const N, M = 3, 3
	train := learner.DefaultGRPOConfig()
	train.MicroBatch = 64 // 128 decisions per step: accumulation path
	run := func(g *Net, pcg *rand.PCG, steps int) {
		rng := rand.New(pcg)
		for range steps {
			b, _ := gridRollout(t, g, rng, 4, train.GroupSize)
			if _, err := g.Update(b); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Uninterrupted.
	a := newGridTestNet(t, 7, train)
	pa := rand.NewPCG(seed, 9)
	run(a, pa, N+M)
	// Interrupted.
	b := newGridTestNet(t, 7, train)
	pb := rand.NewPCG(seed, 9)
	run(b, pb, N)
	state, err := pb.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	b.SetTrainState(gridnet.TrainState{ConfigVersion: 4, DataPosition: 123, RNGState: state})
	dir := filepath.Join(t.TempDir(), "ck")
	if err := b.Save(dir); err != nil {
		t.Fatal(err)
	}
	c := newGridTestNet(t, 99, train) // different init: everything must come from the checkpoint
	if err := c.Load(dir); err != nil {
		t.Fatal(err)
	}
	st := c.TrainState()
	if c.Version() != N || st.ConfigVersion != 4 || st.DataPosition != 123 {
		t.Fatalf("restored version %d state %+v", c.Version(), st)
	}
	pc := &rand.PCG{}
	if err := pc.UnmarshalBinary(st.RNGState); err != nil {
		t.Fatal(err)
	}
	run(c, pc, M)
	wa, wc := gridWeights(t, a), gridWeights(t, c)
	if !slices.Equal(wa, wc) {
		for i := range wa {
			if wa[i] != wc[i] {
				t.Fatalf("weight %d: uninterrupted %v, resumed %v", i, wa[i], wc[i])
			}
		}
	}
	if a.Version() != c.Version() {
		t.Fatalf("versions %d vs %d", a.Version(), c.Version())
	}
}

func TestGridNetLoadRejectsCorruptAndMismatch(t *testing.T) {
	rng := rand.New(rand.NewPCG(testseed.Get(t, 62), 5))
	train := learner.DefaultGRPOConfig()
	src := newGridTestNet(t, 8, train)
	b, _ := gridRollout(t, src, rng, 2, train.GroupSize)
	if _, err := src.Update(b); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "ck")
	if err := src.Save(dir); err != nil {
		t.Fatal(err)
	}
	dst := newGridTestNet(t, 9, train)
	before := gridWeights(t, dst)
	unchanged := func(what string) {
		t.Helper()
		if !slices.Equal(before, gridWeights(t, dst)) || dst.Version() != 0 {
			t.Fatalf("%s: model changed by a failed Load", what)
		}
	}

	// Flip one byte of the weights: sha256 mismatch.
	corrupt := filepath.Join(t.TempDir(), "corrupt")
	lrnCopyDir(t, dir, corrupt)
	p := filepath.Join(corrupt, learner.CheckpointWeightsFile)
	data, _ := os.ReadFile(p)
	data[len(data)-3] ^= 0x40
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := dst.Load(corrupt); !errors.Is(err, learner.ErrCorruptCheckpoint) {
		t.Fatalf("flipped byte: got %v", err)
	}
	unchanged("flipped byte")
	// Truncated optimizer file.
	lrnCopyDir(t, dir, corrupt)
	if err := os.Truncate(filepath.Join(corrupt, learner.CheckpointOptimizerFile), 100); err != nil {
		t.Fatal(err)
	}
	if err := dst.Load(corrupt); !errors.Is(err, learner.ErrCorruptCheckpoint) {
		t.Fatalf("truncated: got %v", err)
	}
	unchanged("truncated")
	if err := dst.Load(filepath.Join(t.TempDir(), "missing")); !errors.Is(err, learner.ErrCorruptCheckpoint) {
		t.Fatalf("missing: got %v", err)
	}

	// Architecture mismatch: a different hidden size.
	other, err := New(testBackend(t), gridnet.Config{ObsSize: gridObs, Hidden: []int{16}, Seed: 1}, train)
	if err != nil {
		t.Fatal(err)
	}
	if err := other.Load(dir); !errors.Is(err, learner.ErrCheckpointMismatch) {
		t.Fatalf("hidden mismatch: got %v", err)
	}
	// Manifest claiming the right architecture over tensors of the wrong shape (a consistent,
	// checksummed checkpoint): shapes are checked before any variable changes.
	ck, err := learner.ReadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	ck.Weights[len(ck.Weights)-1] = safetensors.F32Tensor(ck.Weights[len(ck.Weights)-1].Name, []int{3}, []float32{1, 2, 3})
	bad := filepath.Join(t.TempDir(), "badshape")
	if err := learner.WriteCheckpoint(bad, ck); err != nil {
		t.Fatal(err)
	}
	if err := dst.Load(bad); !errors.Is(err, learner.ErrCheckpointMismatch) {
		t.Fatalf("bad shape: got %v", err)
	}
	unchanged("bad shape")

	// And the good checkpoint loads, replacing the weights.
	if err := dst.Load(dir); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gridWeights(t, src), gridWeights(t, dst)) || dst.Version() != 1 {
		t.Fatal("loaded weights differ from the saved ones")
	}
	// Saving over an existing checkpoint replaces it atomically.
	if err := dst.Save(dir); err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("leftover temporary directories: %v", entries)
	}
}

func lrnCopyDir(t *testing.T, src, dst string) {
	t.Helper()
	_ = os.RemoveAll(dst)
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func BenchmarkGridNetAct(b *testing.B) {
	for _, n := range []int{64, 256} {
		b.Run(map[int]string{64: "batch64", 256: "batch256"}[n], func(b *testing.B) {
			g := newGridBenchNet(b)
			rng := rand.New(rand.NewPCG(1, 1))
			obs, legal, _ := gridTask(rng, n)
			acts, lps := make([]int32, n), make([]float32, n)
			if err := g.Act(obs, n, legal, 1, rng, acts, lps); err != nil { // compile
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if err := g.Act(obs, n, legal, 1, rng, acts, lps); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "decisions/s")
		})
	}
}

func BenchmarkGridNetUpdate(b *testing.B) {
	g := newGridBenchNet(b)
	rng := rand.New(rand.NewPCG(1, 1))
	batch, _ := gridRollout(b, g, rng, 8, 8)   // 256 decisions
	if _, err := g.Update(batch); err != nil { // compile
		b.Fatal(err)
	}
	b.ResetTimer()
	for range b.N {
		if _, err := g.Update(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(batch.N*b.N)/b.Elapsed().Seconds(), "decisions/s")
}

// newGridBenchNet is the default-size gridnet (2×128 hidden) on a larger observation.
func newGridBenchNet(b *testing.B) *Net {
	g, err := New(testBackend(b), gridnet.Config{ObsSize: gridObs, Hidden: []int{128, 128}, Seed: 1}, learner.DefaultGRPOConfig())
	if err != nil {
		b.Fatal(err)
	}
	return g
}

// TestRegistered: importing the package registers Net with gridnet.New (which builds one on
// the device it is given), and a second registration is a programming error.
func TestRegistered(t *testing.T) {
	m, err := gridnet.New("cpu", gridnet.Config{ObsSize: 6, Hidden: []int{4}, Seed: 2}, learner.DefaultGRPOConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := m.(*Net); !ok || m.ObsSize() != 6 {
		t.Fatalf("gridnet.New built %T with obs %d, want a *Net of 6", m, m.ObsSize())
	}
	if _, err := gridnet.New("tpu", gridnet.Config{ObsSize: 6}, learner.DefaultGRPOConfig()); !errors.Is(err, learner.ErrBadDevice) {
		t.Fatalf("device tpu: %v, want ErrBadDevice", err)
	}
	defer func() {
		if recover() == nil {
			t.Error("a second gridnet.Register did not panic")
		}
	}()
	gridnet.Register(func(string, gridnet.Config, learner.GRPOConfig) (gridnet.Model, error) { return nil, nil })
}
