package torch

import (
	"errors"
	"fmt"

	"github.com/t2t-lab/t2t/learner"
)

// Sentinel errors of the package; match them with errors.Is.
var (
	// ErrNoTorch: no Python interpreter that imports torch was found (or the one named by
	// --python / $T2T_PYTHON does not import it).
	ErrNoTorch = errors.New("torch: no Python with torch")
	// ErrProtocol: the worker sent a frame that is not a valid protocol message; the worker is
	// stopped.
	ErrProtocol = errors.New("torch: protocol error")
	// ErrVersion: the worker speaks another protocol version.
	ErrVersion = errors.New("torch: protocol version mismatch")
	// ErrWorkerDied: the worker process ended (crashed, was killed, or was closed) before it
	// answered. A step it was running did not happen; the Go side's state is unchanged.
	ErrWorkerDied = errors.New("torch: worker died")
	// ErrClosed: the model was closed.
	ErrClosed = errors.New("torch: closed")
)

// RemoteError is an error the worker reported for one request; the worker's state is unchanged
// by the failed request. It wraps the learner sentinel matching its Kind (bad_request →
// learner.ErrBadBatch, bad_checkpoint → learner.ErrCheckpointMismatch, unsupported →
// learner.ErrInvalidConfig, others → learner.ErrCompute).
type RemoteError struct {
	Op      string // the request's op
	Kind    string // bad_request, bad_checkpoint, unsupported, no_model, oom, compute
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("torch worker: %s: %s: %s", e.Op, e.Kind, e.Message)
}

// Unwrap maps the kind to a learner sentinel.
func (e *RemoteError) Unwrap() error {
	switch e.Kind {
	case "bad_request":
		return learner.ErrBadBatch
	case "bad_checkpoint":
		return learner.ErrCheckpointMismatch
	case "unsupported":
		return learner.ErrInvalidConfig
	}
	return learner.ErrCompute
}

// DiedError says how the worker ended: its exit status or signal and the last lines it wrote
// on stderr. It wraps ErrWorkerDied.
type DiedError struct {
	Op     string // the request that was running ("" between requests)
	Status string // e.g. "signal: killed", "exit status 3"
	Stderr string // the last stderr lines
}

func (e *DiedError) Error() string {
	s := "torch: worker died"
	if e.Op != "" {
		s += " during " + e.Op
	}
	s += " (" + e.Status + ")"
	if e.Stderr != "" {
		s += ": " + e.Stderr
	}
	return s
}

// Unwrap makes errors.Is(err, ErrWorkerDied) and errors.Is(err, learner.ErrEngineLost) hold.
func (e *DiedError) Unwrap() []error { return []error{ErrWorkerDied, learner.ErrEngineLost} }

// RankError says which rank of a Group ended first, and how: "torch rank 1 (pid 4242, cpu)
// exited: signal: killed". The group kills its other ranks at once (a collective would wait
// for the dead one) and every later call returns the same error. It wraps the rank's
// *DiedError, so errors.Is(err, ErrWorkerDied) and errors.Is(err, learner.ErrEngineLost) hold.
type RankError struct {
	Rank   int
	PID    int
	Device string
	Died   *DiedError
}

func (e *RankError) Error() string {
	s := fmt.Sprintf("torch rank %d (pid %d, %s) exited: %s", e.Rank, e.PID, e.Device, e.Died.Status)
	if e.Died.Op != "" {
		s += " during " + e.Died.Op
	}
	if e.Died.Stderr != "" {
		s += ": " + e.Died.Stderr
	}
	return s
}

// Unwrap returns the rank's *DiedError.
func (e *RankError) Unwrap() error { return e.Died }
