package testutil

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

// update is the one rewrite flag of every golden-file test.
var update = flag.Bool("update", false, "rewrite the golden files (testdata/…) from the current output")

// Update reports whether the tests run with -update.
func Update() bool { return *update }

// Golden compares got with the golden file at path and reports a difference with t.Errorf,
// showing both; a missing file is a t.Fatalf. Under -update it writes got to path instead
// (creating the directory).
func Golden(t testing.TB, path string, got []byte) {
	t.Helper()
	GoldenCompare(t, path, got, func(want []byte) {
		t.Helper()
		if !bytes.Equal(got, want) {
			t.Errorf("%s differs from the golden file (run with -update to accept):\n--- got\n%s\n--- want\n%s", path, got, want)
		}
	})
}

// GoldenCompare reads the golden file at path and calls compare with its contents; compare
// reports any difference through t. Under -update it writes got to path instead (creating the
// directory) and does not call compare.
func GoldenCompare(t testing.TB, path string, got []byte, compare func(want []byte)) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
		return // for a testing.TB whose Fatalf returns
	}
	compare(want)
}
