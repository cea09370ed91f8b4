package textpolicy

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// TestCheckpointRoundTrip: SaveCheckpoint then LoadCheckpoint into a policy over other weights
// restores the weights, version, schedule and data position; a corrupted file is refused and
// changes nothing.
func TestCheckpointRoundTrip(t *testing.T) {
	seed := tpTestSeed(t)
	src, err := New(tpLM(t, seed), tpOptions())
	if err != nil {
		t.Fatal(err)
	}
	src.version.Store(7)
	src.SetSchedule(env.LengthSchedule{EMA: 0.25, Initialized: true})
	dir := filepath.Join(t.TempDir(), "stage-003")
	if err := src.SaveCheckpoint(dir, 4); err != nil {
		t.Fatal(err)
	}
	if err := src.SaveCheckpoint(dir, 4); err != nil { // replacing an existing one
		t.Fatal(err)
	}
	dst, err := New(tpLM(t, seed+1), tpOptions())
	if err != nil {
		t.Fatal(err)
	}
	seqs := [][]int32{{1, 2, 3, 4, 5}}
	before, err := dst.lm.Model.Logits(seqs)
	if err != nil {
		t.Fatal(err)
	}
	// Corrupt the weights: refused before anything changes.
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.CopyFS(bad, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	w := filepath.Join(bad, "model.safetensors")
	b, err := os.ReadFile(w)
	if err != nil {
		t.Fatal(err)
	}
	b[len(b)-1] ^= 0xff
	if err := os.WriteFile(w, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.LoadCheckpoint(bad); !errors.Is(err, learner.ErrCorruptCheckpoint) {
		t.Fatalf("corrupt checkpoint: %v, want ErrCorruptCheckpoint", err)
	}
	// The other kind: an SFT checkpoint counts steps, a training run's stages.
	sft := filepath.Join(t.TempDir(), "sft")
	if err := src.SaveSFTCheckpoint(sft, 9); err != nil {
		t.Fatal(err)
	}
	if _, err := dst.LoadCheckpoint(sft); !errors.Is(err, learner.ErrCheckpointMismatch) {
		t.Fatalf("an SFT checkpoint as a training run's: %v, want ErrCheckpointMismatch", err)
	}
	if _, err := dst.LoadSFTCheckpoint(dir); !errors.Is(err, learner.ErrCheckpointMismatch) {
		t.Fatalf("a training run's checkpoint as an SFT one: %v, want ErrCheckpointMismatch", err)
	}
	after, _ := dst.lm.Model.Logits(seqs)
	if dst.Version() != 0 || after[0][0] != before[0][0] {
		t.Fatal("a refused checkpoint changed the policy")
	}
	pos, err := dst.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := src.lm.Model.Logits(seqs)
	got, _ := dst.lm.Model.Logits(seqs)
	for i := range want[0] {
		if want[0][i] != got[0][i] {
			t.Fatalf("logit %d: %v after loading, %v saved", i, got[0][i], want[0][i])
		}
	}
	if pos != 4 || dst.Version() != 7 || dst.Schedule() != src.Schedule() {
		t.Fatalf("restored position %d, version %d, schedule %+v", pos, dst.Version(), dst.Schedule())
	}
	if step, err := dst.LoadSFTCheckpoint(sft); err != nil || step != 9 {
		t.Fatalf("LoadSFTCheckpoint: step %d, %v; want 9", step, err)
	}
}
