// Package limits reads input files with a size limit, so that a wrong path (/dev/zero, a
// multi-gigabyte file) is a clear error instead of memory growing until the process dies.
package limits

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/t2t-lab/t2t/internal/regfile"
)

// Limits of the files t2t reads whole.
const (
	// Config is a generator config, a model's config.json or an adapter config.
	Config = 1 << 20
	// Plan is an answer or plan file.
	Plan = 16 << 20
	// Text is a text file of many inputs: a history, texts to encode, a tokenizer.json.
	Text = 256 << 20
)

// ErrTooLarge is wrapped by *TooLargeError.
var ErrTooLarge = errors.New("file too large")

// TooLargeError is a file over its limit.
type TooLargeError struct {
	Path  string
	Limit int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("%s: larger than %d bytes (the limit for this input)", e.Path, e.Limit)
}

// Unwrap returns ErrTooLarge.
func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// ReadFile reads path whole, or fails with a *TooLargeError once it has read more than max
// bytes (reading no more than max+1: a device or a growing file cannot exhaust memory).
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, max)
}

// Read reads r whole as ReadFile does; name names it in the error.
func Read(r io.Reader, name string, max int64) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &TooLargeError{Path: name, Limit: max}
	}
	return b, nil
}

// ReadRegularFile is ReadFile of a regular file only (package regfile): a FIFO, a device or a
// socket is refused at once (*regfile.Error wrapping regfile.ErrNotRegular), never waited on.
// Servers read the files a client names with it.
func ReadRegularFile(path string, max int64) ([]byte, error) {
	f, err := regfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return Read(f, path, max)
}
