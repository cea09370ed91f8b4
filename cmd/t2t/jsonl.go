package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/t2t-lab/t2t/env"
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

// readInstances reads a JSONL file of instances. A bad line is reported as
// "FILE:LINE: field: reason" and is a bad-input error.
func readInstances(path string) ([]*env.Instance, error) {
	r, err := openIn(path)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	var out []*env.Instance
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		in := new(env.Instance)
		if err := json.Unmarshal(b, in); err != nil {
			return nil, badInput("%s:%d: %v", path, line, jsonReason(err))
		}
		out = append(out, in)
	}
	if err := sc.Err(); err != nil {
		return nil, badInput("%s:%d: %v", path, line+1, err)
	}
	return out, nil
}

// jsonReason shortens encoding/json errors to the field and the reason.
func jsonReason(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Errorf("field %q: want %s, got %s", te.Field, te.Type, te.Value)
	}
	return err
}

// pickInstance selects one instance by id or 1-based line number.
func pickInstance(path, id string, line int) (*env.Instance, error) {
	ins, err := readInstances(path)
	if err != nil {
		return nil, err
	}
	if id != "" {
		for _, in := range ins {
			if in.ID == id {
				return in, nil
			}
		}
		return nil, badInput("%s: no instance with id %q", path, id)
	}
	if line < 1 || line > len(ins) {
		return nil, badInput("%s: --line %d out of range [1,%d]", path, line, len(ins))
	}
	return ins[line-1], nil
}

// writeOut writes data to path atomically (temp file + rename); "-" or ""
// is standard output.
func writeOut(path string, stdout io.Writer, data []byte) error {
	if path == "" || path == "-" {
		_, err := stdout.Write(data)
		return err
	}
	return writeFileAtomic(path, data)
}

func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

// jsonl encodes values one per line.
func jsonl[T any](vals []T) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for _, v := range vals {
		if err := enc.Encode(v); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
