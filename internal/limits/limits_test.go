package limits

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadFileLimit(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Fatalf("at the limit: %q, %v", b, err)
	}
	_, err := ReadFile(p, 4)
	var te *TooLargeError
	if !errors.As(err, &te) || !errors.Is(err, ErrTooLarge) || te.Limit != 4 {
		t.Fatalf("over the limit: %v", err)
	}
	// A device that never ends stops at the limit.
	if _, err := ReadFile("/dev/zero", 1<<10); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("/dev/zero: %v", err)
	}
	if _, err := ReadFile(filepath.Join(t.TempDir(), "missing"), 10); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing: %v", err)
	}
}
