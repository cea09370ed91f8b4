package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The figure convention of README.md (its section "Measured figures" says
// the same to readers). A figure is a paragraph, list or table, outside
// code blocks, that quotes a measured quantity: a number with a unit of
// time (ns … h), size (MB, GiB, …) or rate (tokens/s, …). Each figure
// has its provenance in it or in the paragraph right before or after it:
// one paragraph that holds
//   - the command that measured it, in backticks (`t2t bench …`, `go test …`,
//     `scripts/…`; or the words "command not recorded"),
//   - the date, YYYY-MM-DD, and
//   - the commit, "commit abc1234" (7 to 40 hex digits) that git knows.
// A paragraph that quotes such units but no measurement (a default, a
// limit) starts with <!-- readme-test: not-measured REASON -->.

// readmeProse is a paragraph, list or table of a README: its first line
// (1-based) and its lines.
type readmeProse struct {
	line  int
	lines []string
}

// proseBlocks splits text into the blocks between blank lines, code
// blocks left out.
func proseBlocks(text string) []readmeProse {
	var (
		out    []readmeProse
		cur    readmeProse
		inCode bool
	)
	flush := func() {
		if len(cur.lines) > 0 {
			out = append(out, cur)
		}
		cur = readmeProse{}
	}
	for i, l := range strings.Split(text, "\n") {
		switch t := strings.TrimSpace(l); {
		case strings.HasPrefix(t, "```"):
			flush()
			inCode = !inCode
		case inCode:
		case t == "":
			flush()
		default:
			if len(cur.lines) == 0 {
				cur.line = i + 1
			}
			cur.lines = append(cur.lines, l)
		}
	}
	flush()
	return out
}

var (
	figureUnit    = regexp.MustCompile(`\d[\d,.]*\s?(?:k )?(?:ns|µs|ms|s|min|h|KB|MB|GB|KiB|MiB|GiB|tokens/s|episodes/s|decisions/s|GFLOP/s|TFLOP/s|M/s)(?:$|[^\w/])`)
	figureDate    = regexp.MustCompile(`\b20\d\d-[01]\d-[0-3]\d\b`)
	figureCommit  = regexp.MustCompile(`\bcommits? ([0-9a-f]{7,40})\b`)
	figureCode    = regexp.MustCompile("`([^`]+)`")
	figureCommand = regexp.MustCompile(`^(?:[A-Z][A-Z0-9_]*=\S* )*(?:t2t|go|scripts/|deploy/|/usr/bin/time|/usr/bin/python3|python3|bash|make|redis-server)\b`)
	notMeasured   = regexp.MustCompile(`^<!--\s*readme-test:\s*not-measured\s+(\S.*?)\s*-->$`)
)

// provenance reports whether block b holds a command, a date and a
// commit, and returns the commits it names.
func provenance(b readmeProse) (bool, []string) {
	text := strings.Join(b.lines, " ")
	cmd := strings.Contains(text, "command not recorded")
	for _, m := range figureCode.FindAllStringSubmatch(text, -1) {
		cmd = cmd || figureCommand.MatchString(m[1])
	}
	var commits []string
	for _, m := range figureCommit.FindAllStringSubmatch(text, -1) {
		commits = append(commits, m[1])
	}
	return cmd && figureDate.MatchString(text) && len(commits) > 0, commits
}

// checkFigures returns a problem for each figure of a README without its
// provenance, and the commits the provenance names.
func checkFigures(text string) (problems, commits []string) {
	blocks := proseBlocks(text)
	has := make([]bool, len(blocks))
	for i, b := range blocks {
		var c []string
		has[i], c = provenance(b)
		if has[i] {
			commits = append(commits, c...)
		}
	}
	for i, b := range blocks {
		if m := notMeasured.FindStringSubmatch(strings.TrimSpace(b.lines[0])); m != nil {
			continue
		}
		unit := figureUnit.FindString(strings.Join(b.lines, "\n"))
		if unit == "" || has[i] || i > 0 && has[i-1] || i+1 < len(blocks) && has[i+1] {
			continue
		}
		problems = append(problems, fmt.Sprintf("README line %d: a figure (%q) without its command, date and commit in it or next to it", b.line, strings.TrimSpace(unit)))
	}
	return problems, commits
}

// TestREADMEFigures checks README.md's figure convention, and that every
// commit a provenance names is in HEAD's history: a commit that only lives
// in a helper's worktree (amended or rebased before it landed) is known to
// the local object store but not to a clean clone.
func TestREADMEFigures(t *testing.T) {
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	problems, commits := checkFigures(string(text))
	for _, p := range problems {
		t.Error(p)
	}
	repo, _ := filepath.Abs("../..")
	if _, err := os.Stat(filepath.Join(repo, ".git")); err != nil {
		t.Logf("not a git checkout (%v): the %d commits named are not looked up", err, len(commits))
		return
	}
	if out, _ := exec.Command("git", "-C", repo, "rev-parse", "--is-shallow-repository").Output(); strings.TrimSpace(string(out)) == "true" {
		t.Logf("a shallow clone: the %d commits named are not looked up", len(commits))
		return
	}
	for _, c := range commits {
		if out, err := exec.Command("git", "-C", repo, "merge-base", "--is-ancestor", c, "HEAD").CombinedOutput(); err != nil {
			t.Errorf("README names commit %s, which is not in HEAD's history (a clean clone would not know it): %v %s", c, err, out)
		}
	}
}

// TestFigureCheckCatchesAFigureWithoutProvenance is the test of the test.
func TestFigureCheckCatchesAFigureWithoutProvenance(t *testing.T) {
	for _, tc := range []struct {
		readme string
		want   int // problems
	}{
		{"Decoding runs at 2,063 tokens/s.\n", 1},
		{"A step takes 196 ms.\n\nMeasured: `t2t bench grpo --preset tiny` on 2026-12-05, commit 64c04e6.\n", 0},
		{"Measured: `t2t bench grpo` on 2026-12-05, commit 64c04e6.\n\n| a | b |\n|---|---|\n| x | 3.9 ms |\n", 0},
		{"A step takes 196 ms (2026-12-05, commit 64c04e6; no command).\n", 1},
		{"A step takes 196 ms (`t2t bench grpo`, commit 64c04e6; no date).\n", 1},
		{"A step takes 196 ms (`t2t bench grpo`, 2026-12-05; no commit).\n", 1},
		{"A step takes 196 ms (an earlier session, command not recorded, 2026-11-30, commit 2f2ec5a).\n", 0},
		{"A step takes 196 ms.\n\nA paragraph between.\n\nMeasured: `t2t bench grpo` 2026-12-05, commit 64c04e6.\n", 1},
		{"<!-- readme-test: not-measured a timeout, not a measurement -->\nRequests time out after 30 s.\n", 0},
		{"```\nt2t bench decode  # 3.9 ms per step\n```\n", 0},
		{"Ten stages and 3 agents, 512 instances.\n", 0},
	} {
		problems, _ := checkFigures(tc.readme)
		if len(problems) != tc.want {
			t.Errorf("README %q: problems %q, want %d", tc.readme, problems, tc.want)
		}
	}
}
