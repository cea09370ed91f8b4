package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// t2t runs the CLI in-process and returns its exit code, stdout and stderr.
func t2t(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

func TestEnvGenSolveCheckShowPrompt(t *testing.T) {
	dir := t.TempDir()
	gen := filepath.Join(dir, "gen.jsonl")
	sol := filepath.Join(dir, "sol.jsonl")
	if code, _, e := t2t(t, "env", "gen", "--n", "12", "--seed", "5", "--out", gen); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, e)
	}
	if code, _, e := t2t(t, "env", "solve", "--in", gen, "--out", sol); code != 0 {
		t.Fatalf("solve: exit %d: %s", code, e)
	}
	recs, err := readRecords(sol, env.ReadOptions{StrictIDs: true}, true)
	if err != nil {
		t.Fatal(err)
	}
	ins, _ := env.Instances(recs)
	if len(ins) != 12 {
		t.Fatalf("solve wrote %d instances, want 12", len(ins))
	}
	in := ins[0]
	if in.Paths == nil || in.SOC == 0 {
		t.Fatalf("solve did not add costs and paths: %+v", in)
	}
	// The optimal plan, written as text moves, checks valid and optimal.
	moves, err := env.PlanMoves(&env.Plan{Paths: in.Paths})
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(dir, "answer.txt")
	if err := os.WriteFile(planFile, []byte("<think>plan</think>\n"+env.FormatMoves(moves)), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, e := t2t(t, "env", "check", "--instance", sol, "--line", "1", "--plan", planFile)
	if code != 0 {
		t.Fatalf("check: exit %d: %s", code, e)
	}
	var res env.AnswerCheck
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("check output is not JSON: %v\n%s", err, out)
	}
	if !res.Valid || !res.Optimal || res.RAcc != 1 || res.SOC != in.SOC || len(res.Checks) != 8 || res.CleanAgents != len(in.Agents) {
		t.Fatalf("optimal plan judged %+v", res)
	}
	// A plan with one agent walking off the grid fails with located failures.
	bad := filepath.Join(dir, "bad.txt")
	os.WriteFile(bad, []byte(`{"paths":[[[0,0],[0,-1]]]}`), 0o644)
	code, out, e = t2t(t, "env", "check", "--instance", sol, "--line", "1", "--plan", bad)
	if code != 0 {
		t.Fatalf("check bad plan: exit %d: %s", code, e)
	}
	res = env.AnswerCheck{}
	json.Unmarshal([]byte(out), &res)
	if res.Valid || res.RAcc != 0 || len(res.Failures) == 0 || res.Checks["agent_count"] || res.CleanAgents != 0 {
		t.Fatalf("bad plan judged %+v", res)
	}
	for _, f := range []string{"ascii", "svg", "png"} {
		o := filepath.Join(dir, "pic."+f)
		if code, _, e := t2t(t, "env", "show", "--in", sol, "--line", "1", "--plan", "optimal", "--format", f, "--out", o); code != 0 {
			t.Fatalf("show %s: exit %d: %s", f, code, e)
		}
		b, _ := os.ReadFile(o)
		if len(b) < 50 {
			t.Fatalf("show %s wrote %d bytes", f, len(b))
		}
	}
	code, out, _ = t2t(t, "env", "prompt", "--in", sol, "--id", in.ID)
	if code != 0 || !strings.Contains(out, "<answer>") {
		t.Fatalf("prompt: exit %d, output lacks the answer format:\n%s", code, out)
	}
	// The styles a model is trained with: each its own prompt; an unknown one is refused.
	for style, want := range map[string]string{"full": "Agents, as (row, col):", "compact": ", offset ", "cells": "Holes:", "steps": "Tt: the cells of agents", "grid": "hole):\nr0 "} {
		if code, out, e := t2t(t, "env", "prompt", "--in", sol, "--id", in.ID, "--prompt", style); code != 0 || !strings.Contains(out, want) {
			t.Fatalf("prompt --prompt %s: exit %d, output lacks %q:\n%s%s", style, code, want, out, e)
		}
	}
	if code, _, e := t2t(t, "env", "prompt", "--in", sol, "--id", in.ID, "--prompt", "tiny"); code != 2 || !strings.Contains(e, "want full, compact, cells, steps or grid") {
		t.Fatalf("prompt --prompt tiny: exit %d: %s", code, e)
	}
}

func TestEnvBadInputExitsTwoNamingFileLineField(t *testing.T) {
	dir := t.TempDir()
	good := `{"width":3,"height":3,"grid":["...","...","..."],"agents":[{"start":[0,0],"goal":[2,2]}],"soc":0,"makespan":0,"needs_wait":false,"seed":0}`
	cases := []struct {
		name, line2, want string
	}{
		{"unknown field", `{"width":3,"height":3,"grid":["...","...","..."],"agents":[],"colour":1}`, `colour`},
		{"bad cell", strings.Replace(good, `"..."]`, `"..X"]`, 1), "grid[2][2]"},
		{"agent out of bounds", strings.Replace(good, `"goal":[2,2]`, `"goal":[5,2]`, 1), "agents[0].goal"},
		{"not json", `{"width":`, "bad.jsonl:2"},
		{"wrong type", strings.Replace(good, `"width":3`, `"width":"3"`, 1), "width"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := filepath.Join(dir, "bad.jsonl")
			os.WriteFile(p, []byte(good+"\n"+c.line2+"\n"), 0o644)
			code, _, e := t2t(t, "env", "prompt", "--in", p, "--line", "2")
			if code != 2 {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, e)
			}
			if !strings.Contains(e, "bad.jsonl:2") || !strings.Contains(e, c.want) || strings.Count(strings.TrimSpace(e), "\n") != 0 {
				t.Fatalf("stderr %q: want one line naming bad.jsonl:2 and %q", e, c.want)
			}
		})
	}
	cfg := filepath.Join(dir, "cfg.json")
	os.WriteFile(cfg, []byte(`{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":1.5,"wait_ratio":0}],"agents":2,"instances":4}`), 0o644)
	if code, _, e := t2t(t, "env", "gen", "--config", cfg); code != 2 || !strings.Contains(e, "hole_ratio") {
		t.Fatalf("config out of range: exit %d, stderr %q", code, e)
	}
	// Out-of-range and non-finite flags, and files over their size limit, are one-line usage
	// errors naming the flag or the file, not silent defaults or unbounded reads.
	okFile := filepath.Join(dir, "ok.jsonl")
	os.WriteFile(okFile, []byte(good+"\n"), 0o644)
	for _, args := range [][]string{
		{"env", "gen", "--n", "-7"}, {"env", "gen", "--workers", "10000000"}, {"env", "solve", "--in", cfg, "--max-nodes", "-5"},
		{"env", "suite", "--per-size", "-1"}, {"train", "--stages", "0"}, {"train", "--learner-batch", "0"}, {"train", "--rollouts", "0"},
		{"train", "--policy", "scripted", "--mistake-rate", "NaN"}, {"train", "--val-per-size", "0"}, {"model", "init", "--out", dir, "--rope-theta", "NaN"},
		{"env", "gen", "--config", "/dev/zero"}, {"train", "--config", "/dev/zero"}, {"env", "check", "--instance", okFile, "--plan", "/dev/zero"},
	} {
		code, _, e := t2t(t, args...)
		named := strings.Contains(e, args[len(args)-2]) || strings.Contains(e, args[len(args)-1]+": larger than")
		if code != 2 || strings.Count(strings.TrimSpace(e), "\n") != 0 || !named {
			t.Errorf("%v: exit %d, stderr %q: want 2 and one line naming %s", args, code, e, args[len(args)-2])
		}
	}
	// Costs in the file are not trusted: a forged soc is named against the solver's optimum.
	forged := filepath.Join(dir, "forged.jsonl")
	os.WriteFile(forged, []byte(strings.Replace(good, `"soc":0`, `"soc":7`, 1)+"\n"), 0o644)
	plan := filepath.Join(dir, "plan.txt")
	os.WriteFile(plan, []byte("agent 0: DOWN DOWN RIGHT RIGHT\n"), 0o644)
	if code, _, e := t2t(t, "env", "check", "--instance", forged, "--plan", plan); code != 2 || !strings.Contains(e, "says soc 7, its optimum is 4") {
		t.Errorf("forged soc: exit %d, stderr %q", code, e)
	}
	if code, _, _ := t2t(t, "env", "gen", "--bogus"); code != 2 {
		t.Fatalf("unknown flag: exit %d, want 2", code)
	}
	if code, _, _ := t2t(t, "nope"); code != 2 {
		t.Fatalf("unknown command: exit %d, want 2", code)
	}
	if code, out, _ := t2t(t, "env", "--help"); code != 0 || !strings.Contains(out, "suite") {
		t.Fatalf("env --help: exit %d, %q", code, out)
	}
}

func TestEnvSuiteWritesHashedFiles(t *testing.T) {
	dir := t.TempDir()
	code, out, e := t2t(t, "env", "suite", "--suites", "quick", "--per-size", "1", "--seed", "9", "--out", dir)
	if code != 0 {
		t.Fatalf("suite: exit %d: %s", code, e)
	}
	data, err := os.ReadFile(filepath.Join(dir, "quick.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var man env.SuiteManifest
	mb, _ := os.ReadFile(filepath.Join(dir, "quick.manifest.json"))
	if err := json.Unmarshal(mb, &man); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != man.SHA256 || !strings.Contains(out, man.SHA256) {
		t.Fatalf("manifest hash %s does not match the file", man.SHA256)
	}
	if man.Count != man.Spec.Len() || man.Count != bytes.Count(data, []byte("\n")) {
		t.Fatalf("manifest count %d, spec %d", man.Count, man.Spec.Len())
	}
}

// TestEnvSolveBatchWritesOneLinePerInstanceLine: an unsolvable line among
// solvable ones gives an error line naming its file line (blank lines
// counted) and exit status 3; a user's id is kept with its hash beside it;
// --strict-ids refuses it; selecting by a blank line names the line.
func TestEnvSolveBatchWritesOneLinePerInstanceLine(t *testing.T) {
	dir := t.TempDir()
	named := `{"id":"room-1","width":3,"height":3,"grid":["...","...","..."],"agents":[{"start":[0,0],"goal":[2,2]}]}`
	walled := `{"width":3,"height":3,"grid":[".H.","..H","..."],"agents":[{"start":[0,0],"goal":[0,2]}]}`
	plain := `{"width":3,"height":3,"grid":["...","...","..."],"agents":[{"start":[2,2],"goal":[0,0]}]}`
	in := filepath.Join(dir, "batch.jsonl")
	os.WriteFile(in, []byte("\n"+named+"\n\n"+walled+"\n"+plain+"\n"), 0o644)
	code, out, e := t2t(t, "env", "solve", "--in", in)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 3 || len(lines) != 3 || !strings.Contains(e, "1 of 3 instance lines failed") || !strings.Contains(e, "line 4: ") {
		t.Fatalf("exit %d, %d lines, stderr %q: want 3, 3 lines and the failed line named", code, len(lines), e)
	}
	var first env.Instance
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil || first.ID != "room-1" || first.SOC != 4 ||
		!strings.Contains(lines[0], `"hash":"`+first.ComputeID()+`"`) {
		t.Fatalf("first line %s (%v): want room-1 solved with its hash", lines[0], err)
	}
	var failed env.ErrorLine
	if err := json.Unmarshal([]byte(lines[1]), &failed); err != nil || failed.Line != 4 || !strings.Contains(failed.Error, "line 4: ") ||
		!strings.Contains(failed.Error, "no solution") {
		t.Fatalf("second line %s: want the error of line 4", lines[1])
	}
	if !strings.Contains(lines[2], `"soc":4`) {
		t.Fatalf("third line %s: want the last instance solved", lines[2])
	}
	code, out, _ = t2t(t, "env", "solve", "--in", in, "--strict-ids")
	if code != 3 || !strings.Contains(out, `{"error":"line 2: id = room-1: is not the content hash`) {
		t.Fatalf("--strict-ids: exit %d, output %s", code, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"env", "prompt", "--in", in, "--line", "3"}, "batch.jsonl:3: no instance on this line"},
		{[]string{"env", "prompt", "--in", in, "--strict-ids"}, "batch.jsonl:2: id = room-1: is not the content hash"},
	} {
		if code, _, e := t2t(t, tc.args...); code != 2 || !strings.Contains(e, tc.want) {
			t.Errorf("%v: exit %d, stderr %q: want 2 and %q", tc.args, code, e, tc.want)
		}
	}
	if code, out, e := t2t(t, "env", "prompt", "--in", in, "--id", "room-1"); code != 0 || !strings.Contains(out, "<answer>") {
		t.Errorf("prompt --id room-1: exit %d, %s", code, e)
	}
	// An exhausted node budget fails its own lines only.
	gen := filepath.Join(dir, "gen.jsonl")
	if code, _, e := t2t(t, "env", "gen", "--n", "16", "--seed", "3", "--out", gen); code != 0 {
		t.Fatalf("gen: exit %d: %s", code, e)
	}
	code, out, _ = t2t(t, "env", "solve", "--in", gen, "--max-nodes", "1")
	lines = strings.Split(strings.TrimSpace(out), "\n")
	budget := strings.Count(out, `{"error":"line `)
	if code != 3 || len(lines) != 16 || budget == 0 || budget == 16 || !strings.Contains(out, "budget exceeded") {
		t.Fatalf("--max-nodes 1: exit %d, %d lines, %d failed: want 3, 16 lines, some but not all failed", code, len(lines), budget)
	}
}
