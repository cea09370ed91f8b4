package textpolicy

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
)

// checkpointFormat names the manifest layout of SaveCheckpoint.
const checkpointFormat = "t2t-textpolicy-1"

// checkpointManifest is the manifest.json of a text-policy checkpoint: the policy's state
// beside the Hugging Face files, and their SHA-256.
type checkpointManifest struct {
	Format       string             `json:"format"`
	Model        string             `json:"model"` // "qwen3"
	Engine       string             `json:"engine"`
	Version      int64              `json:"policy_version"`
	DataPosition int64              `json:"data_position"`
	Schedule     env.LengthSchedule `json:"length_schedule"`
	Files        map[string]string  `json:"files"` // file name → sha256 (hex)
}

// SaveCheckpoint writes the policy into dir atomically: a Hugging Face directory (config,
// float32 weights, tokenizer files; any engine and transformers load it) plus
// learner.CheckpointManifestFile with the policy version, dataPosition (the caller's place in
// its data, e.g. the next stage) and the length schedule, and the SHA-256 of every file. The
// files go to a temporary sibling directory, fsynced, renamed over dir. The optimizer's moments
// are not saved: a resumed run restarts AdamW's statistics.
func (p *Policy) SaveCheckpoint(dir string, dataPosition int64) error {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	if err := p.Save(tmp); err != nil {
		return err
	}
	man := checkpointManifest{Format: checkpointFormat, Model: "qwen3", Engine: p.lm.Model.Engine(),
		Version: p.Version(), DataPosition: dataPosition, Schedule: p.Schedule(), Files: map[string]string{}}
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		sum, err := syncedSum(filepath.Join(tmp, e.Name()))
		if err != nil {
			return err
		}
		man.Files[e.Name()] = sum
	}
	js, err := json.MarshalIndent(man, "", "  ")
	if err != nil {
		return err
	}
	if err := writeSynced(filepath.Join(tmp, learner.CheckpointManifestFile), append(js, '\n')); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	old := ""
	if _, err := os.Stat(dir); err == nil {
		old = dir + ".old"
		_ = os.RemoveAll(old)
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		return err
	}
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return syncDir(parent)
}

// LoadCheckpoint restores a SaveCheckpoint directory: every file is checked against the
// manifest's SHA-256 first (an error wrapping learner.ErrCorruptCheckpoint names the first that
// differs or is missing; the policy is unchanged), then the weights replace the model's
// (engine.Model.Reload) and the version and length schedule are restored. It returns the
// manifest's data position.
func (p *Policy) LoadCheckpoint(dir string) (int64, error) {
	js, err := os.ReadFile(filepath.Join(dir, learner.CheckpointManifestFile))
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", learner.ErrCorruptCheckpoint, dir, err)
	}
	var man checkpointManifest
	if err := json.Unmarshal(js, &man); err != nil || man.Format != checkpointFormat {
		return 0, fmt.Errorf("%w: %s: manifest is not a %s manifest (%v)", learner.ErrCorruptCheckpoint, dir, checkpointFormat, err)
	}
	names := make([]string, 0, len(man.Files))
	for n := range man.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sum, err := syncedSum(filepath.Join(dir, n))
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", learner.ErrCorruptCheckpoint, dir, err)
		}
		if sum != man.Files[n] {
			return 0, fmt.Errorf("%w: %s: %s has sha256 %s, the manifest says %s", learner.ErrCorruptCheckpoint, dir, n, sum, man.Files[n])
		}
	}
	if err := p.lm.Exclusive(func() error { return p.lm.Model.Reload(dir) }); err != nil {
		return 0, err
	}
	p.version.Store(man.Version)
	p.SetSchedule(man.Schedule)
	return man.DataPosition, nil
}

// syncedSum returns a file's SHA-256 after fsyncing it.
func syncedSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return "", err
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func writeSynced(path string, data []byte) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}
