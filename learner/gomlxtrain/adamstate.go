package gomlxtrain

import (
	"fmt"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// NamedParam is a trainable variable with the name its optimizer state carries in a file (a
// Hugging Face tensor name, so that both engines read each other's files).
type NamedParam struct {
	Name string
	Var  *context.Variable
}

// Where GoMLX's Adam (optimizers.Adam, as NewTrainer configures it) keeps its state: the
// moments of a variable at scope S and name N are "/AdamOptimizer"+S / N+"_1st_moment" and
// N+"_2nd_moment"; its own step counter (the bias correction's t) is "/AdamOptimizer" /
// "global_step", and every optimizer step also increments the root "global_step".
const (
	adamMoment1 = "_1st_moment"
	adamMoment2 = "_2nd_moment"
)

func adamScope(v *context.Variable) string {
	return context.ScopeSeparator + optimizers.AdamDefaultScope + v.Scope()
}

// stepVars are the (scope, name) of the step counters an Adam step increments.
var stepVars = [][2]string{
	{context.ScopeSeparator + optimizers.AdamDefaultScope, optimizers.GlobalStepVariableName},
	{context.RootScope, optimizers.GlobalStepVariableName},
}

// AdamState returns the Adam moments of params as float32 tensors "NAME.exp_avg" and
// "NAME.exp_avg_sq" (the torch worker's names) and Adam's step count: no tensors and step 0
// before the first step.
func AdamState(ctx *context.Context, params []NamedParam) ([]safetensors.Tensor, int64, error) {
	sv := ctx.GetVariableByScopeAndName(stepVars[0][0], stepVars[0][1])
	if sv == nil {
		return nil, 0, nil
	}
	val, err := sv.Value()
	if err != nil {
		return nil, 0, fmt.Errorf("%w: adam step: %w", learner.ErrCompute, err)
	}
	step, ok := val.Value().(int64)
	if !ok {
		return nil, 0, fmt.Errorf("%w: adam step is %s, want int64", learner.ErrCompute, val.Shape())
	}
	var out []safetensors.Tensor
	for _, p := range params {
		for _, m := range []struct{ suffix, name string }{{adamMoment1, ".exp_avg"}, {adamMoment2, ".exp_avg_sq"}} {
			v := ctx.GetVariableByScopeAndName(adamScope(p.Var), p.Var.Name()+m.suffix)
			if v == nil {
				return nil, 0, fmt.Errorf("%w: adam has taken %d steps but %s has no %s", learner.ErrCompute, step, p.Name, m.suffix)
			}
			t, err := v.Value()
			if err != nil {
				return nil, 0, fmt.Errorf("%w: %s%s: %w", learner.ErrCompute, p.Name, m.name, err)
			}
			f, err := tensors.CopyFlatData[float32](t)
			if err != nil {
				return nil, 0, fmt.Errorf("%w: %s%s: %w", learner.ErrCompute, p.Name, m.name, err)
			}
			out = append(out, safetensors.F32Tensor(p.Name+m.name, slices.Clone(t.Shape().Dimensions), f))
		}
	}
	return out, step, nil
}

// SetAdamState installs moments saved by AdamState (ts, by name) and Adam's step count into
// ctx, creating the optimizer's variables that do not exist yet. Every check runs first: a
// missing, unexpected or mis-shaped tensor, or a step that disagrees with the tensors (step 0
// with moments, or moments without a step), is an error wrapping learner.ErrCheckpointMismatch
// and ctx is unchanged.
func SetAdamState(ctx *context.Context, params []NamedParam, ts []safetensors.Tensor, step int64) error {
	if step < 0 || (step == 0) != (len(ts) == 0) {
		return fmt.Errorf("%w: optimizer state: step %d with %d moment tensors", learner.ErrCheckpointMismatch, step, len(ts))
	}
	byName := make(map[string]safetensors.Tensor, len(ts))
	for _, t := range ts {
		byName[t.Name] = t
	}
	type assign struct {
		scope, name string
		val         *tensors.Tensor
	}
	var plan []assign
	want := map[string]bool{}
	for _, p := range params {
		for _, m := range []struct{ suffix, name string }{{adamMoment1, ".exp_avg"}, {adamMoment2, ".exp_avg_sq"}} {
			key := p.Name + m.name
			want[key] = true
			shape := p.Var.Shape()
			var val *tensors.Tensor
			if step == 0 {
				val = tensors.FromShape(shape)
			} else {
				t, ok := byName[key]
				if !ok {
					return fmt.Errorf("%w: optimizer state: missing tensor %s", learner.ErrCheckpointMismatch, key)
				}
				if !stDTypeFits(t.DType, dtypes.Float32) {
					return fmt.Errorf("%w: optimizer state: %s is %s, want a float type", learner.ErrCheckpointMismatch, key, t.DType)
				}
				var err error
				if val, err = stToTensor(t, shapes.Make(dtypes.Float32, shape.Dimensions...)); err != nil {
					return fmt.Errorf("optimizer state: %w", err)
				}
			}
			plan = append(plan, assign{adamScope(p.Var), p.Var.Name() + m.suffix, val})
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if !want[n] {
			return fmt.Errorf("%w: optimizer state: unexpected tensor %s (not a trainable parameter)", learner.ErrCheckpointMismatch, n)
		}
	}
	for _, s := range stepVars {
		plan = append(plan, assign{s[0], s[1], tensors.FromValue(step)})
	}
	return Catch(func() {
		for _, a := range plan {
			if v := ctx.GetVariableByScopeAndName(a.scope, a.name); v != nil {
				if err := v.SetValue(a.val); err != nil {
					panic(err)
				}
				continue
			}
			ctx.Checked(false).InAbsPath(a.scope).VariableWithValue(a.name, a.val).SetTrainable(false)
		}
	})
}
