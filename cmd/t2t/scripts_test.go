package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// scriptCheck is one script the flag check runs: its path from the repository root, its
// arguments and environment, and the fewest t2t calls it must make (so that a script that
// stopped early does not pass by checking nothing).
type scriptCheck struct {
	path     string
	args     []string
	env      []string
	minCalls int
}

// TestScriptsUseRealFlags runs the GPU check and recipe scripts with
// scripts/gpu-check/flagcheck.sh standing in for t2t: every t2t call they make names a
// subcommand and flags this t2t has. A device session is scarce; a flag a script passes and t2t
// dropped would be found only there.
func TestScriptsUseRealFlags(t *testing.T) {
	root, bin, shim := flagCheckSetup(t)
	dir := t.TempDir()
	for _, s := range []scriptCheck{
		{"scripts/gpu-check/run.sh", []string{shim}, nil, 12},
		{"scripts/gpu-check/trainee.sh", []string{shim}, []string{"FLAGCHECK=1"}, 18},
		{"scripts/llm-recipe/trainee.sh", nil, []string{"CHUNKS=2"}, 4},
		{"scripts/gpu-check/trainee.sh", []string{shim}, []string{"FLAGCHECK=1", "PROMPT=compact", "REWARD_PARTIAL=0.2", "GRPO_LR=1e-4"}, 18},
		{"scripts/llm-recipe/trainee.sh", nil, []string{"CHUNKS=1", "PROMPT=cells"}, 3},
		{"scripts/llm-recipe/trainee.sh", nil, []string{"CHUNKS=1", "PROMPT=grid"}, 3},
		{"scripts/llm-recipe/trainee.sh", nil, []string{"CHUNKS=1", "PROMPT=steps"}, 3},
		{"scripts/llm-recipe/trainee.sh", nil, []string{"CHUNKS=1", "PROMPT=cells", "TARGET=prioritized", "WAIT_RATIO=0.75"}, 3},
		{"scripts/gpu-check/trainee.sh", []string{shim}, []string{"FLAGCHECK=1", "PROMPT=steps"}, 18},
		{"scripts/gpu-check/trainee.sh", []string{shim}, []string{"FLAGCHECK=1", "TARGET=prioritized", "WAIT_RATIO=0.75"}, 18},
		{"scripts/llm-recipe/trainee-compare.sh", nil, []string{"MODEL=" + filepath.Join(dir, "m"), "PROMPT=steps"}, 1},
		{"scripts/llm-recipe/grpo.sh", nil, []string{"MODEL=" + filepath.Join(dir, "m"), "REDIS=redis://127.0.0.1:1/0"}, 7},
		{"scripts/llm-recipe/compare.sh", nil, []string{"MODEL=" + filepath.Join(dir, "m")}, 1},
		{"scripts/llm-recipe/trainee-compare.sh", nil, []string{"MODEL=" + filepath.Join(dir, "m")}, 1},
		{"scripts/llm-recipe/trainee-compare.sh", nil, []string{"MODEL=" + filepath.Join(dir, "m"), "PROMPT=compact", "LR=1e-4", "THREADS=2"}, 1},
		{"scripts/engineer-histories/record.sh", nil, []string{"REDIS=redis://127.0.0.1:1/0", "OUT=" + filepath.Join(dir, "h.jsonl")}, 2},
		{"scripts/engineer-histories/record.sh", nil, []string{"REDIS=redis://127.0.0.1:1/0", "OUT=" + filepath.Join(dir, "h2.jsonl"),
			"POLICY=qwen3", "MODEL=" + filepath.Join(dir, "m")}, 2},
	} {
		t.Run(filepath.Base(filepath.Dir(s.path))+"/"+filepath.Base(s.path)+strings.Join(s.env, ","), func(t *testing.T) {
			log := filepath.Join(t.TempDir(), "calls.log")
			cmd := exec.Command("bash", append([]string{filepath.Join(root, s.path)}, s.args...)...)
			cmd.Dir = t.TempDir()
			cmd.Env = append(os.Environ(), append([]string{"REAL_T2T=" + bin, "FLAGCHECK_LOG=" + log, "T2T=" + shim,
				"OUT=" + filepath.Join(cmd.Dir, "out")}, s.env...)...)
			out, _ := cmd.CombinedOutput() // the scripts go on past the calls that wrote nothing; the log is the verdict
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatalf("no t2t call was checked (%v); the script said:\n%s", err, out)
			}
			calls := strings.Split(strings.TrimSpace(string(b)), "\n")
			for _, c := range calls {
				if !strings.HasPrefix(c, "ok: ") {
					t.Errorf("%s: %s", s.path, c)
				}
			}
			if len(calls) < s.minCalls {
				t.Errorf("%s: %d t2t calls checked, want at least %d; the script said:\n%s", s.path, len(calls), s.minCalls, out)
			}
		})
	}
}

// TestFlagCheckFindsBadFlags: the stand-in reports a flag the subcommand does not have, with
// = or without, and a subcommand t2t does not have; a good call is one "ok" line.
func TestFlagCheckFindsBadFlags(t *testing.T) {
	_, bin, shim := flagCheckSetup(t)
	log := filepath.Join(t.TempDir(), "calls.log")
	for _, args := range [][]string{
		{"bench", "grpo", "--preset", "tiny", "--no-such-flag", "1", "--micro-batch=2"},
		{"train", "--stages", "1", "--eval-before=false"},
		{"no-such-command", "--x"},
		{"model", "init", "--preset", "tiny", "--out", "x"},
	} {
		cmd := exec.Command("bash", append([]string{shim}, args...)...)
		cmd.Env = append(os.Environ(), "REAL_T2T="+bin, "FLAGCHECK_LOG="+log)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("flagcheck.sh %v: %v\n%s", args, err, out)
		}
	}
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	want := "t2t bench grpo: no flag --no-such-flag\nt2t train: no flag --eval-before\nunknown subcommand: t2t no-such-command\nok: t2t model init\n"
	if string(b) != want {
		t.Fatalf("the check wrote:\n%s\nwant:\n%s", b, want)
	}
}

// flagCheckSetup skips without bash (the scripts are bash and sh) and
// returns the repository root, the t2t binary and the flagcheck.sh
// stand-in.
func flagCheckSetup(t *testing.T) (root, bin, shim string) {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash: the scripts are bash and sh")
	}
	bin = nodeBinary(t)
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	return root, bin, filepath.Join(root, "scripts/gpu-check/flagcheck.sh")
}
