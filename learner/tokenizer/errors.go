package tokenizer

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package; match them with errors.Is.
var (
	// ErrFormat: tokenizer.json is not valid JSON or lacks a required part (model, vocab,
	// merges), or a merge names a token that is not in the vocabulary.
	ErrFormat = errors.New("tokenizer: malformed tokenizer.json")
	// ErrUnsupported: tokenizer.json asks for a component this package does not implement
	// (a model other than BPE, an unknown normalizer, pre-tokenizer or decoder, BPE dropout).
	ErrUnsupported = errors.New("tokenizer: unsupported tokenizer.json component")
	// ErrTrain: TrainBPE cannot train with its options (a vocabulary size out of range, an
	// empty added token, a split pattern that does not compile) or learned one token twice.
	ErrTrain = errors.New("tokenizer: cannot train BPE")
)

// FormatError locates a problem in tokenizer.json: the JSON path of the offending part and why.
// It wraps ErrFormat or ErrUnsupported.
type FormatError struct {
	Path   string // e.g. "model.merges[12]" or "pre_tokenizer.pretokenizers[0].behavior"
	Reason string
	Err    error // ErrFormat or ErrUnsupported
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%v: %s: %s", e.Err, e.Path, e.Reason)
}

// Unwrap returns ErrFormat or ErrUnsupported.
func (e *FormatError) Unwrap() error { return e.Err }

func tokBad(path, format string, args ...any) error {
	return &FormatError{Path: path, Reason: fmt.Sprintf(format, args...), Err: ErrFormat}
}

func tokUnsupported(path, format string, args ...any) error {
	return &FormatError{Path: path, Reason: fmt.Sprintf(format, args...), Err: ErrUnsupported}
}
