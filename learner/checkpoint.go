package learner

import (
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// A checkpoint is a directory:
//
//	manifest.json          Manifest: format, model kind and config, counters, rng state, sha256 of each file
//	model.safetensors      trainable weights, named by variable path ("gridnet/layer0/w")
//	optimizer.safetensors  optimizer state: Adam moments and step counters
//
// WriteCheckpoint writes it into a temporary sibling directory and renames it into place, so a
// crash never leaves a half-written checkpoint under the final name. ReadCheckpoint verifies
// every checksum before returning anything.

// CheckpointFormat is the manifest's format tag.
const CheckpointFormat = "t2t-checkpoint/1"

// Checkpoint file names.
const (
	CheckpointManifestFile  = "manifest.json"
	CheckpointWeightsFile   = "model.safetensors"
	CheckpointOptimizerFile = "optimizer.safetensors"
)

// Manifest describes a checkpoint.
type Manifest struct {
	Format        string            `json:"format"`
	Model         string            `json:"model"`        // model kind, e.g. "gridnet"
	ModelConfig   json.RawMessage   `json:"model_config"` // the model's config as JSON
	Step          int64             `json:"step"`         // optimizer steps taken
	PolicyVersion int64             `json:"policy_version"`
	ConfigVersion int64             `json:"config_version"`      // environment config version the learner was on
	DataPosition  int64             `json:"data_position"`       // caller's position in its data stream
	RNGState      []byte            `json:"rng_state,omitempty"` // caller's RNG state (e.g. rand.PCG MarshalBinary)
	Files         map[string]string `json:"files"`               // file name → sha256 (hex)
}

// Checkpoint is a checkpoint in memory.
type Checkpoint struct {
	Manifest  Manifest
	Weights   []safetensors.Tensor // model.safetensors
	Optimizer []safetensors.Tensor // optimizer.safetensors
}

// WriteCheckpoint writes ck into dir atomically (ReplaceDir: files fsynced, manifest last). An
// existing dir is replaced. ck.Manifest.Format and Files are filled in.
func WriteCheckpoint(dir string, ck *Checkpoint) error {
	return fsutil.ReplaceDir(dir, func(tmp string) error {
		ck.Manifest.Format = CheckpointFormat
		ck.Manifest.Files = map[string]string{}
		for _, f := range []struct {
			name string
			ts   []safetensors.Tensor
		}{{CheckpointWeightsFile, ck.Weights}, {CheckpointOptimizerFile, ck.Optimizer}} {
			p := filepath.Join(tmp, f.name)
			if err := safetensors.WriteFile(p, f.ts, map[string]string{"format": "pt"}); err != nil {
				return fmt.Errorf("learner: write %s: %w", f.name, err)
			}
			sum, err := fsutil.FileSHA256(p)
			if err != nil {
				return err
			}
			ck.Manifest.Files[f.name] = sum
		}
		js, err := json.MarshalIndent(ck.Manifest, "", "  ")
		if err != nil {
			return err
		}
		return fsutil.WriteFileSynced(filepath.Join(tmp, CheckpointManifestFile), js)
	})
}

// ReadCheckpoint reads the checkpoint in dir. Missing or unreadable files, a manifest over
// limits.Config bytes, bad JSON, checksum mismatches and malformed safetensors give errors
// wrapping ErrCorruptCheckpoint.
func ReadCheckpoint(dir string) (*Checkpoint, error) {
	corrupt := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s: %s", ErrCorruptCheckpoint, dir, fmt.Sprintf(format, args...))
	}
	js, err := limits.ReadFile(filepath.Join(dir, CheckpointManifestFile), limits.Config)
	if err != nil {
		return nil, corrupt("manifest: %v", err)
	}
	ck := &Checkpoint{}
	if err := json.Unmarshal(js, &ck.Manifest); err != nil {
		return nil, corrupt("manifest: %v", err)
	}
	if ck.Manifest.Format != CheckpointFormat {
		return nil, corrupt("format %q, want %q", ck.Manifest.Format, CheckpointFormat)
	}
	for _, name := range []string{CheckpointWeightsFile, CheckpointOptimizerFile} {
		want, ok := ck.Manifest.Files[name]
		if !ok {
			return nil, corrupt("manifest lists no checksum for %s", name)
		}
		p := filepath.Join(dir, name)
		got, err := fsutil.FileSHA256(p)
		if err != nil {
			return nil, corrupt("%s: %v", name, err)
		}
		if got != want {
			return nil, corrupt("%s: sha256 %s, manifest says %s", name, got, want)
		}
		ts, _, err := safetensors.ReadFile(p)
		if err != nil {
			return nil, corrupt("%v", err)
		}
		if name == CheckpointWeightsFile {
			ck.Weights = ts
		} else {
			ck.Optimizer = ts
		}
	}
	return ck, nil
}

// ---- Context variables ↔ checkpoint tensors.
