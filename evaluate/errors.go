package evaluate

import "fmt"

// InputError is bad input met while evaluating: a line of the answer cache
// that does not parse, or a suite manifest that does not parse or does not
// describe its suite file. Its message is one line, "FILE:LINE: REASON" or
// "FILE: REASON"; t2t eval exits with status 2 on it.
type InputError struct {
	// File is the file at fault.
	File string
	// Line is the 1-based line at fault; 0 when the whole file is.
	Line int
	// Reason says what is wrong.
	Reason string
}

func (e *InputError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return e.File + ": " + e.Reason
}
