package env

import (
	"errors"
	"io"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// PickFrom reads the instance file r and returns the instance Pick selects
// with id and line. By line (id empty) it reads up to that line only (0:
// up to the first instance), so later lines may be anything; by id it
// reads all of r and calls skipped (when not nil) for each line that is
// not an instance, in order, and goes on. Its errors are ReadRecordsUntil's
// and Pick's.
func PickFrom(r io.Reader, opt ReadOptions, id string, line int, skipped func(Record)) (*Instance, error) {
	byLine := id == ""
	recs, err := ReadRecordsUntil(r, opt, func(rec Record) bool {
		return byLine && (line <= 0 || rec.Line >= line)
	})
	if err != nil {
		return nil, err
	}
	for _, rec := range recs {
		if rec.Err != nil && !byLine && skipped != nil {
			skipped(rec)
		}
	}
	return Pick(recs, id, line)
}

// FileError is err, an error about the instance file path, as a
// *fielderr.Error naming the file, and the line of a *LineError
// ("FILE:LINE: reason"); nil stays nil.
func FileError(path string, err error) error {
	if le := (*LineError)(nil); errors.As(err, &le) {
		return &fielderr.Error{File: path, Line: le.Line, Err: le.Err}
	} else if err != nil {
		return &fielderr.Error{File: path, Err: err}
	}
	return nil
}
