package testutil

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// goldenRecorder captures what Golden reports.
type goldenRecorder struct {
	testing.TB
	errors, fatals []string
}

func (r *goldenRecorder) Helper() {}

func (r *goldenRecorder) Errorf(format string, args ...any) {
	r.errors = append(r.errors, format)
}

func (r *goldenRecorder) Fatalf(format string, args ...any) {
	r.fatals = append(r.fatals, format)
}

func TestGolden(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "sub", "out.golden")

	r := &goldenRecorder{TB: t}
	Golden(r, path, []byte("x"))
	if len(r.fatals) != 1 || len(r.errors) != 0 || !strings.Contains(r.fatals[0], "-update") {
		t.Fatalf("missing golden file: fatals %v", r.fatals)
	}

	*update = true
	Golden(t, path, []byte("hello\n"))
	*update = false
	if b, err := os.ReadFile(path); err != nil || string(b) != "hello\n" {
		t.Fatalf("-update wrote %q, %v", b, err)
	}
	if Update() {
		t.Fatal("Update() true without -update")
	}

	Golden(t, path, []byte("hello\n"))
	r = &goldenRecorder{TB: t}
	Golden(r, path, []byte("bye\n"))
	if len(r.errors) != 1 || len(r.fatals) != 0 {
		t.Fatalf("a difference: errors %v fatals %v", r.errors, r.fatals)
	}

	called := false
	GoldenCompare(t, path, nil, func(want []byte) { called = string(want) == "hello\n" })
	if !called {
		t.Fatal("GoldenCompare did not pass the golden file to compare")
	}
}
