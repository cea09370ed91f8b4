package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEnvImportExport runs `t2t env import`, `env solve` and `env export`
// on the committed 32×32 pair of env/movingai, and checks the exit status
// of bad input.
func TestEnvImportExport(t *testing.T) {
	dir := t.TempDir()
	data := filepath.Join("..", "..", "env", "movingai", "testdata")
	m, s := filepath.Join(data, "rand-32-20.map"), filepath.Join(data, "rand-32-20.scen")
	ins := filepath.Join(dir, "in.jsonl")
	if code, _, e := t2t(t, "env", "import", "--map", m, "--scen", s, "--agents", "6", "--first", "2", "--out", ins); code != 0 {
		t.Fatalf("import: exit %d: %s", code, e)
	}
	code, out, e := t2t(t, "env", "solve", "--in", ins)
	if code != 0 || strings.Count(out, "\n") != 2 || !strings.Contains(out, `"paths":`) {
		t.Fatalf("solve: exit %d: %s\n%s", code, e, out)
	}
	exp := filepath.Join(dir, "export")
	if code, _, e := t2t(t, "env", "export", "--in", ins, "--out", exp); code != 0 {
		t.Fatalf("export: exit %d: %s", code, e)
	}
	files, err := os.ReadDir(exp)
	if err != nil || len(files) != 3 {
		t.Fatalf("export wrote %v (%v), want a map and two scens", files, err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--map", m, "--scen", s, "--agents", "11"}, "--agents: movingai: invalid agent group: 11 agents"},
		{[]string{"import", "--map", s, "--scen", s, "--agents", "2"}, "rand-32-20.scen:1: movingai: syntax error"},
		{[]string{"import", "--map", m, "--agents", "2"}, "--scen: movingai: bad flag: required"},
		{[]string{"export", "--in", m, "--out", exp}, "rand-32-20.map:1:"},
	} {
		code, _, e := t2t(t, append([]string{"env"}, c.args...)...)
		if code != 2 || !strings.Contains(e, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, e, c.want)
		}
	}
}
