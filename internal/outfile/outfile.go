// Package outfile writes a command's output to the path a user named, the
// way the shell's `>` treats it: a regular file or a new path is replaced
// atomically (temporary file + rename, so a reader never sees half of it);
// a symlink is written through to its target; a FIFO, a character device
// (/dev/null, /dev/stdout) or "-" is written as a stream; a missing parent
// folder is an input error (a *fielderr.Error naming the path), never
// created. It is a leaf: it imports only the standard library,
// internal/fsutil and internal/fielderr.
//
// Concurrency: the functions hold no state; two writers of one path race as
// two shell redirections would.
package outfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/fsutil"
)

// Errors a path's *fielderr.Error wraps.
var (
	// ErrNoParent: the folder the path is in does not exist (it is not created).
	ErrNoParent = errors.New("its folder does not exist")
	// ErrNotWritable: the path is a directory, a socket or a block device.
	ErrNotWritable = errors.New("not a regular file, FIFO or character device")
	// ErrSymlinkLoop: the chain of symlinks is too long.
	ErrSymlinkLoop = errors.New("too many levels of symbolic links")
)

// pathError is the error of an output path the user gave that cannot be
// written as asked: a bad input (*fielderr.Error naming the path as its
// File), to be reported at the edge (exit 2).
func pathError(path string, err error) *fielderr.Error {
	return &fielderr.Error{File: path, Err: err}
}

// Write writes data to path as the package doc says; "" or "-" is stdout.
func Write(path string, stdout io.Writer, data []byte) error {
	return WriteFunc(path, stdout, func(w io.Writer) error {
		_, err := w.Write(data)
		return err
	})
}

// WriteFunc is Write where write fills the output.
func WriteFunc(path string, stdout io.Writer, write func(io.Writer) error) error {
	if path == "" || path == "-" {
		return write(stdout)
	}
	target, mode, err := resolve(path)
	if err != nil {
		return err
	}
	switch {
	case mode&fs.ModeNamedPipe != 0, mode&fs.ModeCharDevice != 0:
		return stream(target, write)
	case mode == 0, mode.IsRegular(): // new path or regular file
		return fsutil.WriteFileAtomic(target, write)
	}
	return pathError(path, ErrNotWritable)
}

// Check reports, before any work is done, whether path can be written as
// Write would: nil for "", "-", a new path in an existing folder, a regular
// file, a FIFO or a character device (through symlinks); a *fielderr.Error else.
func Check(path string) error {
	if path == "" || path == "-" {
		return nil
	}
	_, mode, err := resolve(path)
	if err == nil && mode != 0 && !mode.IsRegular() && mode&(fs.ModeNamedPipe|fs.ModeCharDevice) == 0 {
		err = pathError(path, ErrNotWritable)
	}
	return err
}

// resolve follows path's symlinks to the file a write lands in and returns
// it with its type (0 and the path where it does not exist yet, after
// checking that its folder does).
func resolve(path string) (string, fs.FileMode, error) {
	orig := path
	for range 40 {
		fi, err := os.Lstat(path)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			di, derr := os.Stat(filepath.Dir(path))
			if derr != nil || !di.IsDir() {
				return "", 0, pathError(orig, ErrNoParent)
			}
			return path, 0, nil
		case err != nil:
			return "", 0, pathError(orig, err)
		case fi.Mode()&fs.ModeSymlink == 0:
			return path, fi.Mode(), nil
		}
		link, err := os.Readlink(path)
		if err != nil {
			return "", 0, pathError(orig, err)
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(path), link)
		}
		path = link
	}
	return "", 0, pathError(orig, ErrSymlinkLoop)
}

// stream writes to a FIFO or device in place: no temporary file, no rename.
func stream(path string, write func(io.Writer) error) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// MakeDir makes the output folder dir that flag (a name without dashes)
// names unless it exists as a folder; its parent must exist, as for
// Write's files. An error is a *fielderr.Error about the flag.
func MakeDir(flag, dir string) error {
	err := os.Mkdir(dir, 0o755)
	if errors.Is(err, fs.ErrExist) {
		if fi, serr := os.Stat(dir); serr == nil && fi.IsDir() {
			return nil
		}
	}
	if err != nil {
		return &fielderr.Error{Flag: flag, Err: err}
	}
	return nil
}
