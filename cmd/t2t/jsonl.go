package main

import (
	"errors"
	"io"
	"os"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/learner"
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

// readInstances reads a JSONL file of instances. A bad line is reported as
// "FILE:LINE: field: reason" and is a bad-input error.
func readInstances(path string) ([]*env.Instance, error) {
	r, err := openIn(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	ins, err := env.ReadInstances(r)
	var le *env.LineError
	if errors.As(err, &le) {
		return nil, badInput("%s:%d: %v", path, le.Line, le.Err)
	}
	return ins, err
}

// writeOut writes data to path atomically (temp file + rename); "-" or ""
// is standard output.
func writeOut(path string, stdout io.Writer, data []byte) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	return learner.WriteBytesAtomic(path, data)
}

// writeJSONLines writes values one JSON line each to w.
func writeJSONLines[T any](w io.Writer, vals []T) error {
	b, err := env.EncodeJSONL(vals)
	if err == nil {
		_, err = w.Write(b)
	}
	return err
}

// writeJSONL writes values one per line to path as writeOut does.
func writeJSONL[T any](path string, stdout io.Writer, vals []T) error {
	b, err := env.EncodeJSONL(vals)
	if err != nil {
		return err
	}
	return writeOut(path, stdout, b)
}
