package env

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
)

// SuiteGroup is one cell of a benchmark suite: Count instances with the
// same agent count, map size, hole ratio and wait ratio. WaitRatio·Count is
// a whole number, so the generator's stratification makes the share of
// needs_wait instances exact.
type SuiteGroup struct {
	Agents    int     `json:"agents"`
	Size      int     `json:"size"`
	HoleRatio float64 `json:"hole_ratio"`
	WaitRatio float64 `json:"wait_ratio"`
	// Subset is the wait-ratio subset the group belongs to (0.25, 0.50 or
	// 0.75 in the paper's suite); it labels the tables.
	Subset float64 `json:"subset"`
	Count  int     `json:"count"`
	// Lo is the group's first line in the suite file (0-based); the group
	// holds lines [Lo, Lo+Count).
	Lo int `json:"lo"`
}

// SuiteSpec describes a benchmark suite: a name, a seed and its groups in
// file order.
type SuiteSpec struct {
	Name   string       `json:"name"`
	Seed   uint64       `json:"seed"`
	Groups []SuiteGroup `json:"groups"`
}

// Len is the number of instances in the suite.
func (s *SuiteSpec) Len() int {
	n := 0
	for _, g := range s.Groups {
		n += g.Count
	}
	return n
}

// Suite names accepted by SuiteByName.
const (
	SuiteEval  = "eval"
	SuiteVal   = "val"
	SuiteQuick = "quick"
)

// PaperHoleRatios are the hole ratios of the paper's evaluation suite.
var paperHoleRatios = [...]float64{0.1, 0.2, 0.3, 0.4, 0.5}

// PaperEvalSpec is the paper-shaped evaluation suite: 3, 4 and 5 agents;
// sizes k..10 for k agents; wait-ratio subsets 0.25, 0.50 and 0.75; perSize
// instances per (agents, size, subset) spread evenly over the hole ratios
// 0.1..0.5 that the size can hold (see feasibleHoles). With perSize = 50 it
// holds 3,150 instances.
func PaperEvalSpec(seed uint64, perSize int) SuiteSpec {
	return buildSpec(SuiteEval, seed, []int{3, 4, 5}, PaperMaxSize, []float64{0.25, 0.50, 0.75}, paperHoleRatios[:], perSize)
}

// ValidationSpec is the fixed validation set used after every stage: the
// training distribution's agent count (2), sizes 3..10, wait subset 0.5,
// perSize instances per size over the hole ratios 0.1..0.5.
func ValidationSpec(seed uint64, perSize int) SuiteSpec {
	return buildSpec(SuiteVal, seed, []int{2}, PaperMaxSize, []float64{0.5}, paperHoleRatios[:], perSize)
}

// QuickSpec is a small suite for tests and smoke runs: 3, 4 and 5 agents,
// sizes k..6, wait subset 0.5, hole ratios 0.1 and 0.3, perSize instances
// per (agents, size).
func QuickSpec(seed uint64, perSize int) SuiteSpec {
	return buildSpec(SuiteQuick, seed, []int{3, 4, 5}, 6, []float64{0.5}, []float64{0.1, 0.3}, perSize)
}

// SuiteByName returns the named suite's spec with its default size (eval:
// 50 per size per subset; val: 20 per size; quick: 4 per size).
func SuiteByName(name string, seed uint64) (SuiteSpec, error) {
	switch name {
	case SuiteEval:
		return PaperEvalSpec(seed, 50), nil
	case SuiteVal:
		return ValidationSpec(seed, 20), nil
	case SuiteQuick:
		return QuickSpec(seed, 4), nil
	}
	return SuiteSpec{}, &FieldError{Field: "suite", Value: name, Reason: `want "eval", "val" or "quick"`}
}

// buildSpec lays out the groups. For each (agents, size, subset) it splits
// perSize instances over the hole ratios as evenly as possible, and spreads
// round(subset·perSize) needs_wait instances over those hole groups, earlier
// groups taking the remainder, so that each group's wait count is whole.
func buildSpec(name string, seed uint64, agents []int, maxSize int, subsets, holes []float64, perSize int) SuiteSpec {
	spec := SuiteSpec{Name: name, Seed: seed}
	lo := 0
	for _, k := range agents {
		for size := max(k, PaperMinSize); size <= maxSize; size++ {
			hs := feasibleHoles(k, size, holes)
			if len(hs) == 0 {
				continue
			}
			for _, sub := range subsets {
				counts := spread(perSize, len(hs))
				waits := spread(int(math.Round(sub*float64(perSize))), len(hs))
				for h, hr := range hs {
					if counts[h] == 0 {
						continue
					}
					w := min(waits[h], counts[h])
					spec.Groups = append(spec.Groups, SuiteGroup{
						Agents: k, Size: size, HoleRatio: hr, Subset: sub, Count: counts[h],
						WaitRatio: float64(w) / float64(counts[h]), Lo: lo,
					})
					lo += counts[h]
				}
			}
		}
	}
	return spec
}

// feasibleHoles keeps the hole ratios that the generator can honour for k
// agents on a size×size grid (CheckFeasible); on small grids the highest
// ratios leave too few free cells for 2k distinct starts and goals.
func feasibleHoles(k, size int, holes []float64) []float64 {
	var out []float64
	for _, h := range holes {
		cfg := Config{Sizes: []SizeConfig{{Size: size, DataRatio: 1, HoleRatio: h, WaitRatio: 0.5}}, Agents: k, Instances: 2}
		if CheckFeasible(cfg) == nil {
			out = append(out, h)
		}
	}
	return out
}

// spread splits n into k near-equal parts, earlier parts taking the extra.
func spread(n, k int) []int {
	out := make([]int, k)
	for i := range out {
		out[i] = n / k
		if i < n%k {
			out[i]++
		}
	}
	return out
}

// GroupConfig is the generator config that produces group g.
func (g SuiteGroup) GroupConfig() Config {
	return Config{
		Sizes:     []SizeConfig{{Size: g.Size, DataRatio: 1, HoleRatio: g.HoleRatio, WaitRatio: g.WaitRatio}},
		Agents:    g.Agents,
		Instances: g.Count,
	}
}

// groupSeed derives a group's generator seed from the suite seed and the
// group's position, so groups are independent and the suite is the same on
// every machine.
func (s *SuiteSpec) groupSeed(gi int) uint64 {
	var b [24]byte
	binary.LittleEndian.PutUint64(b[0:], s.Seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(gi))
	copy(b[16:], "t2tsuite")
	sum := sha256.Sum256(b[:])
	return binary.LittleEndian.Uint64(sum[:8])
}

// Locate maps a suite line to its group index and the index within it.
func (s *SuiteSpec) Locate(line int) (group, index int, ok bool) {
	for gi, g := range s.Groups {
		if line >= g.Lo && line < g.Lo+g.Count {
			return gi, line - g.Lo, true
		}
	}
	return 0, 0, false
}

// GenerateSuite returns suite lines [lo, hi). Each instance depends only on
// the spec and its line, so callers may generate disjoint ranges in
// parallel and concatenate them.
func GenerateSuite(spec *SuiteSpec, lo, hi int) ([]*Instance, error) {
	if lo < 0 || hi > spec.Len() || lo > hi {
		return nil, &FieldError{Field: "range", Value: fmt.Sprintf("[%d,%d)", lo, hi), Reason: fmt.Sprintf("suite %s has %d instances", spec.Name, spec.Len())}
	}
	out := make([]*Instance, 0, hi-lo)
	for line := lo; line < hi; line++ {
		gi, idx, _ := spec.Locate(line)
		g := spec.Groups[gi]
		in, err := GenerateOne(g.GroupConfig(), spec.groupSeed(gi), idx)
		if err != nil {
			return nil, fmt.Errorf("suite %s line %d (agents %d, size %d, holes %.2f): %w", spec.Name, line, g.Agents, g.Size, g.HoleRatio, err)
		}
		out = append(out, in)
	}
	return out, nil
}

// SuiteManifest is written next to a suite file: its spec and the SHA-256
// of the JSONL file's bytes.
type SuiteManifest struct {
	Spec   SuiteSpec `json:"spec"`
	Count  int       `json:"count"`
	SHA256 string    `json:"sha256"`
}

// EncodeSuite renders instances as JSONL and returns the bytes with their
// manifest.
func EncodeSuite(spec SuiteSpec, ins []*Instance) ([]byte, SuiteManifest, error) {
	var buf []byte
	for _, in := range ins {
		b, err := json.Marshal(in)
		if err != nil {
			return nil, SuiteManifest{}, err
		}
		buf = append(buf, b...)
		buf = append(buf, '\n')
	}
	sum := sha256.Sum256(buf)
	return buf, SuiteManifest{Spec: spec, Count: len(ins), SHA256: hex.EncodeToString(sum[:])}, nil
}
