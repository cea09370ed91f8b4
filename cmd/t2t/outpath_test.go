package main

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestOutPathsAsTheShellDoes runs the real binary's writers (env gen,
// solve, show) against a FIFO, a symlink, /dev/null through a symlink and a
// path whose folder is missing: the special files stay what they were and
// receive the output; the missing folder is exit 2 and is not created.
func TestOutPathsAsTheShellDoes(t *testing.T) {
	bin := nodeBinary(t)
	dir := t.TempDir()
	gen := filepath.Join(dir, "g.jsonl")
	if out, err := exec.Command(bin, "env", "gen", "--n", "3", "--seed", "2", "--out", gen).CombinedOutput(); err != nil {
		t.Fatalf("gen: %v\n%s", err, out)
	}
	want, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}

	fifo := filepath.Join(dir, "f")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() { // the reader, as `cat f` would be
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	if out, err := exec.Command(bin, "env", "gen", "--n", "3", "--seed", "2", "--out", fifo).CombinedOutput(); err != nil {
		t.Fatalf("gen → FIFO: %v\n%s", err, out)
	}
	if b := <-got; !bytes.Equal(b, want) {
		t.Fatalf("FIFO reader got %d bytes, want %d", len(b), len(want))
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced by a %v file (%v)", fi.Mode(), err)
	}

	target := filepath.Join(dir, "target.jsonl")
	lnk := filepath.Join(dir, "lnk")
	null := filepath.Join(dir, "null")
	if err := errors.Join(os.WriteFile(target, nil, 0o644), os.Symlink(target, lnk), os.Symlink("/dev/null", null)); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "env", "solve", "--in", gen, "--out", lnk).CombinedOutput(); err != nil {
		t.Fatalf("solve → symlink: %v\n%s", err, out)
	}
	if b, _ := os.ReadFile(target); strings.Count(string(b), "\n") != 3 {
		t.Fatalf("symlink target holds %q, want 3 solved lines", b)
	}
	if fi, err := os.Lstat(lnk); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("symlink replaced (%v)", err)
	}
	if out, err := exec.Command(bin, "env", "show", "--in", gen, "--out", null).CombinedOutput(); err != nil {
		t.Fatalf("show → /dev/null: %v\n%s", err, out)
	}
	if fi, err := os.Stat("/dev/null"); err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a device (%v)", err)
	}

	missing := filepath.Join(dir, "nonexistent", "dir", "x")
	for _, args := range [][]string{
		{"env", "gen", "--n", "1", "--out", missing},
		{"env", "solve", "--in", gen, "--out", missing},
		{"env", "show", "--in", gen, "--out", missing},
		{"env", "suite", "--suites", "quick", "--out", missing},
	} {
		cmd := exec.Command(bin, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%v: %v, want exit 2\n%s", args, err, stderr.String())
		}
		if !strings.Contains(stderr.String(), "nonexistent") {
			t.Errorf("%v: the error does not name the path: %s", args, stderr.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the missing folder was created (%v)", err)
	}
}
