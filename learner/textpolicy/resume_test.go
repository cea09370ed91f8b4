package textpolicy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
	"github.com/t2t-lab/t2t/learner/torch"
)

// rsModelDir writes a tiny random Qwen3 with the tiny tokenizer as a Hugging Face directory.
func rsModelDir(t *testing.T, seed uint64) string {
	t.Helper()
	js, err := TinyTokenizerJSON(DefaultTinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	tokPath := filepath.Join(t.TempDir(), "tokenizer.json")
	if err := os.WriteFile(tokPath, js, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := hfmodel.Preset(hfmodel.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "model")
	if _, err := hfmodel.WriteRandomCheckpoint(dir, cfg, seed, tokPath); err != nil {
		t.Fatal(err)
	}
	return dir
}

// rsEngineModel returns the test seed, kind's engine spec and a tiny random model directory
// (rsModelDir). It skips t when kind is the torch engine and no Python with torch is found (it
// fails instead under T2T_REQUIRE_TORCH=1).
func rsEngineModel(t *testing.T, kind string) (uint64, engine.Spec, string) {
	t.Helper()
	if kind == engine.Torch {
		if _, err := torch.FindPython(context.Background(), ""); err != nil {
			if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
				t.Fatalf("T2T_REQUIRE_TORCH=1 but %v", err)
			}
			t.Skipf("skipping: %v", err)
		}
	}
	seed := tpTestSeed(t)
	return seed, engine.Spec{Kind: kind, Log: func(l string) { t.Log("worker: " + l) }}, rsModelDir(t, seed)
}

// rsPolicy opens dir on spec's engine as a text policy (closed at the test's end).
func rsPolicy(t *testing.T, spec engine.Spec, dir string) *Policy {
	t.Helper()
	lm, err := OpenLM(context.Background(), spec, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lm.Close() })
	o := tpOptions()
	o.GRPO.LR, o.GRPO.WeightDecay, o.GRPO.MicroBatch = 1e-2, 0.01, 2
	p, err := New(lm, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// rsGroups builds GRPO groups of random completions with unequal rewards (every group trains).
func rsGroups(t *testing.T, seed uint64, vocab int) []learner.ReplayedGroup {
	rng := rand.New(rand.NewPCG(seed, 5))
	ins := tpInstances(t, seed, 2)
	groups := make([]learner.ReplayedGroup, len(ins))
	for i, in := range ins {
		groups[i].Instance = in
		for e := range 3 {
			n := 2 + rng.IntN(4)
			acts, lps := make([]int32, n), make([]float32, n)
			for k := range n {
				acts[k], lps[k] = int32(rng.IntN(vocab)), -float32(1+rng.Float64())
			}
			groups[i].Actions = append(groups[i].Actions, acts)
			groups[i].LogProbs = append(groups[i].LogProbs, lps)
			groups[i].Rewards = append(groups[i].Rewards, float32(e))
		}
	}
	return groups
}

func rsUpdates(t *testing.T, p *Policy, groups []learner.ReplayedGroup, n int) {
	t.Helper()
	for range n {
		if _, _, err := p.Update(groups); err != nil {
			t.Fatal(err)
		}
	}
}

// rsWeights returns the policy's weights as model.safetensors bytes.
func rsWeights(t *testing.T, p *Policy) []byte {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "w")
	if err := p.Save(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// rsRewriteManifest copies the checkpoint src to a new directory, lets edit change its files,
// and records their new SHA-256 (or drops a removed one) in the manifest: a well-formed
// checkpoint with other contents.
func rsRewriteManifest(t *testing.T, src string, edit func(dir string)) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "edited")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	edit(dst)
	js, err := os.ReadFile(filepath.Join(dst, learner.CheckpointManifestFile))
	if err != nil {
		t.Fatal(err)
	}
	var man map[string]any
	if err := json.Unmarshal(js, &man); err != nil {
		t.Fatal(err)
	}
	files := man["files"].(map[string]any)
	for name := range files {
		sum, err := fsutil.FileSHA256(filepath.Join(dst, name))
		if errors.Is(err, os.ErrNotExist) {
			delete(files, name)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		files[name] = sum
	}
	if js, err = json.Marshal(man); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dst, learner.CheckpointManifestFile), js, 0o644); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestResumeContinuesBitExactly: on each engine, 2 GRPO updates, SaveCheckpoint (weights and
// the AdamW state), a fresh model from the original directory, LoadCheckpoint and 2 more
// updates end with the weights of 4 uninterrupted updates, bit for bit. An optimizer file that
// does not fit the model is refused as ErrCheckpointMismatch before anything changes; a
// checkpoint without one (as written before t2t saved it) loads and restarts AdamW's moments,
// so its 2 more updates end elsewhere.
func TestResumeContinuesBitExactly(t *testing.T) {
	for _, kind := range []string{engine.GoMLX, engine.Torch} {
		t.Run(kind, func(t *testing.T) {
			seed, spec, dir := rsEngineModel(t, kind)

			full := rsPolicy(t, spec, dir)
			groups := rsGroups(t, seed, full.LM().Model.Config().VocabSize)
			rsUpdates(t, full, groups, 4)
			want := rsWeights(t, full)

			half := rsPolicy(t, spec, dir)
			rsUpdates(t, half, groups, 2)
			ck := filepath.Join(t.TempDir(), "stage-001")
			if err := half.SaveCheckpoint(ck, 2); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Stat(filepath.Join(ck, engine.OptimizerFile)); err != nil {
				t.Fatalf("the checkpoint has no optimizer state: %v", err)
			}

			resumed := rsPolicy(t, spec, dir)
			before := rsWeights(t, resumed)
			bad := rsRewriteManifest(t, ck, func(d string) {
				meta := map[string]string{"format": engine.OptimizerFormat, "step": "2", "steps": "2"}
				ts := []safetensors.Tensor{safetensors.F32Tensor(hfmodel.NameEmbed+".exp_avg", []int{1}, []float32{0})}
				if err := safetensors.WriteFile(filepath.Join(d, engine.OptimizerFile), ts, meta); err != nil {
					t.Fatal(err)
				}
			})
			if _, err := resumed.LoadCheckpoint(bad); !errors.Is(err, learner.ErrCheckpointMismatch) {
				t.Fatalf("mismatched optimizer file: %v, want ErrCheckpointMismatch", err)
			}
			if resumed.Version() != 0 || !bytes.Equal(rsWeights(t, resumed), before) {
				t.Fatal("a refused checkpoint changed the policy")
			}
			if pos, err := resumed.LoadCheckpoint(ck); err != nil || pos != 2 || resumed.Version() != 2 {
				t.Fatalf("LoadCheckpoint: position %d, version %d, %v", pos, resumed.Version(), err)
			}
			rsUpdates(t, resumed, groups, 2)
			if !bytes.Equal(rsWeights(t, resumed), want) {
				t.Fatal("resumed after 2 updates: weights differ from 4 uninterrupted updates'")
			}

			if kind == engine.Torch {
				return // the old-checkpoint path is the engines' shared code; one engine shows it
			}
			old := rsRewriteManifest(t, ck, func(d string) {
				if err := os.Remove(filepath.Join(d, engine.OptimizerFile)); err != nil {
					t.Fatal(err)
				}
			})
			fresh := rsPolicy(t, spec, dir)
			if _, err := fresh.LoadCheckpoint(old); err != nil {
				t.Fatal(err)
			}
			rsUpdates(t, fresh, groups, 2)
			if bytes.Equal(rsWeights(t, fresh), want) {
				t.Fatal("a checkpoint without optimizer state resumed with the saved moments")
			}
		})
	}
}

// rsWeightDiff is the largest |difference| between the float32 weights of two policies.
func rsWeightDiff(t *testing.T, a, b *Policy) float64 {
	t.Helper()
	read := func(p *Policy) map[string][]float32 {
		dir := filepath.Join(t.TempDir(), "w")
		if err := p.Save(dir); err != nil {
			t.Fatal(err)
		}
		ts, _, err := safetensors.ReadFile(filepath.Join(dir, "model.safetensors"))
		if err != nil {
			t.Fatal(err)
		}
		out := map[string][]float32{}
		for _, x := range ts {
			if out[x.Name], err = x.Float32(nil); err != nil {
				t.Fatal(err)
			}
		}
		return out
	}
	wa, wb := read(a), read(b)
	var d float64
	for n, xa := range wa {
		xb := wb[n]
		if len(xb) != len(xa) {
			t.Fatalf("weight %s: %d and %d values", n, len(xa), len(xb))
		}
		for i := range xa {
			d = max(d, math.Abs(float64(xa[i])-float64(xb[i])))
		}
	}
	return d
}

// TestResumeAcrossEngines: the optimizer file means the same on both engines. 2 updates on
// torch, a checkpoint, the gomlx engine loads it and takes 2 more: its weights are those of 4
// torch updates within the engines' parity tolerance (1e-4), while resuming the same
// checkpoint without its optimizer file ends more than 10 times that far away.
func TestResumeAcrossEngines(t *testing.T) {
	if _, err := torch.FindPython(context.Background(), ""); err != nil {
		if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
			t.Fatalf("T2T_REQUIRE_TORCH=1 but %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
	seed := tpTestSeed(t)
	th := engine.Spec{Kind: engine.Torch, Log: func(l string) { t.Log("worker: " + l) }}
	dir := rsModelDir(t, seed)
	full := rsPolicy(t, th, dir)
	groups := rsGroups(t, seed, full.LM().Model.Config().VocabSize)
	rsUpdates(t, full, groups, 4)
	half := rsPolicy(t, th, dir)
	rsUpdates(t, half, groups, 2)
	ck := filepath.Join(t.TempDir(), "stage-001")
	if err := half.SaveCheckpoint(ck, 2); err != nil {
		t.Fatal(err)
	}
	resume := func(ck string) float64 {
		p := rsPolicy(t, engine.Spec{Kind: engine.GoMLX}, dir)
		if _, err := p.LoadCheckpoint(ck); err != nil {
			t.Fatal(err)
		}
		rsUpdates(t, p, groups, 2)
		return rsWeightDiff(t, p, full)
	}
	with := resume(ck)
	without := resume(rsRewriteManifest(t, ck, func(d string) {
		if err := os.Remove(filepath.Join(d, engine.OptimizerFile)); err != nil {
			t.Fatal(err)
		}
	}))
	t.Logf("gomlx resumed from torch: max |Δw| %.3g with the optimizer file, %.3g without", with, without)
	if with > 1e-4 || without < 1e-3 {
		t.Fatalf("max |Δw| from 4 torch updates: %.3g resumed with the optimizer state (want ≤ 1e-4), %.3g without (want ≥ 1e-3)", with, without)
	}
}
