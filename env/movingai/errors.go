package movingai

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/t2t-lab/t2t/internal/limits"
)

// Sentinel errors. Every error of this package about its input is an
// *InputError that wraps one of these (match with errors.Is).
var (
	// ErrSyntax: a .map or .scen line that does not follow the format.
	ErrSyntax = errors.New("movingai: syntax error")
	// ErrMapShape: a map t2t cannot hold: not square, or outside
	// [env.MinSize, env.MaxSize] on a side.
	ErrMapShape = errors.New("movingai: map shape not supported")
	// ErrScenMismatch: a scen row that does not fit the map: another size,
	// a start or goal off the grid or on a blocked cell, an unreachable
	// goal, or an octile length above our 4-connected shortest path (a scen
	// of another map).
	ErrScenMismatch = errors.New("movingai: scen row does not fit the map")
	// ErrAgents: an agent group env refuses (an agent count out of range,
	// two agents on one start or one goal).
	ErrAgents = errors.New("movingai: invalid agent group")
	// ErrExport: an instance that cannot be written as a scen (an agent
	// that cannot reach its goal has no shortest length).
	ErrExport = errors.New("movingai: instance cannot be exported")
	// ErrFlag: a flag of the import or export command is missing or out
	// of range.
	ErrFlag = errors.New("movingai: bad flag")
)

// InputError is bad input, with where it is: Path names the file (or the
// flag), Line is the 1-based line in it (0 when the error is about the
// whole file). Err wraps one of the sentinel errors, or an env error.
type InputError struct {
	Path string
	Line int
	Err  error
}

func (e *InputError) Error() string {
	switch {
	case e.Path == "":
		return e.Err.Error()
	case e.Line > 0:
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

// Unwrap returns Err.
func (e *InputError) Unwrap() error { return e.Err }

// inputErr is an *InputError at path:line that wraps sentinel with the
// formatted reason.
func inputErr(path string, line int, sentinel error, format string, args ...any) *InputError {
	return &InputError{Path: path, Line: line, Err: fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...))}
}

// fileErr is the *InputError of a file that cannot be read, worded
// without its path twice.
func fileErr(path string, err error) *InputError {
	var pe *fs.PathError
	var te *limits.TooLargeError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &te):
		err = fmt.Errorf("%w: larger than %d bytes, the limit of a map or scen file", limits.ErrTooLarge, te.Limit)
	}
	return &InputError{Path: path, Err: err}
}
