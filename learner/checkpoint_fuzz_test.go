package learner

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/learner/safetensors"
)

// fuzzSafetensors encodes ts as a safetensors file.
func fuzzSafetensors(f *testing.F, ts []safetensors.Tensor) []byte {
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// FuzzReadCheckpoint: a checkpoint's manifest and weights file never panic
// ReadCheckpoint; a refusal wraps ErrCorruptCheckpoint; what it reads has
// the format it checks. The manifest's "W_SHA" and "O_SHA" are replaced by
// the files' sha256, so that the fuzzer reaches the safetensors behind the
// checksums.
func FuzzReadCheckpoint(f *testing.F) {
	weights := fuzzSafetensors(f, []safetensors.Tensor{safetensors.F32Tensor("gridnet/layer0/w", []int{2, 2}, []float32{1, 2, 3, 4})})
	opt := fuzzSafetensors(f, []safetensors.Tensor{safetensors.F32Tensor("adam/m", []int{1}, []float32{0})})
	man, _ := json.Marshal(Manifest{Format: CheckpointFormat, Model: "gridnet", ModelConfig: json.RawMessage(`{"obs_size":4}`), Step: 3,
		Files: map[string]string{CheckpointWeightsFile: "W_SHA", CheckpointOptimizerFile: "O_SHA"}})
	f.Add(man, weights)
	f.Add(man, weights[:len(weights)-2])
	f.Add(bytes.Replace(man, []byte(`"W_SHA"`), []byte(`"0"`), 1), weights)
	f.Add([]byte(`{"format":"x"}`), weights)
	f.Add([]byte(`{`), []byte(nil))
	f.Fuzz(func(t *testing.T, man, weights []byte) {
		dir := t.TempDir()
		man = bytes.ReplaceAll(man, []byte("W_SHA"), []byte(sha256Hex(weights)))
		man = bytes.ReplaceAll(man, []byte("O_SHA"), []byte(sha256Hex(opt)))
		for name, b := range map[string][]byte{CheckpointManifestFile: man, CheckpointWeightsFile: weights, CheckpointOptimizerFile: opt} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ck, err := ReadCheckpoint(dir)
		if err != nil {
			if !errors.Is(err, ErrCorruptCheckpoint) {
				t.Fatalf("error %v does not wrap ErrCorruptCheckpoint", err)
			}
			return
		}
		if ck.Manifest.Format != CheckpointFormat || len(ck.Optimizer) != 1 {
			t.Fatalf("read %+v", ck.Manifest)
		}
	})
}
