package main

import (
	"flag"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseArgsTakesFlagsAnywhere(t *testing.T) {
	for _, tc := range []struct {
		args []string
		pos  []string
		svg  string
	}{
		{[]string{"a.jsonl", "--svg", "t.svg"}, []string{"a.jsonl"}, "t.svg"},
		{[]string{"--svg", "t.svg", "a.jsonl", "b.jsonl"}, []string{"a.jsonl", "b.jsonl"}, "t.svg"},
		{[]string{"a.jsonl", "--svg=t.svg", "b.jsonl"}, []string{"a.jsonl", "b.jsonl"}, "t.svg"},
		{[]string{"a.jsonl", "--", "--svg", "x"}, []string{"a.jsonl", "--svg", "x"}, ""},
	} {
		fs := newFlags("t2t traces", "t2t traces", io.Discard)
		svg := fs.String("svg", "", "")
		pos, err := parseArgs(fs, tc.args)
		if err != nil || !slices.Equal(pos, tc.pos) || *svg != tc.svg {
			t.Errorf("parseArgs(%q) = %q, --svg %q, %v; want %q, --svg %q", tc.args, pos, *svg, err, tc.pos, tc.svg)
		}
	}
}

func TestTracesReadsFlagAfterFile(t *testing.T) {
	dir := t.TempDir()
	svg := filepath.Join(dir, "timeline.svg")
	missing := filepath.Join(dir, "spans.jsonl")
	code, _, stderr := t2t(t, "traces", missing, "--svg", svg)
	if code != 2 || !strings.Contains(stderr, "spans.jsonl") || strings.Contains(stderr, "--svg") {
		t.Fatalf("exit %d, stderr %q: want the missing span file named, not --svg read as a file", code, stderr)
	}
}

func TestFlagErrorIsOneLineWithHint(t *testing.T) {
	for _, args := range [][]string{
		{"train", "--bogus"},
		{"env", "gen", "--count", "many"},
		{"eval", "--suite"},
		{"model", "inspect", "dir", "--nope"},
		{"env", "solve", "stray"},
	} {
		code, stdout, stderr := t2t(t, args...)
		lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
		if code != 2 || len(lines) != 1 || !strings.Contains(stderr, "-h'") || stdout != "" {
			t.Errorf("t2t %q: exit %d, stdout %q, stderr %q: want exit 2 and one line with the -h hint", args, code, stdout, stderr)
		}
		if bad := args[len(args)-1]; !strings.Contains(stderr, strings.TrimLeft(bad, "-")) && !strings.Contains(stderr, strings.TrimLeft(args[len(args)-2], "-")) {
			t.Errorf("t2t %q: stderr %q does not name the flag", args, stderr)
		}
	}
}

func TestHelpFlagPrintsUsage(t *testing.T) {
	code, _, stderr := t2t(t, "traces", "-h")
	if code != 0 || !strings.Contains(stderr, "Usage: t2t traces") || !strings.Contains(stderr, "-svg") {
		t.Fatalf("exit %d, stderr %q: want the usage with the flags", code, stderr)
	}
	fs := newFlags("x", "x", io.Discard)
	if _, err := parseArgs(fs, []string{"--help"}); err != flag.ErrHelp {
		t.Fatalf("--help: %v, want flag.ErrHelp", err)
	}
}

func TestVersionNamesBuildAndEngines(t *testing.T) {
	for _, arg := range []string{"version", "--version"} {
		code, stdout, stderr := t2t(t, arg)
		if code != 0 {
			t.Fatalf("t2t %s: exit %d, %s", arg, code, stderr)
		}
		for _, want := range []string{"t2t ", "commit: ", "go: go1.", "gomlx   usable", "torch   ", "xla     ", "devices: cpu ("} {
			if !strings.Contains(stdout, want) {
				t.Errorf("t2t %s: output lacks %q:\n%s", arg, want, stdout)
			}
		}
	}
}

func TestMalformedJSONLLineSaysNotJSON(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(in, []byte("\noops, this is not JSON\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := t2t(t, "env", "solve", "--in", in)
	want := "line 2: not JSON (starts with 'oops, this i…')"
	if code != 3 || !strings.Contains(stdout, want) || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stdout %q, stderr %q: want exit 3 and %q", code, stdout, stderr, want)
	}
	// Every other reader of a JSONL file words it the same way (jsonl.LineReason).
	want = in + ":2: not JSON (starts with 'oops, this i…')"
	for _, args := range [][]string{
		{"env", "show", "--in", in},
		{"env", "check", "--instance", in, "--plan", in},
		{"env", "prompt", "--in", in},
		{"env", "export", "--in", in, "--out", dir},
		{"traces", in},
		{"eval", "--policy", "scripted", "--suite", in, "--out", filepath.Join(dir, "eval")},
	} {
		code, _, stderr := t2t(t, args...)
		if code != 2 || !strings.Contains(stderr, want) || strings.Contains(stderr, "invalid character") {
			t.Errorf("t2t %s: exit %d, stderr %q: want exit 2 and %q", strings.Join(args, " "), code, stderr, want)
		}
	}
}

func TestStatusUnreachableRedisFailsWithOneLine(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	code, _, stderr := t2t(t, "status", "--redis", "redis://"+addr+"/0", "--timeout", "1s")
	lines := strings.Split(strings.TrimRight(stderr, "\n"), "\n")
	if code != 1 || len(lines) != 1 || !strings.Contains(stderr, "t2t status: redis:") {
		t.Fatalf("exit %d, stderr %q: want exit 1 and one line", code, stderr)
	}
}
