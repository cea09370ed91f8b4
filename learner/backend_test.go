package learner

import (
	"errors"
	"testing"
)

func TestNewBackend(t *testing.T) {
	for _, dev := range []string{"", "cpu"} {
		b, err := NewBackend(dev)
		if err != nil {
			t.Fatalf("%q: %v", dev, err)
		}
		if b.String() != "go" || IsXLA(b) {
			t.Fatalf("%q: backend %s", dev, b)
		}
		b.Finalize()
	}
	for _, dev := range []string{"gpu", "xla:relative/plugin.so", "go"} {
		if _, err := NewBackend(dev); !errors.Is(err, ErrBadDevice) {
			t.Errorf("%q: got %v, want ErrBadDevice", dev, err)
		}
	}
	_, err := NewBackend("xla:/nonexistent/t2t/pjrt_plugin.so")
	switch {
	case err == nil:
		t.Fatal("a missing plugin must fail")
	case xlaAvailable && errors.Is(err, ErrNoXLA):
		t.Fatalf("cgo build reports no XLA: %v", err)
	case !xlaAvailable && !errors.Is(err, ErrNoXLA):
		t.Fatalf("non-cgo build: got %v, want ErrNoXLA", err)
	}
	// Options after the path are parsed, not taken for part of it.
	_, err2 := NewBackend("xla:/nonexistent/t2t/pjrt_plugin.so," + OptNoPreallocate + ",tf32")
	if err2 == nil || errors.Is(err2, ErrBadDevice) || (!xlaAvailable && !errors.Is(err2, ErrNoXLA)) {
		t.Fatalf("missing plugin with options: %v", err2)
	}
	t.Logf("xla compiled in: %v; missing plugin: %v; with options: %v", xlaAvailable, err, err2)
}
