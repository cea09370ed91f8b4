package hfmodel

import (
	"errors"
	"fmt"

	"github.com/t2t-lab/t2t/learner"
)

// ErrWeights: a checkpoint's tensors do not fit the configuration (see *WeightError). It is
// also matched by errors.Is(err, learner.ErrCheckpointMismatch).
var ErrWeights = errors.New("qwen3: checkpoint weights do not fit the config")

// Problems a WeightError reports.
const (
	ProblemMissing    = "missing"
	ProblemUnexpected = "unexpected"
	ProblemShape      = "shape"
	ProblemDType      = "dtype"
	ProblemNonFinite  = "non-finite"
)

// WeightError names the tensor that stopped a load (nothing was loaded).
type WeightError struct {
	Tensor  string // Hugging Face tensor name, e.g. "model.layers.3.self_attn.q_proj.weight"
	Problem string // ProblemMissing, ProblemUnexpected, ProblemShape, ProblemDType or ProblemNonFinite
	Want    []int  // expected shape (nil for an unexpected tensor)
	Got     []int  // shape found (nil for a missing tensor)
	DType   string // the dtype found, for ProblemDType
}

func (e *WeightError) Error() string {
	switch e.Problem {
	case ProblemMissing:
		return fmt.Sprintf("qwen3: tensor %s is missing (want shape %v)", e.Tensor, e.Want)
	case ProblemUnexpected:
		return fmt.Sprintf("qwen3: unexpected tensor %s %v", e.Tensor, e.Got)
	case ProblemShape:
		return fmt.Sprintf("qwen3: tensor %s has shape %v, want %v", e.Tensor, e.Got, e.Want)
	case ProblemDType:
		return fmt.Sprintf("qwen3: tensor %s has dtype %s, want a float type", e.Tensor, e.DType)
	}
	return fmt.Sprintf("qwen3: tensor %s: %s values", e.Tensor, e.Problem)
}

// Unwrap makes errors.Is match ErrWeights and learner.ErrCheckpointMismatch.
func (e *WeightError) Unwrap() []error { return []error{ErrWeights, learner.ErrCheckpointMismatch} }
