package learner

import "errors"

// Sentinel errors of the package; match them with errors.Is.
var (
	// ErrBadDevice: NewBackend got a device string it does not understand.
	ErrBadDevice = errors.New("learner: bad device")
	// ErrNoXLA: an XLA backend was requested from a binary built without cgo.
	ErrNoXLA = errors.New("learner: XLA backend not compiled in (build with cgo)")
	// ErrInvalidConfig: a configuration failed Validate; the error is a *fielderr.Error naming the field.
	ErrInvalidConfig = errors.New("learner: invalid config")
	// ErrBadBatch: a batch's slices disagree in length or hold out-of-range values.
	ErrBadBatch = errors.New("learner: bad batch")
	// ErrCorruptCheckpoint: a checkpoint's files are missing, unreadable or fail their sha256;
	// the model was not changed.
	ErrCorruptCheckpoint = errors.New("learner: corrupt checkpoint")
	// ErrCheckpointMismatch: a well-formed checkpoint does not fit the model (kind, config, tensor
	// names, shapes or dtypes); the model was not changed.
	ErrCheckpointMismatch = errors.New("learner: checkpoint does not match model")
	// ErrCompute: building or running a computation graph failed (GoMLX panics are turned into it).
	ErrCompute = errors.New("learner: compute failed")
	// ErrEngineLost: the compute engine holding a model is gone (a torch worker died): nothing
	// more can run on that model, and a run stops and resumes from its last checkpoint.
	ErrEngineLost = errors.New("learner: compute engine lost")
)
