package engines

import (
	"context"
	"strings"
	"testing"
)

// TestWriteUsable: a line per engine, gomlx always usable, and the devices.
func TestWriteUsable(t *testing.T) {
	var b strings.Builder
	if err := WriteUsable(context.Background(), &b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"engines:\n", "  gomlx   usable (pure Go, CPU)\n", "  torch   ", "  xla     ", "devices: cpu ("} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 5 {
		t.Errorf("want five lines:\n%s", out)
	}
}
