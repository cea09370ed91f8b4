package evaluate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// Suite is a loaded evaluation suite: its instances in file order and,
// per line, the wait-ratio subset (0 when unknown). An instance may appear
// on several lines; each line counts where its subset says.
type Suite struct {
	// Name names the suite in the report.
	Name      string
	Instances []*env.Instance
	Subsets   []float64
}

// GenerateSuite generates a named suite (env.SuiteSized gives its spec) on
// workers goroutines (0: one per CPU). Its name in the report is "NAME
// (seed S, N instances)".
func GenerateSuite(spec *env.SuiteSpec, workers int, progress Progress) (*Suite, error) {
	s := &Suite{
		Name:      fmt.Sprintf("%s (seed %d, %d instances)", spec.Name, spec.Seed, spec.Len()),
		Instances: make([]*env.Instance, spec.Len()),
	}
	err := parallel(spec.Len(), workers, "suite "+spec.Name, progress, func(lo, hi int) error {
		part, err := env.GenerateSuite(spec, lo, hi)
		copy(s.Instances[lo:hi], part)
		return err
	})
	if err != nil {
		return nil, err
	}
	s.Subsets = specSubsets(spec)
	return s, nil
}

// specSubsets returns each suite line's wait-ratio subset.
func specSubsets(spec *env.SuiteSpec) []float64 {
	out := make([]float64, spec.Len())
	for _, g := range spec.Groups {
		for i := g.Lo; i < g.Lo+g.Count; i++ {
			out[i] = g.Subset
		}
	}
	return out
}

// manifestPath is where a suite file's manifest lies, as t2t env suite
// writes it: NAME.manifest.json beside NAME.jsonl.
func manifestPath(path string) string {
	return strings.TrimSuffix(path, ".jsonl") + ".manifest.json"
}

// FileSuite makes a suite of the instances read from the JSONL file at
// path, annotating those that are not solved. The file's manifest
// (NAME.manifest.json beside NAME.jsonl, as t2t env suite writes it),
// when present, gives the subsets and must describe the
// file (its sha256 and instance count); a manifest that does not parse or
// does not match is an *InputError.
func FileSuite(path string, ins []*env.Instance) (*Suite, error) {
	for i, in := range ins {
		if !in.Solved() {
			if err := env.Annotate(in, env.SolveOptions{}); err != nil {
				return nil, fmt.Errorf("%s: instance %d (id %s): %w", path, i+1, in.ID, err)
			}
		}
	}
	s := &Suite{Name: filepath.Base(path), Instances: ins, Subsets: make([]float64, len(ins))}
	manPath := manifestPath(path)
	mb, err := os.ReadFile(manPath)
	if errors.Is(err, os.ErrNotExist) {
		return s, nil
	}
	if err != nil {
		return nil, err
	}
	var man env.SuiteManifest
	if err := json.Unmarshal(mb, &man); err != nil {
		return nil, &InputError{File: manPath, Reason: env.JSONReason(err).Error()}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != man.SHA256 || man.Spec.Len() != len(ins) {
		return nil, &InputError{File: manPath, Reason: "does not describe " + path + " (sha256 or instance count differs)"}
	}
	s.Subsets = specSubsets(&man.Spec)
	return s, nil
}
