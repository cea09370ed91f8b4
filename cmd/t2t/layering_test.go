package main

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// coreAllowed lists the t2t packages that env, actors and cluster (and the
// packages under them) may depend on, besides their own trees: leaves of
// internal/ that import only the standard library (and each other). The
// simulator, the actor runtime and the membership layer stay free of the
// learner, train and cmd; internal/fielderr is how they report a bad field.
var coreAllowed = map[string]bool{
	"internal/fielderr": true,
	"internal/jsonl":    true,
	"internal/limits":   true,
	"internal/regfile":  true,
}

// TestCorePackagesImportOnlyLeaves: go list -deps of ./env/..., ./actors/...
// and ./cluster/... names no t2t package outside those trees but the
// leaves in coreAllowed, and those leaves depend on no other t2t package.
func TestCorePackagesImportOnlyLeaves(t *testing.T) {
	const mod = "github.com/t2t-lab/t2t/"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}",
		"../../env/...", "../../actors/...", "../../cluster/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		pkg := strings.TrimPrefix(f[0], mod)
		root, _, _ := strings.Cut(pkg, "/")
		for _, d := range f[1:] {
			rel, ok := strings.CutPrefix(d, mod)
			if !ok || rel == root || strings.HasPrefix(rel, root+"/") {
				continue
			}
			if !coreAllowed[rel] {
				t.Errorf("%s depends on %s: env, actors and cluster may import only %v of t2t", pkg, rel, slices.Sorted(maps.Keys(coreAllowed)))
			}
		}
	}
	leaves := []string{}
	for p := range coreAllowed {
		leaves = append(leaves, "../../"+p)
	}
	out, err = exec.Command("go", append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, leaves...)...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, d := range f[1:] {
			if rel, ok := strings.CutPrefix(d, mod); ok && !coreAllowed[rel] {
				t.Errorf("%s, allowed in env, actors and cluster, depends on %s", f[0], rel)
			}
		}
	}
}

// engineFree lists the packages that reach models only through engine.Open and gridnet.New,
// so they build without a tensor library: no GoMLX package, and neither GoMLX engine package
// of t2t, is among their dependencies (the program links the engines: learner/engines).
var engineFree = []string{"rolloutengine", "evaluate", "experiment", "train", "daemon", "serve", "learner/textpolicy"}

// TestRunPackagesImportNoGoMLX: go list -deps of the packages in engineFree names no
// github.com/gomlx package, no learner/qwen3, learner/gomlxtrain or learner/gridnet/gomlxnet;
// and learner/torch does not depend on learner/qwen3 (the seam speaks its own types).
func TestRunPackagesImportNoGoMLX(t *testing.T) {
	const mod = "github.com/t2t-lab/t2t/"
	banned := func(d string) bool {
		return strings.HasPrefix(d, "github.com/gomlx/") || d == mod+"learner/qwen3" ||
			d == mod+"learner/gomlxtrain" || d == mod+"learner/gridnet/gomlxnet"
	}
	args := []string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}
	for _, p := range engineFree {
		args = append(args, "../../"+p)
	}
	out, err := exec.Command("go", append(args, "../../learner/torch")...).Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for line := range strings.SplitSeq(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for _, d := range f[1:] {
			if banned(d) {
				t.Errorf("%s depends on %s: it must reach models through engine.Open and gridnet.New only", f[0], d)
				break
			}
		}
	}
}
