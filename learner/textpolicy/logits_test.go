package textpolicy

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestReadTexts: one text per line, a last newline ending the last text; a
// missing file is a field error.
func TestReadTexts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "texts.txt")
	if err := os.WriteFile(path, []byte("a b\n\nc\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadTexts(path); err != nil || fmt.Sprintf("%q", got) != `["a b" "" "c"]` {
		t.Fatalf("%q, %v", got, err)
	}
	var fe *fielderr.Error
	if _, err := ReadTexts(path + ".none"); !errors.As(err, &fe) || !strings.Contains(fe.Usage(), "texts.txt.none") {
		t.Fatalf("missing file: %v", err)
	}
}
