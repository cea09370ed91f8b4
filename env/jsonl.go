package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/t2t-lab/t2t/internal/jsonl"
)

// MaxJSONLLine bounds one line of an instance file.
const MaxJSONLLine = 64 << 20

// LineError is a bad line of an instance file: Line is 1-based. It wraps
// Err.
type LineError struct {
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%d: %v", e.Line, e.Err) }

// Unwrap returns Err.
func (e *LineError) Unwrap() error { return e.Err }

// ReadInstances reads instances from JSONL, one per non-blank line; each is
// checked as Instance.UnmarshalJSON checks it and a user's own id is kept
// (ReadRecords with the zero ReadOptions). A bad line is a *LineError whose
// Err names the field and the reason.
func ReadInstances(r io.Reader) ([]*Instance, error) {
	recs, err := ReadRecords(r, ReadOptions{})
	if err != nil {
		return nil, err
	}
	return Instances(recs)
}

// ScanJSONL calls fn with each non-blank line of r, trimmed, and its 1-based
// number, until fn fails (its error is returned as it is). A read error, or
// a line over MaxJSONLLine bytes, is a *LineError.
func ScanJSONL(r io.Reader, fn func(line int, b []byte) error) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), MaxJSONLLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		if err := fn(line, b); err != nil {
			return err
		}
	}
	if err := sc.Err(); err != nil {
		return &LineError{Line: line + 1, Err: err}
	}
	return nil
}

// JSONReason shortens an encoding/json type error to the field and the
// reason (a *jsonl.FieldError); other errors are returned as they are. A
// line of a JSONL file goes through jsonl.LineReason instead, which also
// words a line that is not JSON.
func JSONReason(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &jsonl.FieldError{Err: te}
	}
	return err
}

// EncodeJSONL encodes values one per line.
func EncodeJSONL[T any](vals []T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, v := range vals {
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
