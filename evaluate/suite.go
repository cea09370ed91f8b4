package evaluate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/limits"
)

// Suite is a loaded evaluation suite: its instances in file order and,
// per line, the wait-ratio subset (0 when unknown). An instance may appear
// on several lines; each line counts where its subset says.
type Suite struct {
	// Name names the suite in the report.
	Name      string
	Instances []*env.Instance
	Subsets   []float64
	// lines holds each instance's file line (FileSuite); nil for a
	// generated suite.
	lines []int
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

// FileSuite makes a suite of the instances of the JSONL file at path,
// read with opt (at most limits.Text bytes), annotating those that are not
// solved. A line that is not an instance is a *fielderr.Error naming its file
// line; an instance the solver fails on is an error naming its line. The
// file's manifest (NAME.manifest.json beside NAME.jsonl, as t2t env suite
// writes it), when present, gives the subsets and must describe the file
// (its sha256 and instance count); a manifest that does not parse or does
// not match is a *fielderr.Error.
func FileSuite(path string, opt env.ReadOptions) (*Suite, error) {
	data, err := limits.ReadFile(path, limits.Text)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return nil, &fielderr.Error{File: path, Reason: pe.Err.Error()}
	} else if err != nil {
		return nil, err
	}
	manPath := manifestPath(path)
	man, err := limits.ReadFile(manPath, limits.Config)
	if errors.Is(err, os.ErrNotExist) {
		man = nil
	} else if err != nil {
		return nil, err
	}
	s, err := readSuite(path, data, man, opt)
	if err != nil {
		return nil, err
	}
	for i, in := range s.Instances {
		if !in.Solved() {
			if err := env.Annotate(in, env.SolveOptions{}); err != nil {
				return nil, fmt.Errorf("%s:%d: instance %s: %w", path, s.lines[i], in.ID, err)
			}
		}
	}
	return s, nil
}

// readSuite reads the suite file at path from data and its manifest from
// man (nil: none), as FileSuite describes, without annotating.
func readSuite(path string, data, man []byte, opt env.ReadOptions) (*Suite, error) {
	recs, err := env.ReadRecords(bytes.NewReader(data), opt)
	if err == nil {
		_, err = env.Instances(recs)
	}
	var le *env.LineError
	if errors.As(err, &le) {
		return nil, &fielderr.Error{File: path, Line: le.Line, Reason: le.Err.Error()}
	} else if err != nil {
		return nil, err
	}
	s := &Suite{Name: filepath.Base(path), Instances: make([]*env.Instance, len(recs)), Subsets: make([]float64, len(recs)), lines: make([]int, len(recs))}
	for i, r := range recs {
		s.Instances[i], s.lines[i] = r.Instance, r.Line
	}
	if man == nil {
		return s, nil
	}
	manPath := manifestPath(path)
	var m env.SuiteManifest
	if err := json.Unmarshal(man, &m); err != nil {
		return nil, &fielderr.Error{File: manPath, Reason: env.JSONReason(err).Error()}
	}
	sum := sha256.Sum256(data)
	if hex.EncodeToString(sum[:]) != m.SHA256 || m.Spec.Len() != len(recs) {
		return nil, &fielderr.Error{File: manPath, Reason: "does not describe " + path + " (sha256 or instance count differs)"}
	}
	lo := 0
	for i, g := range m.Spec.Groups {
		if g.Lo != lo || g.Count < 0 {
			return nil, &fielderr.Error{File: manPath, Reason: fmt.Sprintf("groups[%d] holds instances [%d,%d), want them to start at %d", i, g.Lo, g.Lo+g.Count, lo)}
		}
		lo += g.Count
	}
	s.Subsets = specSubsets(&m.Spec)
	return s, nil
}
