package learner

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/t2t-lab/t2t/internal/limits"
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
	Weights   []STTensor // model.safetensors
	Optimizer []STTensor // optimizer.safetensors
}

// WriteCheckpoint writes ck into dir atomically (ReplaceDir: files fsynced, manifest last). An
// existing dir is replaced. ck.Manifest.Format and Files are filled in.
func WriteCheckpoint(dir string, ck *Checkpoint) error {
	return ReplaceDir(dir, func(tmp string) error {
		ck.Manifest.Format = CheckpointFormat
		ck.Manifest.Files = map[string]string{}
		for _, f := range []struct {
			name string
			ts   []STTensor
		}{{CheckpointWeightsFile, ck.Weights}, {CheckpointOptimizerFile, ck.Optimizer}} {
			p := filepath.Join(tmp, f.name)
			if err := WriteSafetensorsFile(p, f.ts, map[string]string{"format": "pt"}); err != nil {
				return fmt.Errorf("learner: write %s: %w", f.name, err)
			}
			sum, err := FileSHA256(p)
			if err != nil {
				return err
			}
			ck.Manifest.Files[f.name] = sum
		}
		js, err := json.MarshalIndent(ck.Manifest, "", "  ")
		if err != nil {
			return err
		}
		return WriteFileSynced(filepath.Join(tmp, CheckpointManifestFile), js)
	})
}

// ReplaceDir writes a directory atomically: fill writes the files into a temporary sibling of
// dir (each file fsynced by fill), which is then fsynced and renamed to dir. An existing dir is
// first renamed aside, restored if the rename fails, and removed once the new one is in place.
// On error nothing of the new directory is left.
func ReplaceDir(dir string, fill func(tmp string) error) error {
	dir = filepath.Clean(dir)
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return err
	}
	ok := false
	defer func() {
		if !ok {
			_ = os.RemoveAll(tmp)
		}
	}()
	if err := fill(tmp); err != nil {
		return err
	}
	if err := syncDir(tmp); err != nil {
		return err
	}
	var old string
	if _, err := os.Stat(dir); err == nil {
		old = tmp + ".old"
		if err := os.Rename(dir, old); err != nil {
			return err
		}
	}
	if err := os.Rename(tmp, dir); err != nil {
		if old != "" {
			_ = os.Rename(old, dir)
		}
		return err
	}
	ok = true
	if old != "" {
		_ = os.RemoveAll(old)
	}
	return syncDir(parent)
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
		got, err := FileSHA256(p)
		if err != nil {
			return nil, corrupt("%s: %v", name, err)
		}
		if got != want {
			return nil, corrupt("%s: sha256 %s, manifest says %s", name, got, want)
		}
		ts, _, err := ReadSafetensorsFile(p)
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

// FileSHA256 returns the SHA-256 of a file's content, as lowercase hex.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// WriteFileSynced writes data to path and fsyncs it.
func WriteFileSynced(path string, data []byte) error {
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

// ---- Context variables ↔ checkpoint tensors.

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

// ctxSnapshot encodes the weights (trainable) and optimizer state of ctx.
func ctxSnapshot(ctx *context.Context) (weights, opt []STTensor, err error) {
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

func tensorToST(name string, t *tensors.Tensor) (STTensor, error) {
	shape := slices.Clone(t.Shape().Dimensions)
	var out STTensor
	var err error
	switch t.DType() {
	case dtypes.Float32:
		err = tensors.ConstFlatData(t, func(flat []float32) { out = F32Tensor(name, shape, flat) })
	case dtypes.Int64:
		err = tensors.ConstFlatData(t, func(flat []int64) { out = I64Tensor(name, shape, flat) })
	case dtypes.Float64:
		err = tensors.ConstFlatData(t, func(flat []float64) {
			b := make([]byte, 8*len(flat))
			for i, x := range flat {
				binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
			}
			out = STTensor{Name: name, DType: STF64, Shape: shape, Data: b}
		})
	default:
		return out, fmt.Errorf("learner: variable %s: dtype %s not supported in checkpoints", name, t.DType())
	}
	return out, err
}

// stToTensor decodes t into a tensor of the given shape (dtype conversions: F32/BF16/F16/F64 into
// Float32; integer types into Int64).
func stToTensor(t STTensor, shape shapes.Shape) (*tensors.Tensor, error) {
	if !slices.Equal(t.Shape, shape.Dimensions) {
		return nil, fmt.Errorf("%w: tensor %s has shape %v, model wants %v", ErrCheckpointMismatch, t.Name, t.Shape, shape.Dimensions)
	}
	out := tensors.FromShape(shape)
	var convErr error
	switch shape.DType {
	case dtypes.Float32:
		tensors.MustMutableFlatData(out, func(flat []float32) { _, convErr = t.Float32(flat[:0]) })
	case dtypes.Float64:
		var f []float32
		if t.DType == STF64 {
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
		return nil, fmt.Errorf("%w: tensor %s: model dtype %s not supported", ErrCheckpointMismatch, t.Name, shape.DType)
	}
	if convErr != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpointMismatch, convErr)
	}
	return out, nil
}

// stDTypeFits reports whether a checkpoint dtype can load into a variable dtype.
func stDTypeFits(st STDType, dt dtypes.DType) bool {
	switch dt {
	case dtypes.Float32, dtypes.Float64:
		return st == STF32 || st == STBF16 || st == STF16 || st == STF64
	case dtypes.Int64:
		return st == STI64 || st == STI32 || st == STI16 || st == STI8 || st == STU8
	}
	return false
}

// ctxRestore checks that ck fits ctx (every weight present with its shape and dtype, nothing
// extra; optimizer tensors fit the variables that already exist) and only then sets the values,
// creating optimizer variables that do not exist yet. On error ctx is unchanged.
func ctxRestore(ctx *context.Context, ck *Checkpoint) error {
	type assign struct {
		v      *context.Variable
		scope  string
		name   string
		tensor *tensors.Tensor
	}
	var plan []assign
	byName := map[string]*context.Variable{}
	for v := range ctx.IterVariables() {
		byName[ctxTensorName(v)] = v
	}
	seen := map[string]bool{}
	for _, t := range ck.Weights {
		v, ok := byName[t.Name]
		if !ok || !v.Trainable {
			return fmt.Errorf("%w: checkpoint weight %q is not a weight of the model", ErrCheckpointMismatch, t.Name)
		}
		if !stDTypeFits(t.DType, v.DType()) {
			return fmt.Errorf("%w: weight %q is %s, model variable is %s", ErrCheckpointMismatch, t.Name, t.DType, v.DType())
		}
		val, err := stToTensor(t, v.Shape())
		if err != nil {
			return err
		}
		seen[t.Name] = true
		plan = append(plan, assign{v: v, tensor: val})
	}
	for name, v := range byName {
		if v.Trainable && !seen[name] {
			return fmt.Errorf("%w: checkpoint lacks weight %q", ErrCheckpointMismatch, name)
		}
	}
	inCk := map[string]bool{}
	for _, t := range ck.Optimizer {
		inCk[t.Name] = true
	}
	// Optimizer state the checkpoint lacks is reset to its initial value (zero moments, step 0).
	for name, v := range byName {
		if ctxIsOptimizerState(v) && !inCk[name] {
			plan = append(plan, assign{v: v, tensor: tensors.FromShape(v.Shape())})
		}
	}
	for _, t := range ck.Optimizer {
		if v, ok := byName[t.Name]; ok {
			if v.Trainable || !stDTypeFits(t.DType, v.DType()) {
				return fmt.Errorf("%w: optimizer tensor %q does not fit variable %s", ErrCheckpointMismatch, t.Name, v.Shape())
			}
			val, err := stToTensor(t, v.Shape())
			if err != nil {
				return err
			}
			plan = append(plan, assign{v: v, tensor: val})
			continue
		}
		var dt dtypes.DType
		switch {
		case stDTypeFits(t.DType, dtypes.Float32):
			dt = dtypes.Float32
		case stDTypeFits(t.DType, dtypes.Int64):
			dt = dtypes.Int64
		default:
			return fmt.Errorf("%w: optimizer tensor %q has dtype %s", ErrCheckpointMismatch, t.Name, t.DType)
		}
		val, err := stToTensor(t, shapes.Make(dt, t.Shape...))
		if err != nil {
			return err
		}
		full := context.ScopeSeparator + t.Name
		i := strings.LastIndex(full, context.ScopeSeparator)
		scope, name := full[:i], full[i+1:]
		if scope == "" {
			scope = context.RootScope
		}
		plan = append(plan, assign{scope: scope, name: name, tensor: val})
	}
	return lrnCatch(func() {
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
