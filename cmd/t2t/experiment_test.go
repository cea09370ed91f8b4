package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"image/png"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/report"
)

// TestExperimentTiny runs 2 strategies × 2 seeds × 2 stages of gridnet on
// tiny budgets, checks the report files, renders the HTML in headless
// Chromium, and reruns to check that finished runs are reused.
func TestExperimentTiny(t *testing.T) {
	dir := t.TempDir()
	args := []string{"experiment", "--strategies", "fixed,rules", "--seeds", "2", "--stages", "2", "--instances", "32",
		"--eval-per-size", "1", "--val-per-size", "1", "--group", "4", "--learner-batch", "8", "--hidden", "32", "--out", dir}
	code, out, e := t2t(t, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, e, out)
	}
	for _, want := range []string{"[1/4] fixed seed 1", "[4/4] rules seed 2", "  [rules s2]  init |", "## Final results", "| rules | 2 |"} {
		if !strings.Contains(out, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, out)
		}
	}
	jb, err := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if err != nil {
		t.Fatal(err)
	}
	exp, err := report.ParseExperimentJSON(jb)
	if err != nil {
		t.Fatal(err)
	}
	if len(exp.Runs) != 4 || exp.Baseline != "fixed" {
		t.Fatalf("%d runs, baseline %q", len(exp.Runs), exp.Baseline)
	}
	for _, r := range exp.Runs {
		if len(r.Stages) != 2 || r.Initial.Stage != -1 || len(r.Initial.Eval) != 3 {
			t.Fatalf("run %s: %d stages, initial %+v", r.RunID, len(r.Stages), r.Initial)
		}
		s0, s1 := r.Stages[0], r.Stages[1]
		if s0.Proposer != "initial" || s1.Proposer != r.Strategy || s1.Config == nil || s1.Config.Hash() != s1.ConfigVersion {
			t.Fatalf("run %s: stage configs not from the store: %+v / %+v", r.RunID, s0, s1)
		}
		if s1.Rationale == "" || len(s1.Audit) == 0 || !s1.Audit[len(s1.Audit)-1].Accepted {
			t.Fatalf("run %s: stage 1 rationale %q audit %+v", r.RunID, s1.Rationale, s1.Audit)
		}
		if s1.Val.Episodes != 8 || s1.Eval[3].Episodes != 24 {
			t.Fatalf("run %s: val %d episodes, 3 agents %d", r.RunID, s1.Val.Episodes, s1.Eval[3].Episodes)
		}
	}
	// Same seed, same untrained policy, whatever the strategy.
	if a, b := exp.Runs[0], exp.Runs[1]; a.Seed != b.Seed || a.Initial.Val != b.Initial.Val {
		t.Fatalf("initial evaluations differ for seed %d: %+v vs %+v", a.Seed, a.Initial.Val, b.Initial.Val)
	}
	for _, f := range []string{"experiment.html", "experiment.md", "experiment.csv", "summary.csv", "runs.csv"} {
		if st, err := os.Stat(filepath.Join(dir, f)); err != nil || st.Size() == 0 {
			t.Fatalf("%s: %v", f, err)
		}
	}
	html, _ := os.ReadFile(filepath.Join(dir, "experiment.html"))
	counts := expXMLCount(t, html)
	if counts["table"] < 2 || counts["svg"] < 8 || counts["script"] != 0 || counts["link"] != 0 {
		t.Fatalf("HTML elements: %v", counts)
	}
	t.Run("chromium", func(t *testing.T) { expChromium(t, filepath.Join(dir, "experiment.html")) })

	// A rerun reuses every finished run and writes the same report.
	code, out2, e := t2t(t, args...)
	if code != 0 || strings.Count(out2, ": reusing ") != 4 {
		t.Fatalf("rerun: exit %d: %s\n%s", code, e, out2)
	}
	jb2, _ := os.ReadFile(filepath.Join(dir, "experiment.json"))
	if !bytes.Equal(jb, jb2) {
		t.Fatal("rerun wrote a different experiment.json")
	}

	// Another suite seed is another experiment: nothing is reused, and the
	// report names the seed.
	held := append(append([]string{}, args...), "--suite-seed", "7")
	code, out3, e := t2t(t, held...)
	if code != 0 || strings.Contains(out3, ": reusing ") {
		t.Fatalf("--suite-seed 7: exit %d: %s\n%s", code, e, out3)
	}
	jb3, _ := os.ReadFile(filepath.Join(dir, "experiment.json"))
	exp3, err := report.ParseExperimentJSON(jb3)
	if err != nil || exp3.Budget.SuiteSeed != 7 || exp.Budget.SuiteSeed != 2026 {
		t.Fatalf("suite seeds %d then %d (%v)", exp.Budget.SuiteSeed, exp3.Budget.SuiteSeed, err)
	}
}

// expXMLCount parses the page strictly as XML (it is polyglot markup) and
// counts elements by name.
func expXMLCount(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	d := xml.NewDecoder(bytes.NewReader(doc))
	d.Strict = true
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return counts
		}
		if err != nil {
			t.Fatalf("HTML is not well-formed: %v", err)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
		}
	}
}

// expChromium opens the page in headless Chromium: the rendered DOM must
// hold the tables and the inline SVG charts, and a screenshot must not be
// blank. Without Chromium the test is skipped, unless
// T2T_REQUIRE_CHROMIUM=1.
func expChromium(t *testing.T, page string) {
	bin := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			bin = p
			break
		}
	}
	if bin == "" {
		if os.Getenv("T2T_REQUIRE_CHROMIUM") == "1" {
			t.Fatal("chromium not found and T2T_REQUIRE_CHROMIUM=1 (apt-get install -y chromium)")
		}
		t.Skip("chromium not found: skipping the headless browser check (apt-get install -y chromium; T2T_REQUIRE_CHROMIUM=1 makes this a failure)")
	}
	abs, err := filepath.Abs(page)
	if err != nil {
		t.Fatal(err)
	}
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
		"--disable-component-update", "--disable-sync"}
	chrome := func(extra ...string) []byte {
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		args := append(append(append([]string{}, base...), "--user-data-dir="+t.TempDir()), extra...)
		args = append(args, "file://"+abs)
		cmd := exec.CommandContext(ctx, bin, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %v: %v\n%s", bin, extra, err, stderr.String())
		}
		return stdout.Bytes()
	}
	dom := string(chrome("--dump-dom"))
	for _, want := range []string{"<table", "<svg", "<polyline", "Final results", "Engineer rationale"} {
		if !strings.Contains(dom, want) {
			t.Fatalf("rendered DOM lacks %q:\n%.2000s", want, dom)
		}
	}
	if n := strings.Count(dom, "<svg"); n < 8 {
		t.Fatalf("rendered DOM has %d svg elements, want at least 8", n)
	}
	shot := filepath.Join(t.TempDir(), "page.png")
	chrome("--window-size=1280,1600", "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatalf("no screenshot: %v", err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	colors := map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 7 {
		for x := b.Min.X; x < b.Max.X; x += 7 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colors[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if len(colors) < 8 {
		t.Fatalf("screenshot looks blank: %d distinct colours", len(colors))
	}
	t.Logf("screenshot %dx%d, %d distinct colours sampled", b.Dx(), b.Dy(), len(colors))
}

func TestExperimentBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"experiment", "--strategies", "fixed"},
		{"experiment", "--strategies", "llm", "--out", t.TempDir()},
		{"experiment", "--strategies", "fixed", "--seeds", "0", "--out", t.TempDir()},
		{"experiment", "--strategies", "fixed", "--policy", "nosuch", "--out", t.TempDir()},
		{"experiment", "--strategies", "fixed", "--policy", "qwen3", "--reward-partial", "0.3", "--out", t.TempDir()},
	} {
		if code, _, e := t2t(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		} else if slices.Contains(args, "--reward-partial") && !strings.Contains(e, "--reward-partial 0.3: must be in [0,0.3)") {
			t.Errorf("%v: %s", args, e)
		}
	}
}
