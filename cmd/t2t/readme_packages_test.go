package main

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// TestREADMEPackageTable: every package of the module (go list ./...) has
// a row in README.md's package table, and every package the table names
// exists.
func TestREADMEPackageTable(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(text), "| package | owns |")
	if !ok {
		t.Fatal("README.md has no '| package | owns |' table")
	}
	named := map[string]bool{}
	code := regexp.MustCompile("`([a-z0-9/]+)/?`")
	for _, row := range strings.Split(table, "\n")[2:] {
		if !strings.HasPrefix(row, "|") {
			break
		}
		first := strings.Split(row, "|")[1]
		for _, m := range code.FindAllStringSubmatch(first, -1) {
			named[strings.TrimSuffix(m[1], "/")] = true
		}
	}
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}", "../../...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	pkgs := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		rel := strings.TrimPrefix(p, "github.com/t2t-lab/t2t/")
		pkgs[rel] = true
		if !named[rel] {
			t.Errorf("package %s has no row in README.md's package table", rel)
		}
	}
	for n := range named {
		if !pkgs[n] {
			t.Errorf("README.md's package table names %s, which is not a package", n)
		}
	}
}
