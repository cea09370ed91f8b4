package engine

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// OptimizerStater is a Model whose optimizer state (AdamW's moments and step count) can be
// written to a file beside a checkpoint's weights and read back, so that a resumed run
// continues as if uninterrupted. Both engines implement it, with one file layout:
// OptimizerFile, a safetensors file whose float32 tensors "NAME.exp_avg" and "NAME.exp_avg_sq"
// hold the moments of each trainable parameter (Hugging Face names; LoRA adapters as
// "….q_proj.lora_A"/"lora_B"), and whose metadata holds "format" (OptimizerFormat), "step"
// (AdamW's step, used by its bias correction) and "steps" (the model's optimizer steps, as
// UpdateStats.Step counts them).
//
// LoadOptimizer fits the state to the trainable parameters as they are now (after Reload,
// AddLoRA or LoadAdapter) and after the last SetTrainConfig that changes more than the
// learning rate (such a change starts the optimizer afresh). A file that is not one, or whose
// tensors do not fit the parameters, is an error wrapping learner.ErrCheckpointMismatch and
// changes nothing.
type OptimizerStater interface {
	SaveOptimizer(path string) error
	LoadOptimizer(path string) error
}

// OptimizerFile is the file name of the optimizer state in a checkpoint directory (the
// gridnet checkpoints' learner.CheckpointOptimizerFile is the same name).
const OptimizerFile = learner.CheckpointOptimizerFile

// OptimizerFormat is the "format" metadata of an OptimizerStater file.
const OptimizerFormat = "t2t-adamw-1"

// CheckOptimizerFile checks, without changing anything, that the OptimizerStater file at path
// fits full fine-tuning of a model of cfg: its format and step fields, and either no tensors
// (step 0) or exactly the two float32 moments of every weight (hfmodel.Config.WeightSpecs) with
// the weight's shape. It returns the "steps" field. Errors wrap learner.ErrCheckpointMismatch.
// Resuming calls it before anything is replaced, so that a file that does not fit leaves the
// model as it was.
func CheckOptimizerFile(path string, cfg hfmodel.Config) (int64, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return 0, fmt.Errorf("%w: optimizer state: %w", learner.ErrCheckpointMismatch, err)
	}
	defer f.Close()
	if f.Metadata["format"] != OptimizerFormat {
		return 0, fmt.Errorf("%w: optimizer state %s: format %q, want %q", learner.ErrCheckpointMismatch, path, f.Metadata["format"], OptimizerFormat)
	}
	step, err1 := strconv.ParseInt(f.Metadata["step"], 10, 64)
	steps, err2 := strconv.ParseInt(f.Metadata["steps"], 10, 64)
	if err1 != nil || err2 != nil || step < 0 || steps < 0 || (step == 0) != (len(f.Tensors) == 0) {
		return 0, fmt.Errorf("%w: optimizer state %s: step %q, steps %q with %d tensors", learner.ErrCheckpointMismatch, path, f.Metadata["step"], f.Metadata["steps"], len(f.Tensors))
	}
	if step == 0 {
		return steps, nil
	}
	want := map[string][]int{}
	for _, s := range cfg.WeightSpecs() {
		want[s.Name+".exp_avg"], want[s.Name+".exp_avg_sq"] = s.Shape, s.Shape
	}
	names := f.Names()
	for _, n := range names {
		shape, ok := want[n]
		switch info := f.Tensors[n]; {
		case !ok:
			return 0, fmt.Errorf("%w: optimizer state %s: unexpected tensor %s (not a weight of the model)", learner.ErrCheckpointMismatch, path, n)
		case info.DType != safetensors.F32 || !slices.Equal(info.Shape, shape):
			return 0, fmt.Errorf("%w: optimizer state %s: %s is %s %v, want F32 %v", learner.ErrCheckpointMismatch, path, n, info.DType, info.Shape, shape)
		}
	}
	for _, s := range cfg.WeightSpecs() {
		for _, n := range []string{s.Name + ".exp_avg", s.Name + ".exp_avg_sq"} {
			if _, ok := f.Tensors[n]; !ok {
				return 0, fmt.Errorf("%w: optimizer state %s: missing tensor %s", learner.ErrCheckpointMismatch, path, n)
			}
		}
	}
	return steps, nil
}
