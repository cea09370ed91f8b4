package buildinfo

import (
	"runtime"
	"strings"
	"testing"
)

// TestWrite: three lines, the version, the commit and the Go version.
func TestWrite(t *testing.T) {
	var b strings.Builder
	if err := Write(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 3 || !strings.HasPrefix(lines[0], "t2t ") || !strings.HasPrefix(lines[1], "commit: ") ||
		lines[2] != "go: "+runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH {
		t.Fatalf("wrote:\n%s", b.String())
	}
}
