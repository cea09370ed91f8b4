// Package jsonl words the errors of the readers of JSON Lines files (instance files, the eval
// answer cache, span files): one function, LineReason, turns encoding/json's error for one line
// into the reason a user can act on. A line that is not JSON at all says so with its first
// characters (`not JSON (starts with 'oops…')`) rather than Go's `invalid character 'o' looking
// for beginning of value`; a value of the wrong type names the field. Callers add the file and
// line. It has no state and is safe for concurrent use.
package jsonl

import (
	"encoding/json"
	"errors"
	"fmt"
)

// shown is how many characters of a line that is not JSON an error quotes.
const shown = 12

// NotJSONError is a line that is not JSON: Start is its first characters ("…" when cut), Err
// the decoder's error.
type NotJSONError struct {
	Start string
	Err   *json.SyntaxError
}

func (e *NotJSONError) Error() string { return fmt.Sprintf("not JSON (starts with '%s')", e.Start) }

// Unwrap returns Err.
func (e *NotJSONError) Unwrap() error { return e.Err }

// FieldError is a value of the wrong type: `field "F": want T, got V`.
type FieldError struct {
	Err *json.UnmarshalTypeError
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("field %q: want %s, got %s", e.Err.Field, e.Err.Type, e.Err.Value)
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// LineReason is the reason line b failed to decode with err: a *NotJSONError for a syntax
// error, a *FieldError for a value of the wrong type, and any other error as it is (nil stays
// nil).
func LineReason(b []byte, err error) error {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		r := []rune(string(b))
		start := string(r[:min(len(r), shown)])
		if len(r) > shown {
			start += "…"
		}
		return &NotJSONError{Start: start, Err: se}
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return &FieldError{Err: te}
	}
	return err
}
