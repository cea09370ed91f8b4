package movingai

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
)

// Sentinel errors. Every error of this package about its input is a
// *fielderr.Error, with where it is (File and the 1-based Line in it, 0 for
// the whole file; or the Flag), that wraps one of these (match with
// errors.Is) or an env error in its Err.
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

// inputErr is the *fielderr.Error at path:line, or about the flag path
// ("--agents"), that wraps sentinel with the formatted reason.
func inputErr(path string, line int, sentinel error, format string, args ...any) *fielderr.Error {
	return at(path, line, fmt.Errorf("%w: %s", sentinel, fmt.Sprintf(format, args...)))
}

// at is the *fielderr.Error of err at path:line, or about the flag path.
func at(path string, line int, err error) *fielderr.Error {
	if strings.HasPrefix(path, "-") {
		return &fielderr.Error{Flag: path, Err: err}
	}
	return &fielderr.Error{File: path, Line: line, Err: err}
}

// fileErr is the *fielderr.Error of a file that cannot be read, worded
// without its path twice.
func fileErr(path string, err error) *fielderr.Error {
	var pe *fs.PathError
	var te *limits.TooLargeError
	switch {
	case errors.As(err, &pe):
		err = pe.Err
	case errors.As(err, &te):
		err = fmt.Errorf("%w: larger than %d bytes, the limit of a map or scen file", limits.ErrTooLarge, te.Limit)
	}
	return &fielderr.Error{File: path, Err: err}
}
