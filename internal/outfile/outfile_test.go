package outfile

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

func TestWriteRegularAndNew(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "a.jsonl")
	for _, data := range []string{"one\n", "two\n"} { // new path, then replace
		if err := Write(p, nil, []byte(data)); err != nil {
			t.Fatal(err)
		}
		if got, _ := os.ReadFile(p); string(got) != data {
			t.Fatalf("content %q, want %q", got, data)
		}
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Fatalf("left %d entries (a temporary file?)", len(ents))
	}
}

func TestWriteStdout(t *testing.T) {
	var b bytes.Buffer
	for _, p := range []string{"", "-"} {
		b.Reset()
		if err := Write(p, &b, []byte("x")); err != nil || b.String() != "x" {
			t.Fatalf("%q: %q, %v", p, b.String(), err)
		}
	}
}

func TestWriteThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	lnk := filepath.Join(dir, "lnk")
	lnk2 := filepath.Join(dir, "lnk2") // a chain, relative
	if err := errors.Join(os.Symlink(target, lnk), os.Symlink("lnk", lnk2)); err != nil {
		t.Fatal(err)
	}
	if err := Write(lnk2, nil, []byte("new")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); string(got) != "new" {
		t.Fatalf("target holds %q, want new", got)
	}
	for _, l := range []string{lnk, lnk2} {
		if fi, err := os.Lstat(l); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
			t.Fatalf("%s is no longer a symlink: %v %v", l, fi.Mode(), err)
		}
	}
	// A dangling link creates its target, as `>` does.
	dang := filepath.Join(dir, "dang")
	if err := os.Symlink("made", dang); err != nil {
		t.Fatal(err)
	}
	if err := Write(dang, nil, []byte("m")); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "made")); string(got) != "m" {
		t.Fatalf("dangling target holds %q", got)
	}
	// A loop is an input error.
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink("loop", loop); err != nil {
		t.Fatal(err)
	}
	var pe *fielderr.Error
	if err := Write(loop, nil, nil); !errors.As(err, &pe) || !errors.Is(err, ErrSymlinkLoop) {
		t.Fatalf("loop: %v", err)
	}
}

func TestWriteFIFOStreams(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "f")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(fifo)
		if err != nil {
			got <- nil
			return
		}
		defer f.Close()
		b, _ := io.ReadAll(f)
		got <- b
	}()
	if err := Write(fifo, nil, []byte("streamed\n")); err != nil {
		t.Fatal(err)
	}
	if b := <-got; string(b) != "streamed\n" {
		t.Fatalf("reader got %q", b)
	}
	if fi, err := os.Lstat(fifo); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Fatalf("FIFO replaced: %v %v", fi.Mode(), err)
	}
}

func TestWriteCharDevice(t *testing.T) {
	dir := t.TempDir()
	paths := []string{filepath.Join(dir, "null-link")}
	if err := os.Symlink("/dev/null", paths[0]); err != nil {
		t.Fatal(err)
	}
	// As root, a null device node of our own in the temp dir (1,3 is /dev/null).
	if dev := filepath.Join(dir, "null"); syscall.Mknod(dev, syscall.S_IFCHR|0o666, 1<<8|3) == nil {
		paths = append(paths, dev)
	} else {
		t.Log("mknod not allowed: the device node case runs through a symlink to /dev/null only")
	}
	for _, p := range paths {
		if err := Write(p, nil, []byte("discard")); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		fi, err := os.Stat(p)
		if err != nil || fi.Mode()&fs.ModeCharDevice == 0 {
			t.Fatalf("%s is no longer a character device: %v %v", p, fi.Mode(), err)
		}
	}
	if fi, err := os.Lstat(paths[0]); err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("link replaced: %v", err)
	}
}

func TestWriteRefusals(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		path string
		want error
	}{
		{filepath.Join(dir, "nonexistent", "dir", "x"), ErrNoParent},
		{dir, ErrNotWritable},
	} {
		var pe *fielderr.Error
		err := Write(tc.path, nil, []byte("x"))
		if !errors.As(err, &pe) || !errors.Is(err, tc.want) {
			t.Fatalf("%s: %v, want %v", tc.path, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "nonexistent")); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("missing parent was created: %v", err)
	}
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	for _, p := range []string{"", "-", filepath.Join(dir, "new"), "/dev/null"} {
		if err := Check(p); err != nil {
			t.Errorf("%q: %v", p, err)
		}
	}
	for _, p := range []string{dir, filepath.Join(dir, "no", "x")} {
		if err := Check(p); !errors.As(err, new(*fielderr.Error)) {
			t.Errorf("%q: %v, want a *fielderr.Error", p, err)
		}
	}
}

// TestMakeDir: a new folder is made, an existing one kept; a missing
// parent or a file in the way is a field error about the flag.
func TestMakeDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out")
	for range 2 {
		if err := MakeDir("out", dir); err != nil {
			t.Fatal(err)
		}
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("%s: %v", dir, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{filepath.Join(dir, "no", "such"), file} {
		var fe *fielderr.Error
		if err := MakeDir("out", bad); !errors.As(err, &fe) || fe.Usage() != "--out: "+fe.Err.Error() {
			t.Errorf("%s: %v", bad, err)
		}
	}
}
