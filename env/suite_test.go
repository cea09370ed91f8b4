package env

import (
	"math"
	"testing"
)

func suiteAll(t *testing.T, spec *SuiteSpec) []*Instance {
	t.Helper()
	ins, err := GenerateSuite(spec, 0, spec.Len())
	if err != nil {
		t.Fatal(err)
	}
	return ins
}

func TestSuiteSameSeedSameHash(t *testing.T) {
	a := QuickSpec(7, 2)
	b := QuickSpec(7, 2)
	_, ma, err := EncodeSuite(a, suiteAll(t, &a))
	if err != nil {
		t.Fatal(err)
	}
	_, mb, err := EncodeSuite(b, suiteAll(t, &b))
	if err != nil {
		t.Fatal(err)
	}
	if ma.SHA256 != mb.SHA256 {
		t.Fatalf("same seed, different hashes: %s vs %s", ma.SHA256, mb.SHA256)
	}
	c := QuickSpec(8, 2)
	_, mc, err := EncodeSuite(c, suiteAll(t, &c))
	if err != nil {
		t.Fatal(err)
	}
	if mc.SHA256 == ma.SHA256 {
		t.Fatal("different seeds gave the same suite")
	}
}

func TestSuiteSplitRangesEqualWhole(t *testing.T) {
	spec := QuickSpec(11, 3)
	whole := suiteAll(t, &spec)
	var parts []*Instance
	for lo := 0; lo < spec.Len(); lo += 5 {
		p, err := GenerateSuite(&spec, lo, min(lo+5, spec.Len()))
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, p...)
	}
	for i := range whole {
		if whole[i].ID != parts[i].ID || whole[i].Seed != parts[i].Seed {
			t.Fatalf("line %d differs between whole and split generation", i)
		}
	}
}

func TestPaperEvalSpecShape(t *testing.T) {
	spec := PaperEvalSpec(1, 50)
	if got := spec.Len(); got != 3150 {
		t.Fatalf("paper eval suite has %d instances, want 3150", got)
	}
	type cell struct {
		k, size int
		sub     float64
	}
	counts := map[cell]int{}
	waits := map[cell]float64{}
	for _, g := range spec.Groups {
		if g.Size < g.Agents || g.Size > PaperMaxSize {
			t.Fatalf("group %+v: size outside k..10", g)
		}
		if g.HoleRatio < 0.1-1e-9 || g.HoleRatio > 0.5+1e-9 {
			t.Fatalf("group %+v: hole ratio outside 0.1..0.5", g)
		}
		w := g.WaitRatio * float64(g.Count)
		if math.Abs(w-math.Round(w)) > 1e-9 {
			t.Fatalf("group %+v: wait count %.3f is not whole", g, w)
		}
		c := cell{g.Agents, g.Size, g.Subset}
		counts[c] += g.Count
		waits[c] += w
	}
	for c, n := range counts {
		if n != 50 {
			t.Errorf("%+v: %d instances, want 50", c, n)
		}
		if want := math.Round(c.sub * 50); waits[c] != want {
			t.Errorf("%+v: %v needs_wait targets, want %v", c, waits[c], want)
		}
	}
}

// TestSuiteMatchesSpec generates a small paper-shaped suite and checks every
// instance against its group: agents, size, exact hole count and the exact
// share of needs_wait instances per group.
func TestSuiteMatchesSpec(t *testing.T) {
	spec := PaperEvalSpec(5, 5)
	ins := suiteAll(t, &spec)
	for gi, g := range spec.Groups {
		wait := 0
		for i := g.Lo; i < g.Lo+g.Count; i++ {
			in := ins[i]
			if len(in.Agents) != g.Agents || in.Width != g.Size {
				t.Fatalf("line %d: %d agents on %dx%d, group %d wants %d on %d", i, len(in.Agents), in.Width, in.Height, gi, g.Agents, g.Size)
			}
			if want := int(math.Round(g.HoleRatio * float64(g.Size*g.Size))); in.NumHoles() != want {
				t.Fatalf("line %d: %d holes, want %d", i, in.NumHoles(), want)
			}
			if !in.Solved() {
				t.Fatalf("line %d: not annotated", i)
			}
			if in.NeedsWait {
				wait++
			}
		}
		if want := int(math.Round(g.WaitRatio * float64(g.Count))); wait != want {
			t.Fatalf("group %d %+v: %d needs_wait instances, want %d", gi, g, wait, want)
		}
	}
}

func TestSuiteByNameRejectsUnknown(t *testing.T) {
	if _, err := SuiteByName("nope", 1); err == nil {
		t.Fatal("unknown suite accepted")
	}
	for _, n := range []string{SuiteEval, SuiteVal, SuiteQuick} {
		s, err := SuiteByName(n, 1)
		if err != nil || s.Len() == 0 {
			t.Fatalf("%s: %v, %d instances", n, err, s.Len())
		}
	}
	spec := QuickSpec(1, 1)
	if _, err := GenerateSuite(&spec, 0, spec.Len()+1); err == nil {
		t.Fatal("out-of-range suite lines accepted")
	}
}
