package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestHelpListsEverySubcommand: every command the dispatcher runs, and every
// subcommand a group dispatches (as the group's own "unknown subcommand"
// error lists them), has its line in t2t help.
func TestHelpListsEverySubcommand(t *testing.T) {
	code, help, _ := t2t(t, "help")
	if code != 0 {
		t.Fatalf("t2t help: exit %d", code)
	}
	has := func(path string) bool {
		return regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(path) + ` +\S`).MatchString(help)
	}
	want := regexp.MustCompile(`unknown subcommand "no-such" \(want one of ([a-z, -]+)\)`)
	groups := 0
	for _, c := range commands() {
		if !has(c.name) {
			t.Errorf("t2t help has no line for %q", c.name)
		}
		if c.name == "version" {
			continue // takes no arguments, so it cannot be asked for a subcommand
		}
		_, _, stderr := t2t(t, c.name, "no-such")
		m := want.FindStringSubmatch(stderr)
		if m == nil {
			continue // not a group: it took "no-such" as an argument or a flag error
		}
		groups++
		for _, sub := range strings.Split(m[1], ", ") {
			if !has(c.name + " " + sub) {
				t.Errorf("t2t help has no line for %q (t2t %s dispatches it)", c.name+" "+sub, c.name)
			}
		}
	}
	if groups != 4 {
		t.Errorf("found %d command groups (env, model, bench, engineer), want 4", groups)
	}
	for _, must := range []string{"model logits", "bench cluster"} {
		if !has(must) {
			t.Errorf("t2t help lacks %q", must)
		}
	}
}

// daemonRoutes returns the paths package daemon serves: the string
// literal patterns of its Handle/HandleFunc calls and the "/…" cases its
// handlers switch on, read from its source.
func daemonRoutes(t *testing.T) []string {
	files, err := filepath.Glob("../../daemon/*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("daemon sources: %v (%d files)", err, len(files))
	}
	fset := token.NewFileSet()
	var routes []string
	add := func(e ast.Expr) {
		lit, ok := e.(*ast.BasicLit)
		if !ok || lit.Kind != token.STRING {
			return
		}
		s, err := strconv.Unquote(lit.Value)
		if err == nil && strings.HasPrefix(s, "/") && len(s) > 1 && !slices.Contains(routes, s) {
			routes = append(routes, s)
		}
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		af, err := parser.ParseFile(fset, f, src, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(af, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.CallExpr:
				if sel, ok := n.Fun.(*ast.SelectorExpr); ok && (sel.Sel.Name == "Handle" || sel.Sel.Name == "HandleFunc") && len(n.Args) > 0 {
					add(n.Args[0])
				}
			case *ast.CaseClause:
				for _, e := range n.List {
					add(e)
				}
			}
			return true
		})
	}
	return routes
}

// TestHTTPHelpListsEveryRoute: every path the daemon serves on --http is
// named in the --http help of t2t train and t2t node.
func TestHTTPHelpListsEveryRoute(t *testing.T) {
	routes := daemonRoutes(t)
	for _, r := range []string{"/healthz", "/readyz", "/metrics", "/ui", "/api/status"} {
		if !slices.Contains(routes, r) {
			t.Errorf("the daemon's routes %v lack %s: is the source scan still right?", routes, r)
		}
	}
	for _, cmd := range []string{"train", "node"} {
		_, _, usage := t2t(t, cmd, "-h")
		i := strings.Index(usage, "  -http ")
		if i < 0 {
			t.Fatalf("t2t %s -h has no --http", cmd)
		}
		help := usage[i:]
		if j := strings.Index(help[2:], "\n  -"); j >= 0 {
			help = help[:j+2]
		}
		for _, r := range routes {
			if !regexp.MustCompile(regexp.QuoteMeta(r) + `\b`).MatchString(help) {
				t.Errorf("t2t %s -h: --http does not name %s:\n%s", cmd, r, help)
			}
		}
	}
}

// TestEvalUsageNamesEveryPolicy: the first line of t2t eval -h names every
// --policy that t2t eval accepts (as its error for an unknown one lists them).
func TestEvalUsageNamesEveryPolicy(t *testing.T) {
	_, _, stderr := t2t(t, "eval", "--policy", "no-such", "--out", t.TempDir())
	m := regexp.MustCompile(`want ([a-z]+(?:, [a-z]+)* or [a-z]+)`).FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("t2t eval --policy no-such: %q: want the list of policies", stderr)
	}
	_, _, usage := t2t(t, "eval", "-h")
	first, _, _ := strings.Cut(usage, "\n")
	for _, p := range regexp.MustCompile(`, | or `).Split(m[1], -1) {
		if !strings.Contains(first, "--policy "+p) {
			t.Errorf("t2t eval usage %q does not name --policy %s", first, p)
		}
	}
}
