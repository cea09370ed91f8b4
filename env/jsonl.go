package env

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
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
// reason; other errors are returned as they are.
func JSONReason(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: want %s, got %s", te.Field, te.Type, te.Value)
	}
	return err
}

// LineReason is the reason a JSONL line b failed to decode with err: a line
// that is not JSON at all says so with its first characters ("not JSON
// (starts with 'oops…')"); other errors go through JSONReason.
func LineReason(b []byte, err error) error {
	var se *json.SyntaxError
	if !errors.As(err, &se) {
		return JSONReason(err)
	}
	const show = 12
	r := []rune(string(b))
	start := string(r[:min(len(r), show)])
	if len(r) > show {
		start += "…"
	}
	return fmt.Errorf("not JSON (starts with '%s')", start)
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
