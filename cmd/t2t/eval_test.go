package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/report"
)

var evalSeedFlag = flag.Uint64("evalseed", 0, "seed of the scripted policy's mistakes in the eval tests (0: a fixed default)")

func evalTestSeed(t *testing.T) uint64 {
	s := *evalSeedFlag
	if s == 0 {
		s = 11
	}
	t.Logf("scripted seed %d (replay with -evalseed %d)", s, s)
	return s
}

func readEvalJSON(t *testing.T, dir string) *report.Eval {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "eval.json"))
	if err != nil {
		t.Fatal(err)
	}
	e, err := report.ParseEvalJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

func readCacheLines(t *testing.T, path string) []evaluate.CacheLine {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []evaluate.CacheLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var l evaluate.CacheLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("cache line %q: %v", sc.Text(), err)
		}
		out = append(out, l)
	}
	return out
}

// TestEvalPerfectScriptedFillsTheSpec: without mistakes every answer is
// valid and optimal, and each cell holds exactly the suite spec's count.
func TestEvalPerfectScriptedFillsTheSpec(t *testing.T) {
	dir := t.TempDir()
	code, out, e := t2t(t, "eval", "--policy", "scripted", "--mistake-rate", "0", "--suite", "eval", "--per-size", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	ev := readEvalJSON(t, dir)
	if ev.Total.Episodes != 63 || ev.Total.Valid != 63 || ev.Total.Optimal != 63 {
		t.Fatalf("total %+v, want 63 valid and optimal", ev.Total)
	}
	// 3 agents: sizes 3..10; 4 agents: 4..10; 5 agents: 5..10; one
	// instance per subset.
	if len(ev.BySize) != 8+7+6 || len(ev.BySubset) != 9 {
		t.Fatalf("%d size cells, %d subset cells", len(ev.BySize), len(ev.BySubset))
	}
	for _, c := range ev.BySize {
		if c.Episodes != 3 || c.Valid != 3 || c.Optimal != 3 {
			t.Fatalf("cell %+v", c)
		}
	}
	for _, c := range ev.BySubset {
		if want := int64(10 - max(c.Agents, 3) + 1); c.Episodes != want {
			t.Fatalf("subset cell %+v, want %d episodes", c, want)
		}
	}
	if !strings.Contains(out, "| 3 | 100.0 / 100.0 |") {
		t.Fatalf("Markdown table missing from stdout:\n%s", out)
	}
	for _, f := range []string{"eval.md", "eval.csv", "eval.json", "eval.html", "size.svg", "failures.svg", evaluate.CacheFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
}

// TestEvalTablesMatchHandCount recounts the per-instance answers of the
// cache by suite line and compares with the written tables.
func TestEvalTablesMatchHandCount(t *testing.T) {
	seed := evalTestSeed(t)
	dir := t.TempDir()
	code, _, e := t2t(t, "eval", "--policy", "scripted", "--mistake-rate", "0.1", "--seed", fmt.Sprint(seed), "--suite", "eval", "--per-size", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	answers := map[string]evaluate.CacheLine{}
	for _, l := range readCacheLines(t, filepath.Join(dir, evaluate.CacheFile)) {
		answers[l.InstanceID] = l
	}
	spec := env.PaperEvalSpec(2026, 1)
	ins, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		agents, size int
		subset       float64
	}
	count := map[key][3]int64{}
	bump := func(k key, a evaluate.CacheLine) {
		c := count[k]
		c[0]++
		if a.Valid {
			c[1]++
		}
		if a.Optimal {
			c[2]++
		}
		count[k] = c
	}
	var invalid int64
	for _, g := range spec.Groups {
		for line := g.Lo; line < g.Lo+g.Count; line++ {
			a, ok := answers[ins[line].ID]
			if !ok {
				t.Fatalf("line %d (id %s) has no cached answer", line, ins[line].ID)
			}
			bump(key{g.Agents, g.Size, 0}, a)
			bump(key{g.Agents, 0, g.Subset}, a)
			if !a.Valid {
				invalid++
			}
		}
	}
	if invalid == 0 || invalid == int64(spec.Len()) {
		t.Fatalf("mistake rate 0.1 gave %d invalid of %d: the hand count would not discriminate", invalid, spec.Len())
	}
	ev := readEvalJSON(t, dir)
	for _, c := range append(ev.BySize, ev.BySubset...) {
		want := count[key{c.Agents, c.Size, c.Subset}]
		if [3]int64{c.Episodes, c.Valid, c.Optimal} != want {
			t.Fatalf("cell %+v: hand count %v", c, want)
		}
	}
	if len(ev.BySize)+len(ev.BySubset) != len(count) {
		t.Fatalf("%d cells written, %d counted", len(ev.BySize)+len(ev.BySubset), len(count))
	}
	// The CSV row of 3 agents on 3×3 says the same.
	c := count[key{3, 3, 0}]
	csvData, _ := os.ReadFile(filepath.Join(dir, "eval.csv"))
	if want := fmt.Sprintf("\nsize,3,3,,%d,%d,%d,", c[0], c[1], c[2]); !strings.Contains(string(csvData), want) {
		t.Fatalf("CSV lacks %q:\n%s", want, csvData)
	}
}

// TestEvalGridnetCheckpoint evaluates a saved gridnet and resumes from its
// cache with the same weights.
func TestEvalGridnetCheckpoint(t *testing.T) {
	net, err := gridnet.New("cpu", gridnet.Config{ObsSize: env.ObsSize(env.ObsRadius), Hidden: []int{16}, Seed: 3}, learner.DefaultGRPOConfig())
	if err != nil {
		t.Fatal(err)
	}
	ck := filepath.Join(t.TempDir(), "ck")
	if err := net.Save(ck); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	code, out, e := t2t(t, "eval", "--policy", "gridnet", "--checkpoint", ck, "--suite", "quick", "--per-size", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	ev := readEvalJSON(t, dir)
	if !strings.HasPrefix(ev.Policy, "gridnet@") || ev.Total.Episodes != 9 || !strings.Contains(out, "gridnet@") {
		t.Fatalf("policy %q, %d episodes", ev.Policy, ev.Total.Episodes)
	}
	code, _, e = t2t(t, "eval", "--policy", "gridnet", "--checkpoint", ck, "--suite", "quick", "--per-size", "1", "--out", dir)
	if code != 0 || !strings.Contains(e, "9 cached answers, 0 to play") {
		t.Fatalf("rerun: exit %d: %s", code, e)
	}
}

// TestEvalSuiteFileWithManifest reads a suite written by t2t env suite;
// its manifest supplies the subsets and must match the file.
func TestEvalSuiteFileWithManifest(t *testing.T) {
	dir := t.TempDir()
	if code, _, e := t2t(t, "env", "suite", "--suites", "eval", "--per-size", "1", "--out", dir); code != 0 {
		t.Fatalf("env suite: exit %d: %s", code, e)
	}
	out := t.TempDir()
	file := filepath.Join(dir, "eval.jsonl")
	if code, _, e := t2t(t, "eval", "--policy", "scripted", "--mistake-rate", "0", "--suite", file, "--out", out); code != 0 {
		t.Fatalf("eval: exit %d: %s", code, e)
	}
	ev := readEvalJSON(t, out)
	if !reflect.DeepEqual(ev.Subsets, []float64{0.25, 0.5, 0.75}) || ev.Total.Episodes != 63 {
		t.Fatalf("subsets %v, %d episodes", ev.Subsets, ev.Total.Episodes)
	}
	// A suite file that no longer matches its manifest is refused.
	data, _ := os.ReadFile(file)
	os.WriteFile(file, data[:bytes.IndexByte(data, '\n')+1], 0o644)
	if code, _, e := t2t(t, "eval", "--policy", "scripted", "--suite", file, "--out", t.TempDir()); code != 2 || !strings.Contains(e, "manifest") {
		t.Fatalf("tampered suite: exit %d: %s", code, e)
	}
}

func TestEvalBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"eval", "--policy", "scripted"},
		{"eval", "--policy", "gridnet", "--out", t.TempDir()},
		{"eval", "--policy", "nosuch", "--out", t.TempDir()},
		{"eval", "--policy", "rows-first", "--prompt", "cells", "--out", t.TempDir()},
		{"eval", "--policy", "scripted", "--suite", "nosuch", "--out", t.TempDir()},
		{"eval", "--policy", "gridnet", "--checkpoint", t.TempDir(), "--out", t.TempDir()},
	} {
		if code, _, _ := t2t(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2", args, code)
		}
	}
	// A corrupt complete line in the cache is reported with its line.
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, evaluate.CacheFile), []byte("{\"policy\":\"x\",\"instance_id\":\"a\"}\nnot json\n"), 0o644)
	if code, _, e := t2t(t, "eval", "--policy", "scripted", "--suite", "quick", "--per-size", "1", "--out", dir); code != 2 || !strings.Contains(e, evaluate.CacheFile+":2") {
		t.Fatalf("corrupt cache: exit %d: %s", code, e)
	}
}

// TestEvalRowsFirst: t2t eval --policy rows-first tallies the blind baseline on the paper's
// suite: its valid count is the hand count of env.ManhattanPlan over the suite's lines, and the
// breakdown names holes and conflicts, the checks it is blind to.
func TestEvalRowsFirst(t *testing.T) {
	dir := t.TempDir()
	code, out, e := t2t(t, "eval", "--policy", "rows-first", "--suite", "eval", "--per-size", "1", "--out", dir)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	spec := env.PaperEvalSpec(2026, 1)
	ins, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		t.Fatal(err)
	}
	var valid int64
	for _, in := range ins {
		var rep env.Report
		env.Verify(in, env.ManhattanPlan(in), &rep)
		if rep.Valid {
			valid++
		}
	}
	ev := readEvalJSON(t, dir)
	if ev.Policy != "rows-first" || ev.Total.Episodes != int64(len(ins)) || ev.Total.Valid != valid {
		t.Fatalf("policy %q: %d episodes, %d valid; want rows-first, %d, %d", ev.Policy, ev.Total.Episodes, ev.Total.Valid, len(ins), valid)
	}
	if valid == 0 || ev.Total.Failures["hole"] == 0 || ev.Total.Failures["conflict"] == 0 {
		t.Fatalf("valid %d, failures %v: the baseline should pass some and fail holes and conflicts", valid, ev.Total.Failures)
	}
	if !strings.Contains(out, "rows-first") {
		t.Fatalf("the report does not name the policy:\n%s", out)
	}
}
