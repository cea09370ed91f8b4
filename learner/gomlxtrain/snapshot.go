package gomlxtrain

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// ctxTensorName is a variable's checkpoint name: its scope path and name without the leading
// separator, e.g. "gridnet/layer0/w".
func ctxTensorName(v *context.Variable) string {
	return strings.TrimPrefix(context.JoinScope(v.Scope(), v.Name()), context.ScopeSeparator)
}

// ctxIsOptimizerState reports whether a non-trainable variable belongs in optimizer.safetensors:
// everything but gradient accumulators (zero between steps) and the learning rate (taken from
// the config, so a resumed run may change it).
func ctxIsOptimizerState(v *context.Variable) bool {
	if v.Trainable {
		return false
	}
	if strings.HasPrefix(v.Scope(), accScope) {
		return false
	}
	if v.Name() == optimizers.ParamLearningRate && v.Scope() == context.JoinScope(context.RootScope, optimizers.Scope) {
		return false
	}
	return true
}

// Snapshot encodes the weights (trainable) and optimizer state of ctx.
func Snapshot(ctx *context.Context) (weights, opt []safetensors.Tensor, err error) {
	for v := range ctx.IterVariables() {
		if !v.Trainable && !ctxIsOptimizerState(v) {
			continue
		}
		val, err := v.Value()
		if err != nil {
			return nil, nil, fmt.Errorf("learner: variable %s: %w", ctxTensorName(v), err)
		}
		t, err := tensorToST(ctxTensorName(v), val)
		if err != nil {
			return nil, nil, err
		}
		if v.Trainable {
			weights = append(weights, t)
		} else {
			opt = append(opt, t)
		}
	}
	return weights, opt, nil
}

func tensorToST(name string, t *tensors.Tensor) (safetensors.Tensor, error) {
	shape := slices.Clone(t.Shape().Dimensions)
	var out safetensors.Tensor
	var err error
	switch t.DType() {
	case dtypes.Float32:
		err = tensors.ConstFlatData(t, func(flat []float32) { out = safetensors.F32Tensor(name, shape, flat) })
	case dtypes.Int64:
		err = tensors.ConstFlatData(t, func(flat []int64) { out = safetensors.I64Tensor(name, shape, flat) })
	case dtypes.Float64:
		err = tensors.ConstFlatData(t, func(flat []float64) {
			b := make([]byte, 8*len(flat))
			for i, x := range flat {
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
			}
			out = safetensors.Tensor{Name: name, DType: safetensors.F64, Shape: shape, Data: b}
		})
	default:
		return out, fmt.Errorf("learner: variable %s: dtype %s not supported in checkpoints", name, t.DType())
	}
	return out, err
}

// stToTensor decodes t into a tensor of the given shape (dtype conversions: F32/BF16/F16/F64 into
// Float32; integer types into Int64).
func stToTensor(t safetensors.Tensor, shape shapes.Shape) (*tensors.Tensor, error) {
	if !slices.Equal(t.Shape, shape.Dimensions) {
		return nil, fmt.Errorf("%w: tensor %s has shape %v, model wants %v", learner.ErrCheckpointMismatch, t.Name, t.Shape, shape.Dimensions)
	}
	out := tensors.FromShape(shape)
	var convErr error
	switch shape.DType {
	case dtypes.Float32:
		tensors.MustMutableFlatData(out, func(flat []float32) { _, convErr = t.Float32(flat[:0]) })
	case dtypes.Float64:
		var f []float32
		if t.DType == safetensors.F64 {
			tensors.MustMutableFlatData(out, func(flat []float64) {
				for i := range flat {
					flat[i] = math.Float64frombits(binary.LittleEndian.Uint64(t.Data[8*i:]))
				}
			})
			break
		}
		f, convErr = t.Float32(nil)
		tensors.MustMutableFlatData(out, func(flat []float64) {
			for i := range f {
				flat[i] = float64(f[i])
			}
		})
	case dtypes.Int64:
		tensors.MustMutableFlatData(out, func(flat []int64) { _, convErr = t.Int64(flat[:0]) })
	default:
		return nil, fmt.Errorf("%w: tensor %s: model dtype %s not supported", learner.ErrCheckpointMismatch, t.Name, shape.DType)
	}
	if convErr != nil {
		return nil, fmt.Errorf("%w: %w", learner.ErrCheckpointMismatch, convErr)
	}
	return out, nil
}

// stDTypeFits reports whether a checkpoint dtype can load into a variable dtype.
func stDTypeFits(st safetensors.DType, dt dtypes.DType) bool {
	switch dt {
	case dtypes.Float32, dtypes.Float64:
		return st == safetensors.F32 || st == safetensors.BF16 || st == safetensors.F16 || st == safetensors.F64
	case dtypes.Int64:
		return st == safetensors.I64 || st == safetensors.I32 || st == safetensors.I16 || st == safetensors.I8 || st == safetensors.U8
	}
	return false
}

// restoreAssign is one value RestoreContext sets: into an existing
// variable v, or into a new optimizer variable scope/name.
type restoreAssign struct {
	v      *context.Variable
	scope  string
	name   string
	tensor *tensors.Tensor
}

// RestoreContext checks that ck fits ctx (every weight present with its shape and dtype, nothing
// extra; optimizer tensors fit the variables that already exist) and only then sets the values,
// creating optimizer variables that do not exist yet. On error ctx is unchanged.
func RestoreContext(ctx *context.Context, ck *learner.Checkpoint) error {
	byName := map[string]*context.Variable{}
	for v := range ctx.IterVariables() {
		byName[ctxTensorName(v)] = v
	}
	plan, err := planWeights(byName, ck)
	if err != nil {
		return err
	}
	opt, err := planOptimizer(byName, ck)
	if err != nil {
		return err
	}
	plan = append(plan, opt...)
	return Catch(func() {
		for _, a := range plan {
			if a.v != nil {
				if err := a.v.SetValue(a.tensor); err != nil {
					panic(err)
				}
				continue
			}
			ctx.Checked(false).InAbsPath(a.scope).VariableWithValue(a.name, a.tensor).SetTrainable(false)
		}
	})
}

// planWeights are the checkpoint's weights, each checked against its
// trainable variable; a weight the model lacks or a weight missing from
// the checkpoint is ErrCheckpointMismatch.
func planWeights(byName map[string]*context.Variable, ck *learner.Checkpoint) ([]restoreAssign, error) {
	var plan []restoreAssign
	seen := map[string]bool{}
	for _, t := range ck.Weights {
		v, ok := byName[t.Name]
		if !ok || !v.Trainable {
			return nil, fmt.Errorf("%w: checkpoint weight %q is not a weight of the model", learner.ErrCheckpointMismatch, t.Name)
		}
		if !stDTypeFits(t.DType, v.DType()) {
			return nil, fmt.Errorf("%w: weight %q is %s, model variable is %s", learner.ErrCheckpointMismatch, t.Name, t.DType, v.DType())
		}
		val, err := stToTensor(t, v.Shape())
		if err != nil {
			return nil, err
		}
		seen[t.Name] = true
		plan = append(plan, restoreAssign{v: v, tensor: val})
	}
	for name, v := range byName {
		if v.Trainable && !seen[name] {
			return nil, fmt.Errorf("%w: checkpoint lacks weight %q", learner.ErrCheckpointMismatch, name)
		}
	}
	return plan, nil
}

// planOptimizer is the optimizer state: existing optimizer variables the
// checkpoint lacks are reset (zero moments, step 0), those it holds are
// checked and set, and the rest become new variables.
func planOptimizer(byName map[string]*context.Variable, ck *learner.Checkpoint) ([]restoreAssign, error) {
	var plan []restoreAssign
	inCk := map[string]bool{}
	for _, t := range ck.Optimizer {
		inCk[t.Name] = true
	}
	for name, v := range byName {
		if ctxIsOptimizerState(v) && !inCk[name] {
			plan = append(plan, restoreAssign{v: v, tensor: tensors.FromShape(v.Shape())})
		}
	}
	for _, t := range ck.Optimizer {
		if v, ok := byName[t.Name]; ok {
			if v.Trainable || !stDTypeFits(t.DType, v.DType()) {
				return nil, fmt.Errorf("%w: optimizer tensor %q does not fit variable %s", learner.ErrCheckpointMismatch, t.Name, v.Shape())
			}
			val, err := stToTensor(t, v.Shape())
			if err != nil {
				return nil, err
			}
			plan = append(plan, restoreAssign{v: v, tensor: val})
			continue
		}
		a, err := newOptimizerVar(t)
		if err != nil {
			return nil, err
		}
		plan = append(plan, a)
	}
	return plan, nil
}

// newOptimizerVar is a checkpoint's optimizer tensor for which the context
// has no variable yet: float32 or int64, at its scope and name.
func newOptimizerVar(t safetensors.Tensor) (restoreAssign, error) {
	var dt dtypes.DType
	switch {
	case stDTypeFits(t.DType, dtypes.Float32):
		dt = dtypes.Float32
	case stDTypeFits(t.DType, dtypes.Int64):
		dt = dtypes.Int64
	default:
		return restoreAssign{}, fmt.Errorf("%w: optimizer tensor %q has dtype %s", learner.ErrCheckpointMismatch, t.Name, t.DType)
	}
	val, err := stToTensor(t, shapes.Make(dt, t.Shape...))
	if err != nil {
		return restoreAssign{}, err
	}
	full := context.ScopeSeparator + t.Name
	i := strings.LastIndex(full, context.ScopeSeparator)
	scope, name := full[:i], full[i+1:]
	if scope == "" {
		scope = context.RootScope
	}
	return restoreAssign{scope: scope, name: name, tensor: val}, nil
}
