package main

import (
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The README test. Every fenced ```sh / ```bash block of README.md is a
// list of commands the test runs, one per line (a trailing "\" joins the
// next line; "#" starts a comment), with the t2t binary built from this
// tree for "t2t" and "go run ./cmd/t2t", in a temporary directory that
// holds the repository's configs/. An HTML comment on the line before the
// fence annotates the block, directives separated by ";":
//
//	<!-- readme-test: args --stages 1 --instances 16 -->   append these flags to each t2t command (test size)
//	<!-- readme-test: skip REASON -->                      run nothing (the reason is logged)
//	<!-- readme-test: not-run make test: REASON -->        a line starting "make test" is not run
//	<!-- readme-test: output-of 4 -->                      this block quotes the output of the command on README
//	                                                        line 4: each of its lines, numbers, durations and hashes
//	                                                        made placeholders, must be a line of that output (but for
//	                                                        the engineer's proposal lines, which vary by run)
//	<!-- readme-test: cluster -->                          the t2t commands run at once (the first one first,
//	                                                        until its ports answer), against a redis-server the
//	                                                        test starts for 127.0.0.1:6379, every other
//	                                                        127.0.0.1:PORT mapped to a free port; each must exit 0
//
// A non-t2t line that no not-run names fails the test. Whether run or
// not, every "--flag" of every line starting with "t2t " in any fenced
// block (the synopsis too) must be a flag of that subcommand (its -h
// usage lists it): a renamed or removed flag fails the test.

// readmeCmd is one command line of the README.
type readmeCmd struct {
	line int    // 1-based line of README.md
	text string // the command, continuation lines joined
	run  bool   // in a block the test runs
	args string // flags the block's annotation appends
}

// readmeBlock is a fenced block: its commands and its annotation.
type readmeBlock struct {
	line               int
	shell              bool
	skip               string
	args               string
	notRun             map[string]string
	cluster            bool
	outputOf           int      // the README line of the command whose output this block quotes
	raw                []string // the block's lines
	cmds               []readmeCmd
	annotationProblems []string
}

var readmeAnnotation = regexp.MustCompile(`^<!--\s*readme-test:(.*)-->\s*$`)

// parseReadme returns the fenced blocks of a README.
func parseReadme(text string) []readmeBlock {
	lines := strings.Split(text, "\n")
	var out []readmeBlock
	for i := 0; i < len(lines); i++ {
		fence, ok := strings.CutPrefix(strings.TrimSpace(lines[i]), "```")
		if !ok {
			continue
		}
		b := readmeBlock{line: i + 1, shell: fence == "sh" || fence == "bash", notRun: map[string]string{}}
		if i > 0 {
			if m := readmeAnnotation.FindStringSubmatch(strings.TrimSpace(lines[i-1])); m != nil {
				b.annotate(m[1])
			}
		}
		joined, start := "", 0
		for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
			l := lines[i]
			b.raw = append(b.raw, l)
			if joined == "" {
				start = i + 1
			}
			if c, ok := strings.CutSuffix(strings.TrimRight(l, " "), "\\"); ok {
				joined += c + " "
				continue
			}
			joined += l
			if cmd := strings.TrimSpace(stripComment(joined)); cmd != "" {
				b.cmds = append(b.cmds, readmeCmd{line: start, text: cmd, run: b.shell && b.skip == "", args: b.args})
			}
			joined = ""
		}
		out = append(out, b)
	}
	return out
}

// annotate applies a readme-test comment's directives to b.
func (b *readmeBlock) annotate(s string) {
	for _, d := range strings.Split(s, ";") {
		d = strings.TrimSpace(d)
		verb, rest, _ := strings.Cut(d, " ")
		switch verb {
		case "args":
			b.args = strings.TrimSpace(rest)
		case "skip":
			b.skip = strings.TrimSpace(rest)
			if b.skip == "" {
				b.annotationProblems = append(b.annotationProblems, "skip without a reason")
			}
		case "output-of":
			n, err := strconv.Atoi(strings.TrimSpace(rest))
			if err != nil {
				b.annotationProblems = append(b.annotationProblems, fmt.Sprintf("output-of %q: want a README line number", rest))
			}
			b.outputOf = n
		case "cluster":
			b.cluster = true
		case "not-run":
			prefix, reason, ok := strings.Cut(rest, ":")
			if !ok || strings.TrimSpace(reason) == "" {
				b.annotationProblems = append(b.annotationProblems, fmt.Sprintf("not-run %q without a reason", rest))
			}
			b.notRun[strings.TrimSpace(prefix)] = strings.TrimSpace(reason)
		default:
			b.annotationProblems = append(b.annotationProblems, fmt.Sprintf("unknown directive %q", d))
		}
	}
}

// stripComment drops a shell comment ("# …" after a blank or at the start).
func stripComment(l string) string {
	if strings.HasPrefix(strings.TrimSpace(l), "#") {
		return ""
	}
	if i := strings.Index(l, " #"); i >= 0 && !strings.ContainsAny(l[:i], `'"`) {
		return l[:i]
	}
	return l
}

// shellWords splits a command line as sh would for plain words and
// single- or double-quoted strings (no expansion).
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		quote rune
		in    bool
	)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case r == ' ' || r == '\t':
			if in {
				words, in = append(words, cur.String()), false
				cur.Reset()
			}
		default:
			cur.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unterminated quote in %q", s)
	}
	if in {
		words = append(words, cur.String())
	}
	return words, nil
}

// t2tArgs returns the arguments of a t2t command line ("t2t …" or "go run
// ./cmd/t2t …"), or ok false for another command.
func t2tArgs(words []string) ([]string, bool) {
	switch {
	case len(words) >= 1 && words[0] == "t2t":
		return words[1:], true
	case len(words) >= 3 && words[0] == "go" && words[1] == "run" && words[2] == "./cmd/t2t":
		return words[3:], true
	}
	return nil, false
}

// subcommandOf returns the subcommand path of args ("env solve", "train").
func subcommandOf(args []string) []string {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return nil
	}
	if subcommandsOf(args[0]) != nil && len(args) > 1 && !strings.HasPrefix(args[1], "-") {
		return args[:2]
	}
	return args[:1]
}

var flagToken = regexp.MustCompile(`(?:^|[\s\[|(])--([a-z][a-z0-9-]*)`)

// checkReadmeFlags returns a problem for each --flag of a "t2t …" line
// that its subcommand's usage does not list.
func checkReadmeFlags(blocks []readmeBlock) []string {
	usage := map[string]string{}
	var problems []string
	for _, b := range blocks {
		for _, c := range b.cmds {
			args, ok := t2tArgs(strings.Fields(c.text))
			sub := subcommandOf(args)
			if !ok || sub == nil || strings.ContainsAny(strings.Join(sub, " "), "|…") || sub[0] == "help" {
				continue
			}
			key := strings.Join(sub, " ")
			if _, ok := usage[key]; !ok {
				var out, errb strings.Builder
				run(append(append([]string{}, sub...), "-h"), &out, &errb)
				usage[key] = out.String() + errb.String()
			}
			for _, m := range flagToken.FindAllStringSubmatch(c.text+" "+c.args, -1) {
				if !strings.Contains(usage[key], "  -"+m[1]+" ") && !strings.Contains(usage[key], "  -"+m[1]+"\n") {
					problems = append(problems, fmt.Sprintf("README line %d: t2t %s has no flag --%s", c.line, key, m[1]))
				}
			}
		}
	}
	return problems
}

// runReadmeBlocks runs the commands of the blocks the test runs and
// returns a problem for each that fails or is not annotated.
func runReadmeBlocks(t *testing.T, blocks []readmeBlock, bin, repo string) []string {
	var problems []string
	outputs := map[int]string{} // README line → the output of its command
	for _, b := range blocks {
		for _, p := range b.annotationProblems {
			problems = append(problems, fmt.Sprintf("README line %d: annotation: %s", b.line-1, p))
		}
		if !b.shell {
			continue
		}
		if b.skip != "" {
			t.Logf("README line %d: block not run: %s", b.line, b.skip)
			continue
		}
		dir := t.TempDir()
		if err := os.Symlink(filepath.Join(repo, "configs"), filepath.Join(dir, "configs")); err != nil {
			t.Fatal(err)
		}
		if b.cluster {
			problems = append(problems, runReadmeCluster(t, b, bin, dir)...)
			continue
		}
		for _, c := range b.cmds {
			cmd, p := readmeExec(t, b, c, bin, dir, nil)
			if p == "" && cmd != nil {
				p = waitReadmeCmd(c, cmd)
				outputs[c.line] = cmd.Stdout.(*bytes.Buffer).String()
			}
			if p != "" {
				problems = append(problems, p)
			}
		}
	}
	for _, b := range blocks {
		if b.outputOf > 0 {
			problems = append(problems, checkOutputShape(b, outputs)...)
		}
	}
	return problems
}

// The placeholders of an output's shape: hashes, durations, numbers.
var (
	shapeHash     = regexp.MustCompile(`\b[0-9a-f]{12,}\b`)
	shapeDuration = regexp.MustCompile(`\b(\d+h)?(\d+m)?\d+(\.\d+)?(s|ms|µs)\b`)
	shapeNumber   = regexp.MustCompile(`-?\d+(\.\d+)?`)
	shapeSpace    = regexp.MustCompile(`\s+`)
	// proposal lines: the engineer's verdict and the config changes it lists
	shapeProposal = regexp.MustCompile(`^\s+(engineer |size\s+\d|agents |instances )`)
)

// outputShape is line with its hashes, durations and numbers as placeholders
// and its runs of blanks as one.
func outputShape(line string) string {
	line = shapeHash.ReplaceAllString(line, "H")
	line = shapeDuration.ReplaceAllString(line, "D")
	line = shapeNumber.ReplaceAllString(line, "N")
	return strings.TrimSpace(shapeSpace.ReplaceAllString(line, " "))
}

// checkOutputShape returns a problem for each line of an output-of block
// whose shape is not the shape of a line of the command's output.
func checkOutputShape(b readmeBlock, outputs map[int]string) []string {
	out, ok := outputs[b.outputOf]
	if !ok {
		return []string{fmt.Sprintf("README line %d: output-of %d: no command on that line was run", b.line, b.outputOf)}
	}
	shapes := map[string]bool{}
	for _, l := range strings.Split(out, "\n") {
		shapes[outputShape(l)] = true
	}
	var problems []string
	for i, l := range b.raw {
		if strings.TrimSpace(l) == "" || shapeProposal.MatchString(l) {
			continue
		}
		if !shapes[outputShape(l)] {
			problems = append(problems, fmt.Sprintf("README line %d: no line of the output of line %d has this shape: %q", b.line+1+i, b.outputOf, l))
		}
	}
	return problems
}

// runReadmeCluster runs a cluster block: the first t2t command until its
// ports answer, then the others, all at once; each must exit 0.
func runReadmeCluster(t *testing.T, b readmeBlock, bin, dir string) []string {
	ports := map[string]string{"6379": strings.TrimSuffix(strings.TrimPrefix(nodeRedis(t), "redis://127.0.0.1:"), "/0")}
	var (
		cmds     []*exec.Cmd
		ran      []readmeCmd
		problems []string
	)
	for _, c := range b.cmds {
		cmd, p := readmeExec(t, b, c, bin, dir, ports)
		if p != "" {
			problems = append(problems, p)
		}
		if cmd == nil {
			continue
		}
		if len(cmds) == 0 {
			if p := waitPorts(cmd.Args, ports["6379"]); p != "" {
				problems = append(problems, fmt.Sprintf("README line %d: %s", c.line, p))
			}
		}
		cmds, ran = append(cmds, cmd), append(ran, c)
	}
	for i, cmd := range cmds {
		if p := waitReadmeCmd(ran[i], cmd); p != "" {
			problems = append(problems, p)
		}
	}
	return problems
}

var localAddr = regexp.MustCompile(`127\.0\.0\.1:(\d+)`)

// waitPorts polls until every 127.0.0.1:PORT of args but skip accepts a
// TCP connection (a hang guard of a minute).
func waitPorts(args []string, skip string) string {
	deadline := time.Now().Add(time.Minute)
	for _, m := range localAddr.FindAllStringSubmatch(strings.Join(args, " "), -1) {
		if m[1] == skip {
			continue
		}
		for {
			c, err := net.DialTimeout("tcp", m[0], time.Second)
			if err == nil {
				c.Close()
				break
			}
			if time.Now().After(deadline) {
				return fmt.Sprintf("%s did not answer within a minute", m[0])
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	return ""
}

// readmeExec starts one command of a run block in dir, its 127.0.0.1
// ports mapped through ports (nil: as written; an unknown port gets a free
// one). A command that is not run returns nil and no problem.
func readmeExec(t *testing.T, b readmeBlock, c readmeCmd, bin, dir string, ports map[string]string) (*exec.Cmd, string) {
	text := c.text + " " + c.args
	if ports != nil {
		text = localAddr.ReplaceAllStringFunc(text, func(a string) string {
			p := strings.TrimPrefix(a, "127.0.0.1:")
			if ports[p] == "" {
				ports[p] = strconv.Itoa(nodeFreePort(t))
			}
			return "127.0.0.1:" + ports[p]
		})
	}
	words, err := shellWords(text)
	if err != nil {
		return nil, fmt.Sprintf("README line %d: %v", c.line, err)
	}
	args, ok := t2tArgs(words)
	if !ok {
		for prefix, reason := range b.notRun {
			if strings.HasPrefix(c.text, prefix) {
				t.Logf("README line %d: %q not run: %s", c.line, c.text, reason)
				return nil, ""
			}
		}
		return nil, fmt.Sprintf("README line %d: %q is not a t2t command and no not-run annotation names it", c.line, c.text)
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		return nil, fmt.Sprintf("README line %d: %v", c.line, err)
	}
	t.Logf("README line %d: started t2t %s", c.line, strings.Join(args, " "))
	return cmd, ""
}

// waitReadmeCmd waits for cmd (a hang guard of 5 minutes) and returns a
// problem unless it exits 0.
func waitReadmeCmd(c readmeCmd, cmd *exec.Cmd) string {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Minute):
		cmd.Process.Kill()
		err = fmt.Errorf("still running after 5 minutes (killed): %w", <-done)
	}
	if err != nil {
		return fmt.Sprintf("README line %d: t2t %s: %v\n%s", c.line, strings.Join(cmd.Args[1:], " "), err, lastLines(cmd.Stdout.(*bytes.Buffer).String(), 20))
	}
	return ""
}

func lastLines(s string, n int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(l[max(0, len(l)-n):], "\n")
}

// checkReadme is the whole README test of text: its flags, then its runs.
func checkReadme(t *testing.T, text string) []string {
	blocks := parseReadme(text)
	problems := checkReadmeFlags(blocks)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return append(problems, runReadmeBlocks(t, blocks, nodeBinary(t), repo)...)
}

func TestREADMECommands(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the README's commands")
	}
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range checkReadme(t, string(text)) {
		t.Error(p)
	}
}

// TestREADMETestCatchesDrift is the test of the test: a README copy with a
// flag that does not exist, and one with a command that fails, have
// problems naming their lines.
func TestREADMETestCatchesDrift(t *testing.T) {
	for _, tc := range []struct{ readme, want string }{
		{"# x\n\n```sh\nt2t env gen --seed 1 --bogus-flag 3\n```\n", "README line 4: t2t env gen has no flag --bogus-flag"},
		{"Synopsis:\n```\nt2t train [--stagez 8]\n```\n", "README line 3: t2t train has no flag --stagez"},
		{"```sh\nt2t env check --instance missing.jsonl --plan p.txt\n```\n", "README line 2: t2t env check --instance missing.jsonl --plan p.txt: exit status 2"},
		{"```sh\nmake lint\n```\n", `README line 2: "make lint" is not a t2t command`},
		{"<!-- readme-test: skip -->\n```sh\nt2t help\n```\n", "README line 1: annotation: skip without a reason"},
	} {
		problems := strings.Join(checkReadme(t, tc.readme), "\n")
		if !strings.Contains(problems, tc.want) {
			t.Errorf("README copy %q: problems %q, want %q", tc.readme, problems, tc.want)
		}
	}
	ok := "<!-- readme-test: args --n 2 -->\n```sh\nt2t env gen --config configs/x.json --seed 1 --out x.jsonl # c\n```\n"
	if p := checkReadme(t, strings.Replace(ok, "--config configs/x.json ", "", 1)); len(p) != 0 {
		t.Errorf("a good README copy has problems: %q", p)
	}
}
