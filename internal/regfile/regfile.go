// Package regfile opens files a client or a user names for reading without
// ever blocking on them: the open is non-blocking (a FIFO with no writer
// does not stall), and anything that is not a regular file after the open
// (a FIFO, a device, a socket, a directory; fstat, so a swap after a check
// cannot slip one in) is refused with *Error wrapping ErrNotRegular. Errors
// name the file and what was wrong, never its content. It is a leaf: the
// standard library only.
package regfile

import (
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
)

// ErrNotRegular: the path is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// ErrTooLarge: the file is larger than the caller allows.
var ErrTooLarge = errors.New("file too large")

// Error is a file that cannot be read as asked.
type Error struct {
	Path string
	Err  error
}

func (e *Error) Error() string { return fmt.Sprintf("%s: %v", e.Path, e.Err) }
func (e *Error) Unwrap() error { return e.Err }

// Open opens path for reading if it is a regular file (symlinks followed);
// the caller closes it.
func Open(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = &Error{path, fmt.Errorf("%w (%s)", ErrNotRegular, kind(fi.Mode()))}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// kind names a file type for an error.
func kind(m os.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&os.ModeNamedPipe != 0:
		return "a FIFO"
	case m&os.ModeCharDevice != 0:
		return "a character device"
	case m&os.ModeDevice != 0:
		return "a block device"
	case m&os.ModeSocket != 0:
		return "a socket"
	}
	return "an irregular file"
}

// ReadFile reads the regular file at path, at most max bytes (more is
// *Error wrapping ErrTooLarge; max ≤ 0: no bound).
func ReadFile(path string, max int64) ([]byte, error) {
	f, err := Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if max > 0 {
		if fi, err := f.Stat(); err == nil && fi.Size() > max {
			return nil, &Error{path, fmt.Errorf("%w: %d bytes, at most %d", ErrTooLarge, fi.Size(), max)}
		}
	}
	var r io.Reader = f
	if max > 0 {
		r = io.LimitReader(f, max+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, &Error{path, err}
	}
	if max > 0 && int64(len(b)) > max {
		return nil, &Error{path, fmt.Errorf("%w: more than %d bytes", ErrTooLarge, max)}
	}
	return b, nil
}
