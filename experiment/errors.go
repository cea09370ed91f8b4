package experiment

import (
	"errors"
	"fmt"
)

// ErrOptions marks Options that Run cannot start with (see Options).
var ErrOptions = errors.New("experiment: Options need a Dir, NewPolicy, arms and seeds")

// OptionError is a bad experiment setting: Field names it as t2t
// experiment's flag does (without the dashes), Value is the offending
// value when the reason does not quote it (nil otherwise). Its message is
// `FIELD: REASON` or `FIELD "VALUE": REASON`.
type OptionError struct {
	Field  string
	Value  any
	Reason string
}

func (e *OptionError) Error() string {
	switch v := e.Value.(type) {
	case nil:
		return e.Field + ": " + e.Reason
	case string:
		return fmt.Sprintf("%s %q: %s", e.Field, v, e.Reason)
	default:
		return fmt.Sprintf("%s %v: %s", e.Field, v, e.Reason)
	}
}
