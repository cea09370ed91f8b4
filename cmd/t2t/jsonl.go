package main

import (
	"errors"
	"io"
	"os"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fsutil"
	"github.com/t2t-lab/t2t/internal/limits"
)

// openIn opens path for reading; "-" is standard input.
func openIn(path string) (io.ReadCloser, error) {
	if path == "-" {
		return io.NopCloser(os.Stdin), nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, badInput("%v", err)
	}
	return f, nil
}

// readIn reads all of path ("-": standard input).
func readIn(path string) ([]byte, error) {
	r, err := openIn(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return limits.Read(r, path, limits.Plan)
}

// readRecords reads a JSONL file of instances ("-": standard input), one
// record per non-blank line; with all, every line must be an instance.
// Errors are bad input naming the file and line.
func readRecords(path string, opt env.ReadOptions, all bool) ([]env.Record, error) {
	r, err := openIn(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	recs, err := env.ReadRecords(r, opt)
	if err == nil && all {
		_, err = env.Instances(recs)
	}
	return recs, fileError(path, err)
}

// fileError is err as a bad-input error naming path, and the line of an
// *env.LineError ("FILE:LINE: reason"); nil stays nil.
func fileError(path string, err error) error {
	if le := (*env.LineError)(nil); errors.As(err, &le) {
		return badInput("%s:%d: %v", path, le.Line, le.Err)
	} else if err != nil {
		return badInput("%s: %v", path, err)
	}
	return nil
}

// writeOut writes data to path atomically (temp file + rename); "-" or ""
// is standard output.
func writeOut(path string, stdout io.Writer, data []byte) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	return fsutil.WriteBytesAtomic(path, data)
}

// writeJSONL writes values one per line to path as writeOut does.
func writeJSONL[T any](path string, stdout io.Writer, vals []T) error {
	b, err := env.EncodeJSONL(vals)
	if err != nil {
		return err
	}
	return writeOut(path, stdout, b)
}
