package regfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestOpenRefusesWhatIsNotRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	lnk := filepath.Join(dir, "lnk")
	if err := os.Symlink(fifo, lnk); err != nil {
		t.Fatal(err)
	}
	// A FIFO with no writer would block a plain open forever: this returns at once.
	for _, p := range []string{fifo, lnk, dir, "/dev/null"} {
		f, err := Open(p)
		if !errors.Is(err, ErrNotRegular) {
			t.Errorf("Open(%s) = %v, want ErrNotRegular", p, err)
		}
		if f != nil {
			f.Close()
		}
	}
	reg := filepath.Join(dir, "reg")
	if err := os.WriteFile(reg, []byte("hello"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(reg, 5); err != nil || string(b) != "hello" {
		t.Fatalf("ReadFile = %q, %v", b, err)
	}
	if _, err := ReadFile(reg, 4); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("ReadFile over max = %v", err)
	}
	if _, err := ReadFile(filepath.Join(dir, "none"), 0); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
