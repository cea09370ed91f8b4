package jsonl

import (
	"encoding/json"
	"errors"
	"testing"
)

func TestLineReason(t *testing.T) {
	type rec struct {
		N int `json:"n"`
	}
	for _, tc := range []struct{ line, want string }{
		{"oops", "not JSON (starts with 'oops')"},
		{"oops, this is not JSON", "not JSON (starts with 'oops, this i…')"},
		{"ünïcödé and more text", "not JSON (starts with 'ünïcödé and …')"}, // runes, not bytes
		{`{"n": oops}`, `not JSON (starts with '{"n": oops}')`},
		{`{"n": "seven"}`, `field "n": want int, got string`},
	} {
		var r rec
		err := LineReason([]byte(tc.line), json.Unmarshal([]byte(tc.line), &r))
		if err == nil || err.Error() != tc.want {
			t.Errorf("line %q: %v, want %q", tc.line, err, tc.want)
		}
	}
	var r rec
	line := []byte("null and void")
	err := LineReason(line, json.Unmarshal(line, &r))
	var se *json.SyntaxError
	var nj *NotJSONError
	if !errors.As(err, &se) || !errors.As(err, &nj) {
		t.Errorf("%v (%T): want a *NotJSONError wrapping the *json.SyntaxError", err, err)
	}
	line = []byte(`{"n": true}`)
	err = LineReason(line, json.Unmarshal(line, &r))
	if te := (*json.UnmarshalTypeError)(nil); !errors.As(err, &te) {
		t.Errorf("%v (%T): want it to wrap the *json.UnmarshalTypeError", err, err)
	}
	other := errors.New("instance: agents: want 1..8")
	if got := LineReason([]byte("{}"), other); got != other {
		t.Errorf("another error: %v, want it unchanged", got)
	}
	if LineReason([]byte("x"), nil) != nil {
		t.Error("nil error: want nil")
	}
}
