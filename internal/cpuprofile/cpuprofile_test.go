package cpuprofile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestStartWritesAProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	stop, err := Start(path)
	if err != nil {
		t.Fatal(err)
	}
	x := 0
	for i := range 1_000_000 {
		x += i % 7
	}
	stop()
	if st, err := os.Stat(path); err != nil || st.Size() == 0 {
		t.Fatalf("profile %v, %v (x %d)", st, err, x)
	}
	if _, err := Start(filepath.Join(t.TempDir(), "missing", "cpu.pprof")); err == nil {
		t.Fatal("a profile in a missing folder started")
	}
	stop, err = Start("")
	if err != nil {
		t.Fatal(err)
	}
	stop()
}
