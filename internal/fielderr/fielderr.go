// Package fielderr is the one error for "a setting or an input is wrong": a field
// of an options struct, a flag, a line of an input file, a path the user gave.
// Every package reports such errors as an *Error; cmd/t2t maps all of them to
// a usage message and exit status 2 with one errors.As, worded by Usage for
// the command line.
//
// It is a leaf: it imports only the standard library, so that the packages
// that must import no other t2t package (env, actors, cluster) can use it. It
// has no state and is safe for concurrent use.
package fielderr

import (
	"fmt"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// Error is a setting or an input that is wrong, and why. The zero values of
// its fields leave their part out of the message.
type Error struct {
	// Kind is the reporting package's sentinel error (train.ErrOptions,
	// learner.ErrInvalidConfig): the message starts with it and errors.Is
	// matches it. nil: none.
	Kind error
	// File is the input file (or path) at fault; Line its 1-based line, 0
	// when the whole file is.
	File string
	Line int
	// Field names the setting as the reporting package does: a Go field
	// path ("GRPOConfig.Batch", "Seeds[0]") or a key of an input file.
	Field string
	// Flag is the command-line flag that sets the field, where the
	// reporting package knows it: its name without dashes
	// ("instances-per-unit"), or a name written as the user writes it when
	// it does not start with a letter or digit ("--gossip-key-file F",
	// "$T2T_GOSSIP_KEY"). The message names Field, or Flag without one.
	Flag string
	// Value is the offending value, nil when it is not worth repeating
	// (Reason or Err says it). A string is written as it is: quote it
	// (strconv.Quote) where spaces or an empty value could mislead.
	Value any
	// Reason says what is wrong ("must be in [1,1000]"); "" is Err's
	// message.
	Reason string
	// Err is the cause (another package's check, an *fs.PathError), nil
	// for none.
	Err error
}

// Error is "KIND: FILE:LINE: FIELD = VALUE: REASON", each part only where
// it is set (FIELD is Field, or Flag without dashes when Field is empty).
func (e *Error) Error() string {
	s := e.where()
	name := e.Field
	if name == "" {
		name = e.Flag
	}
	switch {
	case name != "" && e.Value != nil:
		s += fmt.Sprintf("%s = %v: ", name, e.Value)
	case name != "":
		s += name + ": "
	}
	if e.Kind != nil {
		s = e.Kind.Error() + ": " + s
	}
	return s + e.reason()
}

// Usage is the error as a command line's usage message. With a Flag it is
// "FILE:LINE: --FLAG VALUE: REASON" (no value where Value is nil); with
// neither Flag nor Field "FILE:LINE: REASON" (a file's error, or a check
// whose Reason says it all); a Field with no Flag known is Error.
func (e *Error) Usage() string {
	switch {
	case e.Flag != "" && e.Value != nil:
		return fmt.Sprintf("%s%s %v: %s", e.where(), FlagName(e.Flag), e.Value, e.reason())
	case e.Flag != "":
		return e.where() + FlagName(e.Flag) + ": " + e.reason()
	case e.Field == "":
		return e.where() + e.reason()
	}
	return e.Error()
}

// Unwrap returns Kind and Err, those that are set.
func (e *Error) Unwrap() []error {
	errs := make([]error, 0, 2)
	if e.Kind != nil {
		errs = append(errs, e.Kind)
	}
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	return errs
}

// FlagName is flag as a command line writes it: "--" and the name, or flag
// itself when it does not start with a letter or digit ("--a and --b",
// "$T2T_GOSSIP_KEY").
func FlagName(flag string) string {
	r, _ := utf8.DecodeRuneInString(flag)
	if unicode.IsLetter(r) || unicode.IsDigit(r) {
		return "--" + flag
	}
	return flag
}

// where is "FILE:LINE: ", "FILE: " or "".
func (e *Error) where() string {
	switch {
	case e.File == "":
		return ""
	case e.Line > 0:
		return e.File + ":" + strconv.Itoa(e.Line) + ": "
	}
	return e.File + ": "
}

// reason is Reason, or Err's message without one.
func (e *Error) reason() string {
	if e.Reason == "" && e.Err != nil {
		return e.Err.Error()
	}
	return e.Reason
}
