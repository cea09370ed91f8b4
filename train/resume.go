package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Resuming a run (Options.Resume).
//
// After each stage s the run evaluates the policy, saves a checkpoint into
// CheckpointDir/stage-<s> and indexes it in Redis (store.PutCheckpoint:
// version, Step = s, path, sha256 of the manifest); only then does it ask
// the engineer for the config of stage s+1 and record it (PutConfig). A
// process killed at any point leaves one of:
//
//   - no checkpoint record for s: the run resumes after s-1 and plays stage
//     s again (from its start);
//   - the record for s, no config for s+1: the resume proposes it again
//     (the strategies are functions of the history in Redis; an LLM's
//     attempts already recorded are kept);
//   - both: the resume plays stage s+1 from its start.
//
// Stage s+1 is played from its start with the same unit ids and seeds
// (actors.SystemConfig.FirstStage): Redis applies each unit's outcome
// once (store.RecordUnit), so the units the killed process recorded are
// not counted again, and their groups reach the new learner as before. In
// a deterministic run (Options.Deterministic) every unit samples the same
// weights as in an uninterrupted run and the learner sees the same
// batches, so the resumed run ends with the same weights, bit for bit; in
// other runs the stage is replayed with whatever timing the new process
// has.

// ErrResume marks a run that cannot be resumed: no checkpoint indexed in
// Redis, a checkpoint that does not match its record, or a config history
// that does not fit the options.
var ErrResume = errors.New("train: cannot resume")

// validateModes checks the options of the deterministic and resume modes.
func (o *Options) validateModes() error {
	if o.Deterministic {
		switch {
		case o.Cluster.Listen != "" || o.Cluster.RemoteOnly:
			return &fielderr.Error{Kind: ErrOptions, Flag: "deterministic", Value: true, Reason: "a deterministic run plays every unit in this process: no cluster.listen"}
		case o.Config.Instances%o.InstancesPerUnit != 0:
			return &fielderr.Error{Kind: ErrOptions, Flag: "instances-per-unit", Value: o.InstancesPerUnit, Reason: fmt.Sprintf("a deterministic run needs it to divide config.instances (%d)", o.Config.Instances)}
		case o.Config.Instances%o.LearnerBatch != 0:
			return &fielderr.Error{Kind: ErrOptions, Flag: "learner-batch", Value: o.LearnerBatch, Reason: fmt.Sprintf("a deterministic run needs it to divide config.instances (%d): a stage's groups must fill whole batches", o.Config.Instances)}
		}
	}
	if o.Resume && o.CheckpointDir == "" {
		return &fielderr.Error{Kind: ErrOptions, Flag: "checkpoint-dir", Value: `""`, Reason: "resuming needs the checkpoint folder"}
	}
	return nil
}

// Checkpointer is a policy a run checkpoints after every stage and resumes from: gridnet
// (GridPolicy) and the text policy (textpolicy.Policy). Both write a directory whose
// learner.CheckpointManifestFile holds the SHA-256 of its files; the run indexes the manifest's
// own SHA-256 in Redis.
type Checkpointer interface {
	Policy
	// SaveCheckpoint writes the policy into dir atomically, with dataPosition (the next stage).
	SaveCheckpoint(dir string, dataPosition int64) error
	// LoadCheckpoint restores dir (the policy is unchanged on error) and returns its data
	// position.
	LoadCheckpoint(dir string) (int64, error)
}

// SaveCheckpoint implements Checkpointer.
func (p *GridPolicy) SaveCheckpoint(dir string, dataPosition int64) error {
	p.Net.SetTrainState(gridnet.TrainState{DataPosition: dataPosition})
	return p.Net.Save(dir)
}

// LoadCheckpoint implements Checkpointer.
func (p *GridPolicy) LoadCheckpoint(dir string) (int64, error) {
	if err := p.Net.Load(dir); err != nil {
		return 0, err
	}
	return p.Net.TrainState().DataPosition, nil
}

var _ Checkpointer = (*textpolicy.Policy)(nil)

// saveCheckpoint writes cp into CheckpointDir/stage-<stage> and indexes it.
// Records are keyed by policy version: when the policy did not change since
// an earlier stage's checkpoint (no update in this stage), that record is
// left as it is, and a resume starts from the earlier stage.
func (r *run) saveCheckpoint(ctx context.Context, cp Checkpointer, stage int) error {
	dir, err := filepath.Abs(filepath.Join(r.opt.CheckpointDir, fmt.Sprintf("stage-%03d", stage)))
	if err != nil {
		return err
	}
	if err := cp.SaveCheckpoint(dir, int64(stage+1)); err != nil {
		return err
	}
	rec := store.CheckpointRecord{Version: cp.Version(), Step: int64(stage), Path: dir, ConfigVersion: r.configs[stage].Hash()}
	err = r.putCheckpoint(ctx, dir, rec) // state.go: with the manifest's SHA-256
	if !errors.Is(err, store.ErrConflict) {
		return err
	}
	all, lerr := r.st.Checkpoints(ctx, r.opt.RunID)
	if lerr != nil {
		return errors.Join(err, lerr)
	}
	for _, c := range all {
		if c.Version == rec.Version && c.Step < rec.Step {
			r.opt.Logger.Warn("train: policy unchanged since an earlier checkpoint; that one stays indexed",
				"stage", stage, "version", rec.Version, "indexed_stage", c.Step)
			return nil
		}
	}
	return err
}

// resume loads the run's latest indexed checkpoint (after stage s) into
// the policy, fills r.configs with the configs of stages 0..s (and s+1 when
// it was recorded) and returns s.
func (r *run) resume(ctx context.Context) (int, error) {
	cp, ok := r.pol.(Checkpointer)
	if !ok {
		return 0, &fielderr.Error{Kind: ErrOptions, Flag: "resume", Value: r.pol.Name(), Reason: "only gridnet and qwen3 policies are checkpointed"}
	}
	id := r.opt.RunID
	rec, ok, err := r.st.LatestCheckpoint(ctx, id)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("%w: run %s has no checkpoint indexed in Redis %s (an embedded or fresh Redis has none)", ErrResume, id, r.st.URL())
	}
	after := int(rec.Step)
	if after < 0 || after >= r.opt.Stages {
		return 0, fmt.Errorf("%w: run %s's latest checkpoint is after stage %d; the run has %d stages", ErrResume, id, after, r.opt.Stages)
	}
	sum, err := fsutil.FileSHA256(filepath.Join(rec.Path, learner.CheckpointManifestFile))
	if err != nil {
		return 0, fmt.Errorf("%w: checkpoint after stage %d: %w", ErrResume, after, err)
	}
	if sum != rec.SHA256 {
		return 0, fmt.Errorf("%w: checkpoint %s has manifest sha256 %s, Redis indexed %s", ErrResume, rec.Path, sum, rec.SHA256)
	}
	pos, err := cp.LoadCheckpoint(rec.Path)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrResume, err)
	}
	if v := cp.Version(); v != rec.Version || pos != int64(after+1) {
		return 0, fmt.Errorf("%w: checkpoint %s holds version %d after stage %d, Redis indexed version %d after stage %d",
			ErrResume, rec.Path, v, pos-1, rec.Version, after)
	}
	recs, err := r.st.Configs(ctx, id)
	if err != nil {
		return 0, err
	}
	byStage := map[int]store.ConfigRecord{}
	for _, c := range recs {
		byStage[c.Stage] = c
	}
	for stage := 0; stage <= after+1 && stage < r.opt.Stages; stage++ {
		c, ok := byStage[stage]
		if !ok {
			if stage <= after {
				return 0, fmt.Errorf("%w: run %s has no config record for stage %d", ErrResume, id, stage)
			}
			break
		}
		var cfg env.Config
		if err := json.Unmarshal(c.JSON, &cfg); err != nil {
			return 0, fmt.Errorf("%w: config of stage %d: %w", ErrResume, stage, err)
		}
		if cfg.Hash() != c.Version {
			return 0, fmt.Errorf("%w: config of stage %d hashes to %s, recorded as %s", ErrResume, stage, cfg.Hash(), c.Version)
		}
		if stage == 0 && c.Version != r.opt.Config.Hash() {
			return 0, fmt.Errorf("%w: run %s began with config %s, these options give %s: resume with the interrupted run's flags", ErrResume, id, c.Version, r.opt.Config.Hash())
		}
		r.configs[stage] = cfg
	}
	fmt.Fprintf(r.opt.Out, "resuming run %s after stage %d (policy version %d)\n", id, after, cp.Version())
	noteFreshOptimizer(r.opt.Out, rec.Path)
	return after, nil
}

// noteFreshOptimizer writes one line to w when the checkpoint dir holds no optimizer state (a
// text-policy checkpoint written before t2t saved it: the resumed run restarts AdamW's moments).
func noteFreshOptimizer(w io.Writer, dir string) {
	if _, err := os.Stat(filepath.Join(dir, learner.CheckpointOptimizerFile)); errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "checkpoint %s holds no optimizer state (written before t2t saved it): AdamW restarts with fresh moments\n", dir)
	}
}
