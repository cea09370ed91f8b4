package traces

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

var tracesSeed = flag.Uint64("seed", 0, "seed for the randomised traces tests (0: a fresh one)")

func trRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *tracesSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x7472616365))
}

// trBuilder makes synthetic span sets with unique IDs.
type trBuilder struct {
	spans []Span
	n     int
}

func (b *trBuilder) id() string {
	b.n++
	return fmt.Sprintf("%016x", b.n)
}

// add appends a span and returns its ID. parent "" makes a root.
func (b *trBuilder) add(trace, parent, name, node string, start, end int64, attrs map[string]any) string {
	id := b.id()
	b.spans = append(b.spans, Span{TraceID: trace, SpanID: id, ParentSpanID: parent, Name: name, Kind: "internal",
		StartUnixNano: start, EndUnixNano: end, Status: "unset", Attributes: attrs, Node: node, Service: "t2t"})
	return id
}

func trStage(k int) map[string]any {
	return map[string]any{telemetry.AttrStage: json.Number(fmt.Sprint(k))}
}

// --- percentiles ---

func trNaivePercentile(vals []time.Duration, p int) time.Duration {
	// The smallest value v such that at least p% of the values are ≤ v.
	best := time.Duration(math.MaxInt64)
	for _, v := range vals {
		le := 0
		for _, w := range vals {
			if w <= v {
				le++
			}
		}
		if le*100 >= p*len(vals) && v < best {
			best = v
		}
	}
	return best
}

func TestPercentilesKnownData(t *testing.T) {
	t.Parallel()
	r := trRand(t)
	var b trBuilder
	perm := r.Perm(100)
	for _, i := range perm {
		ms := int64(i+1) * int64(time.Millisecond)
		b.add("t1", "", telemetry.SpanSample, "n", 1000, 1000+ms, nil)
	}
	for _, d := range []int64{7, 3, 5} {
		b.add("t1", "", "three", "n", 0, d, nil)
	}
	rep := Analyze(b.spans)
	want := map[string]Latency{
		telemetry.SpanSample: {Name: telemetry.SpanSample, Count: 100, P50: 50 * time.Millisecond, P90: 90 * time.Millisecond,
			P99: 99 * time.Millisecond, Max: 100 * time.Millisecond, Total: 5050 * time.Millisecond, Mean: 50500 * time.Microsecond},
		// n=3: p50 → 2nd (5), p90 → ⌈2.7⌉ = 3rd (7), p99 → 3rd.
		"three": {Name: "three", Count: 3, P50: 5, P90: 7, P99: 7, Max: 7, Total: 15, Mean: 5},
	}
	if len(rep.Latency) != 2 {
		t.Fatalf("latency rows %+v", rep.Latency)
	}
	for _, l := range rep.Latency {
		if l != want[l.Name] {
			t.Errorf("latency %s = %+v, want %+v", l.Name, l, want[l.Name])
		}
	}
	if rep.Latency[0].Name != telemetry.SpanSample { // sorted by name
		t.Errorf("order %s, %s", rep.Latency[0].Name, rep.Latency[1].Name)
	}
}

func TestPercentileMatchesNaive(t *testing.T) {
	t.Parallel()
	r := trRand(t)
	for iter := range 300 {
		n := 1 + r.IntN(60)
		vals := make([]time.Duration, n)
		for i := range vals {
			vals[i] = time.Duration(r.IntN(20)) // many ties
		}
		sorted := slices.Clone(vals)
		slices.Sort(sorted)
		for _, p := range []int{1, 10, 50, 90, 95, 99, 100} {
			if got, want := percentile(sorted, p), trNaivePercentile(vals, p); got != want {
				t.Fatalf("iter %d: p%d of %v = %v, want %v", iter, p, vals, got, want)
			}
		}
	}
}

// --- critical path ---

func TestCriticalPathKnownLayout(t *testing.T) {
	t.Parallel()
	var b trBuilder
	st := b.add("t", "", telemetry.SpanStage, "coord", 0, 100, trStage(0))
	wu := b.add("t", st, telemetry.SpanWorkUnit, "r1", 5, 45, nil)
	inst := b.add("t", wu, telemetry.SpanInstance, "r1", 8, 42, nil)
	b.add("t", inst, telemetry.SpanSample, "r1", 10, 30, nil)
	b.add("t", inst, telemetry.SpanSample, "r1", 12, 20, nil) // overlaps the first sample
	b.add("t", inst, telemetry.SpanVerify, "r1", 25, 40, nil)
	b.add("t", st, telemetry.SpanLearnerUpdate, "learner", 35, 60, nil)
	b.add("t", st, telemetry.SpanEngineerPropose, "eng", 80, 90, nil)
	b.add("t", st, telemetry.SpanEval, "eng", 85, 120, nil) // clipped at 100
	b.add("t", st, "unknown.thing", "coord", 0, 100, nil)   // not activity

	rep := Analyze(b.spans)
	if len(rep.Stages) != 1 {
		t.Fatalf("stages %+v", rep.Stages)
	}
	s := rep.Stages[0]
	// 0-5 wait, 5-10 rollout (work_unit/instance), 10-30 sample, 30-40 verify,
	// 40-45 rollout, 45-60 learner, 60-80 wait, 80-90 engineer, 90-100 eval.
	want := [NumCategories]time.Duration{Generation: 5 + 20 + 5, Verification: 10, LearnerUpdate: 15,
		EngineerProposal: 10, Evaluation: 10, Waiting: 5 + 20}
	if s.Parts != want {
		t.Errorf("parts %v, want %v", s.Parts, want)
	}
	if s.Wall != 100 || s.Stage != "0" || s.Node != "coord" || s.WorkUnits != 1 {
		t.Errorf("stage %+v", s)
	}
}

// trStageCase is a random multi-stage span set and, per stage, the
// intervals that the attribution rule must give it (unclipped).
type trStageCase struct {
	spans    []Span
	stages   [][2]int64
	expected [][]interval
}

var trClassNames = [numClasses]string{telemetry.SpanSample, telemetry.SpanVerify, telemetry.SpanInstance,
	telemetry.SpanLearnerWait, telemetry.SpanLearnerUpdate, telemetry.SpanEngineerPropose, telemetry.SpanEval}

func trRandomStages(r *rand.Rand) trStageCase {
	var b trBuilder
	var c trStageCase
	nst := 1 + r.IntN(4)
	ids := make([]string, nst)
	for k := range nst {
		start := int64(k)*1000 + int64(r.IntN(100))
		end := start + 200 + int64(r.IntN(700))
		if r.IntN(8) == 0 {
			end = start // an empty stage
		}
		c.stages = append(c.stages, [2]int64{start, end})
		ids[k] = b.add(fmt.Sprint("trace", k), "", telemetry.SpanStage, "coord", start, end, trStage(k))
	}
	c.expected = make([][]interval, nst)
	randIv := func(k int) (int64, int64) {
		lo := c.stages[k][0] - 150
		a := lo + int64(r.IntN(1100))
		return a, a + int64(r.IntN(300))
	}
	for k := range nst {
		trace := fmt.Sprint("trace", k)
		// Descendants: a tree of work units, instances, samples, verifies,
		// plus learner/engineer/eval directly under the stage. Times may
		// spill out of the stage (clipped) and children need not nest.
		for range r.IntN(6) {
			a, e := randIv(k)
			wu := b.add(trace, ids[k], telemetry.SpanWorkUnit, fmt.Sprint("r", r.IntN(3)), a, e, nil)
			c.expected[k] = append(c.expected[k], interval{a, e, classRollout})
			for range r.IntN(4) {
				a, e := randIv(k)
				inst := b.add(trace, wu, telemetry.SpanInstance, "r", a, e, nil)
				c.expected[k] = append(c.expected[k], interval{a, e, classRollout})
				for range r.IntN(3) {
					cls := []class{classSample, classVerify}[r.IntN(2)]
					a, e := randIv(k)
					b.add(trace, inst, trClassNames[cls], "r", a, e, nil)
					c.expected[k] = append(c.expected[k], interval{a, e, cls})
				}
			}
		}
		for range r.IntN(4) {
			cls := class(r.IntN(int(numClasses)))
			a, e := randIv(k)
			b.add(trace, ids[k], trClassNames[cls], "x", a, e, nil)
			c.expected[k] = append(c.expected[k], interval{a, e, cls})
		}
		// A producer work unit (not activity) and an unknown span.
		a, e := randIv(k)
		b.add(trace, ids[k], telemetry.SpanWorkUnit, "coord", a, e, nil)
		b.spans[len(b.spans)-1].Kind = "producer"
		b.add(trace, ids[k], "misc", "coord", a, e, nil)
		// Labelled orphans: their own trace, t2t.stage = k; only stage k,
		// whatever else they overlap.
		for range r.IntN(3) {
			cls := class(r.IntN(int(numClasses)))
			a, e := randIv(k)
			b.add(fmt.Sprint("orphan", k, b.n), "", trClassNames[cls], "o", a, e, trStage(k))
			if e > c.stages[k][0] && a < c.stages[k][1] {
				c.expected[k] = append(c.expected[k], interval{a, e, cls})
			}
		}
	}
	// Unlabelled orphans (parents missing from the set): every stage they overlap.
	for range r.IntN(5) {
		cls := class(r.IntN(int(numClasses)))
		a := int64(r.IntN(nst*1000)) - 100
		e := a + int64(r.IntN(1500))
		b.add("lost", "ffffffffffffffff", trClassNames[cls], "o", a, e, nil)
		for k, st := range c.stages {
			if e > st[0] && a < st[1] {
				c.expected[k] = append(c.expected[k], interval{a, e, cls})
			}
		}
	}
	r.Shuffle(len(b.spans), func(i, j int) { b.spans[i], b.spans[j] = b.spans[j], b.spans[i] })
	c.spans = b.spans
	return c
}

// trBruteParts gives each nanosecond of [start, end) to the highest-priority
// class whose interval covers it.
func trBruteParts(start, end int64, ivs []interval) [NumCategories]time.Duration {
	var parts [NumCategories]time.Duration
	for t := start; t < end; t++ {
		best := numClasses
		for _, iv := range ivs {
			if iv.start <= t && t < iv.end && iv.cls < best {
				best = iv.cls
			}
		}
		if best == numClasses {
			parts[Waiting]++
		} else {
			parts[classCategory[best]]++
		}
	}
	return parts
}

func TestCriticalPathRandomMatchesBruteForce(t *testing.T) {
	t.Parallel()
	r := trRand(t)
	for iter := range 200 {
		c := trRandomStages(r)
		rep := Analyze(c.spans)
		if len(rep.Stages) != len(c.stages) {
			t.Fatalf("iter %d: %d stages, want %d", iter, len(rep.Stages), len(c.stages))
		}
		for k, s := range rep.Stages {
			if s.Start != c.stages[k][0] || s.End != c.stages[k][1] {
				t.Fatalf("iter %d: stage %d window [%d,%d], want %v", iter, k, s.Start, s.End, c.stages[k])
			}
			var sum time.Duration
			frac := 0.0
			for cat := range NumCategories {
				sum += s.Parts[cat]
				frac += s.Fraction(cat)
				if s.Parts[cat] < 0 {
					t.Fatalf("iter %d stage %d: negative part %v", iter, k, s.Parts)
				}
			}
			if sum != s.Wall {
				t.Fatalf("iter %d stage %d: parts sum %v != wall %v", iter, k, sum, s.Wall)
			}
			if s.Wall > 0 && math.Abs(frac-1) > 1e-9 {
				t.Fatalf("iter %d stage %d: fractions sum %v", iter, k, frac)
			}
			if want := trBruteParts(s.Start, s.End, c.expected[k]); s.Parts != want {
				t.Fatalf("iter %d stage %d: parts %v, brute force %v", iter, k, s.Parts, want)
			}
		}
	}
}

// Large random stage with nanosecond times near the present (unix ns
// around 1.7e18): the integer parts still sum to the wall time exactly.
func TestCriticalPathSumsAtRealTimestamps(t *testing.T) {
	t.Parallel()
	r := trRand(t)
	base := int64(1_750_000_000_000_000_000)
	var b trBuilder
	st := b.add("t", "", telemetry.SpanStage, "c", base, base+int64(90*time.Second), trStage(1))
	for range 2000 {
		a := base + r.Int64N(int64(100*time.Second)) - int64(5*time.Second)
		b.add("t", st, trClassNames[r.IntN(int(numClasses))], "n", a, a+r.Int64N(int64(time.Second)), nil)
	}
	s := Analyze(b.spans).Stages[0]
	var sum time.Duration
	frac := 0.0
	for c := range NumCategories {
		sum += s.Parts[c]
		frac += s.Fraction(c)
	}
	if sum != s.Wall || math.Abs(frac-1) > 1e-9 {
		t.Errorf("sum %v wall %v, fractions %v", sum, s.Wall, frac)
	}
}

// --- nodes and stragglers ---

func TestUtilisationKnownLayout(t *testing.T) {
	t.Parallel()
	var b trBuilder
	st := b.add("t", "", telemetry.SpanStage, "C", 0, 100, trStage(0))
	b.add("t", st, telemetry.SpanWorkUnit, "C", 0, 60, nil)
	b.spans[len(b.spans)-1].Kind = "producer" // the coordinator's lease span: not work
	b.add("t", st, telemetry.SpanWorkUnit, "A", 0, 10, nil)
	b.add("t", st, telemetry.SpanWorkUnit, "A", 5, 15, nil) // overlaps: union
	b.add("t", st, telemetry.SpanWorkUnit, "A", 20, 30, nil)
	b.add("t", st, telemetry.SpanWorkUnit, "B", 50, 100, nil)
	b.add("t", st, telemetry.SpanSample, "B", 60, 70, nil) // not a work unit
	rep := Analyze(b.spans)
	want := []NodeUsage{
		{Node: "A", Spans: 3, WorkUnits: 3, Busy: 25, Window: 100, Utilisation: 0.25, MeanUnit: 10},
		{Node: "B", Spans: 2, WorkUnits: 1, Busy: 50, Window: 100, Utilisation: 0.5, MeanUnit: 50},
		{Node: "C", Spans: 2, Window: 100},
	}
	if !reflect.DeepEqual(rep.Nodes, want) {
		t.Errorf("nodes\n%+v\nwant\n%+v", rep.Nodes, want)
	}
}

func TestUnionLengthMatchesBruteForce(t *testing.T) {
	t.Parallel()
	r := trRand(t)
	for range 200 {
		var ivs []interval
		covered := map[int64]bool{}
		for range r.IntN(12) {
			a := int64(r.IntN(200))
			e := a + int64(r.IntN(40))
			ivs = append(ivs, interval{a, e, classRollout})
			for x := a; x < e; x++ {
				covered[x] = true
			}
		}
		if got := unionLength(ivs); got != time.Duration(len(covered)) {
			t.Fatalf("union of %v = %v, want %d", ivs, got, len(covered))
		}
	}
}

func TestStragglers(t *testing.T) {
	t.Parallel()
	r := trRand(t)
	var b trBuilder
	ms := int64(time.Millisecond)
	st := b.add("t", "", telemetry.SpanStage, "C", 0, 1000*ms, trStage(4))
	for i := range 30 {
		at := int64(r.IntN(900)) * ms
		b.add("t", st, telemetry.SpanWorkUnit, fmt.Sprint("fast", i%3), at, at+10*ms,
			map[string]any{telemetry.AttrWorkUnit: fmt.Sprint("u", i)})
	}
	// Exactly at the threshold (1.5 × p90 = 15ms): not a straggler.
	b.add("t", st, telemetry.SpanWorkUnit, "edge", 0, 15*ms, map[string]any{telemetry.AttrWorkUnit: "edge"})
	b.add("t", st, telemetry.SpanWorkUnit, "slow", 100*ms, 140*ms, map[string]any{telemetry.AttrWorkUnit: "s1"})
	// An orphan unit (parent elsewhere) with its own stage attribute.
	b.add("other", "abababababababab", telemetry.SpanWorkUnit, "slow", 200*ms, 250*ms,
		map[string]any{telemetry.AttrWorkUnit: "s2", telemetry.AttrStage: json.Number("9")})
	rep := Analyze(b.spans)
	// 33 units: 30×10ms, 15, 40, 50 → p90 = the ⌈29.7⌉ = 30th = 10ms.
	if rep.StragglerThreshold != 15*time.Millisecond {
		t.Fatalf("threshold %v", rep.StragglerThreshold)
	}
	want := []Straggler{
		{Node: "slow", Stage: "9", WorkUnit: "s2", TraceID: "other", Start: 200 * ms, Duration: 50 * time.Millisecond, Ratio: 5},
		{Node: "slow", Stage: "4", WorkUnit: "s1", TraceID: "t", Start: 100 * ms, Duration: 40 * time.Millisecond, Ratio: 4},
	}
	if len(rep.Stragglers) != 2 {
		t.Fatalf("stragglers %+v", rep.Stragglers)
	}
	for i := range want {
		got := rep.Stragglers[i]
		got.SpanID = ""
		if got != want[i] {
			t.Errorf("straggler %d = %+v, want %+v", i, got, want[i])
		}
	}
	for _, n := range rep.Nodes {
		if (n.Node == "slow") != (n.Stragglers == 2) || (n.Node != "slow" && n.Stragglers != 0) {
			t.Errorf("node %s stragglers %d", n.Node, n.Stragglers)
		}
	}
	if rep.Stages[0].WorkUnits != 32 {
		t.Errorf("stage 4 has %d units, want 32", rep.Stages[0].WorkUnits)
	}
}

func TestDuplicatesAndCycles(t *testing.T) {
	t.Parallel()
	var b trBuilder
	st := b.add("t", "", telemetry.SpanStage, "C", 0, 10, trStage(0))
	b.add("t", st, telemetry.SpanSample, "n", 0, 5, nil)
	b.spans = append(b.spans, b.spans...) // every span twice (same file given twice)
	// A parent cycle and a self-parent: corrupt input must not hang.
	b.spans = append(b.spans,
		Span{TraceID: "c", SpanID: "a", ParentSpanID: "b", Name: telemetry.SpanSample, StartUnixNano: 1, EndUnixNano: 2},
		Span{TraceID: "c", SpanID: "b", ParentSpanID: "a", Name: telemetry.SpanVerify, StartUnixNano: 1, EndUnixNano: 3},
		Span{TraceID: "c", SpanID: "s", ParentSpanID: "s", Name: telemetry.SpanVerify, StartUnixNano: 1, EndUnixNano: 3})
	before := slices.Clone(b.spans)
	rep := Analyze(b.spans)
	if !reflect.DeepEqual(before, b.spans) {
		t.Error("Analyze modified its input")
	}
	if rep.Spans != 5 || rep.Duplicates != 2 || rep.Traces != 2 {
		t.Errorf("spans %d duplicates %d traces %d", rep.Spans, rep.Duplicates, rep.Traces)
	}
	// The cyclic spans have no stage ancestor and no label: they overlap stage 0.
	s := rep.Stages[0]
	if s.Parts[Generation] != 5 || s.Parts[Waiting] != 5 {
		t.Errorf("parts %v", s.Parts)
	}
}

func TestAnalyzeEmpty(t *testing.T) {
	t.Parallel()
	rep := Analyze(nil)
	if rep.Spans != 0 || rep.Stages != nil || rep.Nodes != nil {
		t.Errorf("%+v", rep)
	}
	if !strings.HasPrefix(rep.Text(), "0 spans") {
		t.Errorf("text %q", rep.Text())
	}
	trCheckSVG(t, TimelineSVG(nil))
}

// --- reading files ---

func trWrite(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// trGoodLine is one OTLP JSON request (one span, s1) on one line, with a field
// the reader does not know.
const trGoodLine = `{"resourceSpans":[{"resource":{"attributes":[{"key":"t2t.node","value":{"stringValue":"n"}},{"key":"service.name","value":{"stringValue":"t2t"}}]},"scopeSpans":[{"scope":{"name":"t"},"spans":[{"traceId":"t","spanId":"s1","name":"stage","kind":1,"startTimeUnixNano":"1","endTimeUnixNano":"9","attributes":[{"key":"t2t.stage","value":{"intValue":"12345678901234567"}},{"key":"x","value":{"stringValue":"y"}}],"status":{"code":1},"futureField":[1,2]}]}]}]}`

func TestReadSpansAndErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := trWrite(t, dir, "good.jsonl", trGoodLine+"\n\n   \n"+strings.Replace(trGoodLine, `"s1"`, `"s2"`, 1)) // no final newline
	spans, err := ReadSpans(good, good)
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 4 || spans[1].SpanID != "s2" {
		t.Fatalf("spans %+v", spans)
	}
	want := Span{TraceID: "t", SpanID: "s1", Name: "stage", Kind: "internal", StartUnixNano: 1, EndUnixNano: 9, Status: "ok",
		Attributes: map[string]any{telemetry.AttrStage: json.Number("12345678901234567"), "x": "y"}, Node: "n", Service: "t2t"}
	if !reflect.DeepEqual(spans[0], want) {
		t.Errorf("span\n%+v, want\n%+v", spans[0], want)
	}
	if st, ok := spans[0].Attr(telemetry.AttrStage); !ok || st != "12345678901234567" {
		t.Errorf("big int attribute = %q (precision lost?)", st)
	}

	cases := []struct {
		name, content string
		line          int
		is            error // wrapped sentinel, or nil for a JSON error
	}{
		{"badjson", trGoodLine + "\n" + trGoodLine + "\n{\"resourceSpans\":\n", 3, nil},
		{"truncated", trGoodLine + "\n" + trGoodLine[:40], 2, nil},
		{"notobject", trGoodLine + " 5\n", 1, nil},
		{"nospan", "\n" + strings.Replace(trGoodLine, `"spanId":"s1",`, "", 1) + "\n", 2, ErrInvalidSpan},
		{"notrace", strings.Replace(trGoodLine, `"traceId":"t",`, "", 1), 1, ErrInvalidSpan},
		{"noname", strings.Replace(trGoodLine, `"name":"stage",`, "", 1), 1, ErrInvalidSpan},
		{"backwards", strings.Replace(trGoodLine, `"endTimeUnixNano":"9"`, `"endTimeUnixNano":"0"`, 1), 1, ErrInvalidSpan},
		{"past2262", strings.Replace(trGoodLine, `"endTimeUnixNano":"9"`, `"endTimeUnixNano":"18446744073709551615"`, 1), 1, ErrInvalidSpan},
		{"wrongtype", strings.Replace(trGoodLine, `"startTimeUnixNano":"1"`, `"startTimeUnixNano":true`, 1), 1, nil},
		{"badkind", strings.Replace(trGoodLine, `"kind":1`, `"kind":"SPAN_KIND_SIDEWAYS"`, 1), 1, nil},
		{"null", "{}\n null\n", 2, ErrNotOTLP},
		// A line of the format t2t wrote before OTLP JSON.
		{"legacy", `{"trace_id":"t","span_id":"s1","name":"stage","kind":"internal","start_unix_nano":1,"end_unix_nano":9}` + "\n", 1, ErrNotOTLP},
	}
	for _, c := range cases {
		p := trWrite(t, dir, c.name+".jsonl", c.content)
		_, err := ReadSpans(good, p)
		var pe *ParseError
		if !errors.As(err, &pe) || pe.File != p || pe.Line != c.line {
			t.Errorf("%s: err %v, want a ParseError at %s:%d", c.name, err, p, c.line)
			continue
		}
		if !strings.HasPrefix(err.Error(), fmt.Sprintf("%s:%d: ", p, c.line)) {
			t.Errorf("%s: message %q does not start with file:line", c.name, err)
		}
		for _, sentinel := range []error{ErrInvalidSpan, ErrNotOTLP} {
			if errors.Is(err, sentinel) != (c.is == sentinel) {
				t.Errorf("%s: errors.Is(%v) = %v", c.name, sentinel, !(c.is == sentinel))
			}
		}
	}
	if _, err := ReadSpans(filepath.Join(dir, "missing.jsonl")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := DecodeSpans(io.MultiReader(strings.NewReader(trGoodLine+"\n"), trErrReader{}), "stdin"); err == nil || !strings.Contains(err.Error(), "stdin") {
		t.Errorf("read error: %v", err)
	}
}

type trErrReader struct{}

func (trErrReader) Read([]byte) (int, error) { return 0, io.ErrUnexpectedEOF }

// --- rendering ---

func trReportSet() []Span {
	var b trBuilder
	ms := int64(time.Millisecond)
	for k := range 3 {
		t0 := int64(k) * 100 * ms
		st := b.add(fmt.Sprint("t", k), "", telemetry.SpanStage, "coord", t0, t0+90*ms, trStage(k))
		for u := range 6 {
			node := fmt.Sprintf(`r<%d>&"x"`, u%2)
			d := 10 * ms
			if k == 2 && u == 5 {
				d = 60 * ms
			}
			wu := b.add(fmt.Sprint("t", k), st, telemetry.SpanWorkUnit, node, t0+int64(u)*5*ms, t0+int64(u)*5*ms+d,
				map[string]any{telemetry.AttrWorkUnit: fmt.Sprintf("s%d-u%d", k, u)})
			b.add(fmt.Sprint("t", k), wu, telemetry.SpanSample, node, t0+int64(u)*5*ms, t0+int64(u)*5*ms+d/2, nil)
		}
		b.add(fmt.Sprint("t", k), st, telemetry.SpanLearnerUpdate, "learner", t0+70*ms, t0+80*ms, nil)
		b.add(fmt.Sprint("t", k), st, telemetry.SpanEngineerPropose, "engineer", t0+80*ms, t0+90*ms, nil)
	}
	return b.spans
}

func TestReportText(t *testing.T) {
	t.Parallel()
	rep := Analyze(trReportSet())
	txt := rep.Text()
	for _, want := range []string{"Latency by span name", "Stages:", "Nodes:", "Stragglers:", "s2-u5",
		"generation", "waiting", "learner.update", `r<1>&"x"`} {
		if !strings.Contains(txt, want) {
			t.Errorf("text lacks %q:\n%s", want, txt)
		}
	}
	if len(rep.Stragglers) != 1 || rep.Stragglers[0].WorkUnit != "s2-u5" || rep.Stragglers[0].Stage != "2" {
		t.Errorf("stragglers %+v", rep.Stragglers)
	}
	t.Log("\n" + txt)
}

// trCheckSVG decodes the whole document and returns the titles of its bars.
func trCheckSVG(t *testing.T, svg []byte) []string {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var stack []string
	var titles []string
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("invalid XML: %v\n%s", err, svg)
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
				if e.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("root namespace %q", e.Name.Space)
				}
			}
			stack = append(stack, e.Name.Local)
		case xml.EndElement:
			stack = stack[:len(stack)-1]
		case xml.CharData:
			if n := len(stack); n >= 2 && stack[n-1] == "title" && stack[n-2] == "rect" {
				titles = append(titles, string(e))
			}
		}
	}
	if root != "svg" || len(stack) != 0 {
		t.Errorf("root %q, unclosed %v", root, stack)
	}
	return titles
}

func TestTimelineSVG(t *testing.T) {
	spans := trReportSet()
	svg := TimelineSVG(spans)
	titles := trCheckSVG(t, svg)
	// 18 work units + 3 learner updates + 3 proposals.
	if len(titles) != 24 {
		t.Errorf("%d bars, want 24", len(titles))
	}
	found := false
	for _, ti := range titles {
		if strings.Contains(ti, `work_unit on r<1>&"x"`) && strings.Contains(ti, "unit s2-u5") && strings.Contains(ti, "stage 2") {
			found = true
		}
	}
	if !found {
		t.Errorf("no bar for unit s2-u5 on its node: %v", titles)
	}
	s := string(svg)
	if strings.Count(s, `stroke-dasharray`) != 6 {
		t.Errorf("want 6 stage boundary lines")
	}
	for _, row := range []string{"r&lt;0&gt;&amp;", "learner", "engineer"} {
		if !strings.Contains(s, row) {
			t.Errorf("svg lacks row %q", row)
		}
	}
	if os.Getenv("TRACES_SVG_OUT") != "" { // for looking at it
		if err := os.WriteFile(os.Getenv("TRACES_SVG_OUT"), svg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestNotJSONLineSaysSo: a span-file line that is not JSON is named with
// its first characters, not with encoding/json's "invalid character".
func TestNotJSONLineSaysSo(t *testing.T) {
	p := trWrite(t, t.TempDir(), "bad.jsonl", trGoodLine+"\n\noops, not a span line\n")
	_, err := ReadSpans(p)
	want := p + ":3: not JSON (starts with 'oops, not a …')"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v, want %q", err, want)
	}
	if se := (*json.SyntaxError)(nil); !errors.As(err, &se) {
		t.Errorf("err %v: want it to wrap the *json.SyntaxError", err)
	}
}
