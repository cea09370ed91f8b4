package evaluate

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestLoadSuite: a named suite is generated as GenerateSuite does, a
// .jsonl name is read as FileSuite does, and an unknown name is a field
// error about --suite.
func TestLoadSuite(t *testing.T) {
	s, err := LoadSuite(env.SuiteQuick, 3, 1, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	spec, err := env.SuiteSized(env.SuiteQuick, 3, 1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := GenerateSuite(&spec, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != want.Name || !reflect.DeepEqual(s.Subsets, want.Subsets) || len(s.Instances) != len(want.Instances) {
		t.Fatalf("named suite %q (%d instances), want %q (%d)", s.Name, len(s.Instances), want.Name, len(want.Instances))
	}
	data, _, err := env.EncodeSuite(spec, want.Instances)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "q.jsonl")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	if f, err := LoadSuite(path, 0, 0, 1, nil); err != nil || f.Name != "q.jsonl" || len(f.Instances) != len(want.Instances) {
		t.Fatalf("file suite: %v", err)
	}
	var fe *fielderr.Error
	if _, err := LoadSuite("nope", 1, 0, 1, nil); !errors.As(err, &fe) || !strings.HasPrefix(fe.Usage(), "--suite: ") {
		t.Fatalf("unknown suite: %v", err)
	}
}

// TestWriteSuiteFiles: the files written read back with FileSuite, the
// manifest giving the spec's subsets.
func TestWriteSuiteFiles(t *testing.T) {
	spec, err := env.SuiteSized(env.SuiteQuick, 5, 1)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	base, man, err := WriteSuiteFiles(dir, &spec, 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	if base != filepath.Join(dir, env.SuiteQuick) || man.Count != spec.Len() {
		t.Fatalf("base %s, manifest %+v", base, man)
	}
	s, err := FileSuite(base+".jsonl", env.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Instances) != spec.Len() || !reflect.DeepEqual(s.Subsets, specSubsets(&spec)) {
		t.Fatalf("read back %d instances, subsets %v", len(s.Instances), s.Subsets)
	}
}
