package main

import (
	"io"
	"os"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/limits"
	"github.com/t2t-lab/t2t/internal/outfile"
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
	return recs, env.FileError(path, err)
}

// writeOut writes data to path as package outfile does: a regular file or a
// new path atomically, a symlink through to its target, a FIFO, a device or
// "-"/"" (standard output) as a stream; a missing folder is bad input.
func writeOut(path string, stdout io.Writer, data []byte) error {
	return outfile.Write(path, stdout, data)
}

// checkOut is bad input (exit 2) when --name's path cannot be written, so
// that a command fails before its work rather than after.
func checkOut(name, path string) error {
	if err := outfile.Check(path); err != nil {
		return badInput("--%s: %v", name, err)
	}
	return nil
}

// writeJSONL writes values one per line to path as writeOut does.
func writeJSONL[T any](path string, stdout io.Writer, vals []T) error {
	b, err := env.EncodeJSONL(vals)
	if err != nil {
		return err
	}
	return writeOut(path, stdout, b)
}
