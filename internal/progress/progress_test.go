package progress

import (
	"bytes"
	"strings"
	"testing"
)

func TestBarPlainLinesEveryTenPercent(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	set, finish := To(&b)("gen", 100)
	for i := 1; i <= 100; i++ {
		set(i)
	}
	finish()
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 11 || !strings.HasPrefix(lines[0], "gen: 1/100 (1%)") || !strings.HasPrefix(lines[10], "gen: 100/100 (100%)") {
		t.Fatalf("%d lines:\n%s", len(lines), b.String())
	}
	if IsTerminal(&b) {
		t.Fatal("a buffer is not a terminal")
	}
}

func TestBarWithoutTotalIsSilent(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	p := New(&b, "x", 0)
	p.Set(5)
	p.Finish()
	if b.Len() != 0 {
		t.Fatalf("wrote %q", b.String())
	}
}
