package gomlxtrain

import (
	"io"
	"os"
	"testing"
)

// TestNewBackendPrintsNothing: GoMLX's "parallelism set to" line must not reach standard output
// (it corrupted t2t bench --json), and other output written meanwhile would still pass.
func TestNewBackendPrintsNothing(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	_, err = NewBackend(DeviceCPU)
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	if err != nil || len(out) != 0 {
		t.Fatalf("NewBackend: %v; wrote %q to standard output", err, out)
	}
}
