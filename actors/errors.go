package actors

import (
	"errors"
	"fmt"
)

// Sentinel errors. Match with errors.Is; the wire errors below and the
// config errors (*fielderr.Error) wrap them with the details.
var (
	// ErrUnknownType: a message type name (incoming) or Go type (outgoing)
	// that the node's Registry does not hold.
	ErrUnknownType = errors.New("actors: unknown message type")
	// ErrCorrupt: a payload that is truncated, has trailing bytes, a bad
	// header or does not decode into the registered type.
	ErrCorrupt = errors.New("actors: corrupt payload")
	// ErrVersion: a payload whose header carries a wire version this node
	// does not speak.
	ErrVersion = errors.New("actors: wire version mismatch")
	// ErrRegistry: a Register call with an empty name, a nil or non-struct
	// prototype, or a name or type registered twice.
	ErrRegistry = errors.New("actors: bad registration")
	// ErrInvalidConfig: a SystemConfig that fails Validate. Wrapped by a
	// *fielderr.Error naming the field.
	ErrInvalidConfig = errors.New("actors: invalid config")
	// ErrRemote: the remote transport could not start (port in use, bad
	// address) or was started twice.
	ErrRemote = errors.New("actors: remote")
	// ErrRunFailed: a run stopped before its last stage (the engineer could
	// not propose a config, the system was closed).
	ErrRunFailed = errors.New("actors: run failed")
	// ErrClosed: the System was already closed or already ran.
	ErrClosed = errors.New("actors: system closed")
	// ErrStaleConfig: a ConfigUpdate for a stage that is not the one the
	// coordinator waits for (already started, already done, or too far
	// ahead), or a second version for the same stage. It is counted and
	// dropped.
	ErrStaleConfig = errors.New("actors: stale config update")
	// ErrBadPlan: a StartRun whose plan is unusable (no stages, no units,
	// a stage-0 config for another stage) or that arrives during a run.
	ErrBadPlan = errors.New("actors: bad stage plan")
)

// WireError describes a message that could not be encoded or decoded: the
// type name involved and the cause. It wraps one of ErrUnknownType,
// ErrCorrupt or ErrVersion.
type WireError struct {
	TypeName string
	Err      error // the sentinel
	Detail   string
}

func (e *WireError) Error() string {
	if e.Detail == "" {
		return fmt.Sprintf("%v: %q", e.Err, e.TypeName)
	}
	return fmt.Sprintf("%v: %q: %s", e.Err, e.TypeName, e.Detail)
}

// Unwrap returns the sentinel.
func (e *WireError) Unwrap() error { return e.Err }
