package textpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
)

// checkpointFormat names the manifest layout of SaveCheckpoint.
const checkpointFormat = "t2t-textpolicy-1"

// kindSFT is the manifest kind of SaveSFTCheckpoint, whose data position counts SFT steps
// (a training run's counts stages).
const kindSFT = "sft"

// checkpointManifest is the manifest.json of a text-policy checkpoint: the policy's state
// beside the Hugging Face files, and their SHA-256.
type checkpointManifest struct {
	Format       string             `json:"format"`
	Kind         string             `json:"kind,omitempty"` // "" (a training run's) or kindSFT
	Model        string             `json:"model"`          // "qwen3"
	Engine       string             `json:"engine"`
	Version      int64              `json:"policy_version"`
	DataPosition int64              `json:"data_position"`
	Schedule     env.LengthSchedule `json:"length_schedule"`
	Files        map[string]string  `json:"files"` // file name → sha256 (hex)
}

// SaveCheckpoint writes the policy into dir atomically: a Hugging Face directory (config,
// float32 weights, tokenizer files; any engine and transformers load it) plus
// learner.CheckpointManifestFile with the policy version, dataPosition (the caller's place in
// its data, e.g. the next stage) and the length schedule, and the SHA-256 of every file
// (learner.ReplaceDir: a temporary sibling directory renamed over dir). When the engine keeps
// its optimizer state in a file (engine.OptimizerStater: both engines do), AdamW's moments and
// step are saved beside the weights as engine.OptimizerFile, so that LoadCheckpoint continues
// exactly where the run stopped.
func (p *Policy) SaveCheckpoint(dir string, dataPosition int64) error {
	return p.saveCheckpoint(dir, "", dataPosition)
}

// SaveSFTCheckpoint is SaveCheckpoint for supervised fine-tuning after step steps: the
// manifest says so (kind "sft"), and LoadSFTCheckpoint continues it.
func (p *Policy) SaveSFTCheckpoint(dir string, step int) error {
	return p.saveCheckpoint(dir, kindSFT, int64(step))
}

func (p *Policy) saveCheckpoint(dir, kind string, dataPosition int64) error {
	return fsutil.ReplaceDir(dir, func(tmp string) error {
		if err := p.Save(tmp); err != nil { // each file written through a synced temporary
			return err
		}
		if ost, ok := p.lm.Model.(engine.OptimizerStater); ok {
			if err := p.lm.Exclusive(func() error { return ost.SaveOptimizer(filepath.Join(tmp, engine.OptimizerFile)) }); err != nil {
				return err
			}
		}
		man := checkpointManifest{Format: checkpointFormat, Kind: kind, Model: "qwen3", Engine: p.lm.Model.Engine(),
			Version: p.Version(), DataPosition: dataPosition, Schedule: p.Schedule(), Files: map[string]string{}}
		entries, err := os.ReadDir(tmp)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if man.Files[e.Name()], err = fsutil.FileSHA256(filepath.Join(tmp, e.Name())); err != nil {
				return err
			}
		}
		js, err := json.MarshalIndent(man, "", "  ")
		if err != nil {
			return err
		}
		return fsutil.WriteFileSynced(filepath.Join(tmp, learner.CheckpointManifestFile), append(js, '\n'))
	})
}

// LoadCheckpoint restores a SaveCheckpoint directory: every file is checked against the
// manifest's SHA-256 first (an error wrapping learner.ErrCorruptCheckpoint names the first that
// differs or is missing; the policy is unchanged), and an optimizer file against the model's
// weights (engine.CheckOptimizerFile: learner.ErrCheckpointMismatch, unchanged). Then the
// weights replace the model's (engine.Model.Reload), the model gets the options' training
// settings and, after them, the optimizer state (a later SetTrainConfig that changed more than
// the learning rate would drop it), and the version and length schedule are restored. A
// checkpoint without an optimizer file (written before t2t saved one) leaves the optimizer as
// the model has it: in a fresh process, AdamW starts with fresh moments. It returns the
// manifest's data position. An SFT checkpoint (SaveSFTCheckpoint) is refused, unchanged, with
// an error wrapping learner.ErrCheckpointMismatch: its position counts steps, not stages.
func (p *Policy) LoadCheckpoint(dir string) (int64, error) {
	return p.loadCheckpoint(dir, "")
}

// LoadSFTCheckpoint restores a SaveSFTCheckpoint directory as LoadCheckpoint does and returns
// the steps it was saved after; a training run's checkpoint is refused, unchanged (an error
// wrapping learner.ErrCheckpointMismatch).
func (p *Policy) LoadSFTCheckpoint(dir string) (int, error) {
	pos, err := p.loadCheckpoint(dir, kindSFT)
	return int(pos), err
}

// ResumeSFT makes o resumable (SFTOptions.Resumable) and, when dir holds a checkpoint (a
// manifest), continues it: LoadSFTCheckpoint into p, and o.StartStep becomes its step. It says
// on w where the run starts, as t2t sft --resume does; a directory without a manifest (a plain
// checkpoint) starts at step 0. A checkpoint saved after more than o.Steps steps is an error.
func (p *Policy) ResumeSFT(w io.Writer, dir string, o *SFTOptions) error {
	o.Resumable = true
	if _, err := os.Stat(filepath.Join(dir, learner.CheckpointManifestFile)); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "resume: %s is not a t2t sft --resume checkpoint: starting at step 0\n", dir)
		return nil
	}
	step, err := p.LoadSFTCheckpoint(dir)
	if err != nil {
		return err
	}
	if step > o.Steps {
		return fmt.Errorf("%s was saved after step %d, beyond --steps %d (the steps of the whole run)", dir, step, o.Steps)
	}
	o.StartStep = step
	fmt.Fprintf(w, "resume: %s was saved after step %d: steps %d..%d now, with its AdamW state\n", dir, step, step+1, o.Steps)
	return nil
}

// readManifest reads dir's manifest and checks its format, its kind (want) and its data
// position; it reads nothing else.
func readManifest(dir, want string) (checkpointManifest, error) {
	var man checkpointManifest
	js, err := limits.ReadFile(filepath.Join(dir, learner.CheckpointManifestFile), limits.Config)
	if err != nil {
		return man, fmt.Errorf("%w: %s: %w", learner.ErrCorruptCheckpoint, dir, err)
	}
	if err := json.Unmarshal(js, &man); err != nil || man.Format != checkpointFormat {
		return man, fmt.Errorf("%w: %s: manifest is not a %s manifest (%v)", learner.ErrCorruptCheckpoint, dir, checkpointFormat, err)
	}
	if man.Kind != want {
		return man, fmt.Errorf("%w: %s is %s, not %s", learner.ErrCheckpointMismatch, dir, kindName(man.Kind), kindName(want))
	}
	if man.DataPosition < 0 {
		return man, fmt.Errorf("%w: %s: data position %d", learner.ErrCorruptCheckpoint, dir, man.DataPosition)
	}
	return man, nil
}

func (p *Policy) loadCheckpoint(dir, kind string) (int64, error) {
	man, err := readManifest(dir, kind)
	if err != nil {
		return 0, err
	}
	names := make([]string, 0, len(man.Files))
	for n := range man.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		sum, err := fsutil.FileSHA256(filepath.Join(dir, n))
		if err != nil {
			return 0, fmt.Errorf("%w: %s: %w", learner.ErrCorruptCheckpoint, dir, err)
		}
		if sum != man.Files[n] {
			return 0, fmt.Errorf("%w: %s: %s has sha256 %s, the manifest says %s", learner.ErrCorruptCheckpoint, dir, n, sum, man.Files[n])
		}
	}
	optPath := filepath.Join(dir, engine.OptimizerFile)
	ost, withOpt := p.lm.Model.(engine.OptimizerStater)
	if _, listed := man.Files[engine.OptimizerFile]; !listed {
		withOpt = false
	}
	if withOpt {
		if _, err := engine.CheckOptimizerFile(optPath, p.lm.Model.Config()); err != nil {
			return 0, fmt.Errorf("%s: %w", dir, err)
		}
	}
	err = p.lm.Exclusive(func() error {
		if err := p.lm.Model.Reload(dir); err != nil {
			return err
		}
		if !withOpt {
			return nil
		}
		p.mu.Lock()
		defer p.mu.Unlock()
		if err := p.lm.Model.SetTrainConfig(p.opt.GRPO); err != nil {
			return err
		}
		p.configured = true
		return ost.LoadOptimizer(optPath)
	})
	if err != nil {
		return 0, err
	}
	p.version.Store(man.Version)
	p.SetSchedule(man.Schedule)
	return man.DataPosition, nil
}

// kindName words a manifest kind for an error.
func kindName(kind string) string {
	if kind == kindSFT {
		return "a t2t sft checkpoint"
	}
	return "a training run's checkpoint"
}
