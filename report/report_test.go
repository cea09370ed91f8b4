package report

import (
	"bytes"
	"encoding/csv"
	"encoding/xml"
	"errors"
	"io"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/testutil"
)

// evalOutcomes is a small hand-countable result set.
func evalOutcomes() []Outcome {
	return []Outcome{
		{InstanceID: "a", Agents: 3, Size: 3, Subset: 0.25, Valid: true, Optimal: true},
		{InstanceID: "b", Agents: 3, Size: 3, Subset: 0.25, Valid: true},
		{InstanceID: "c", Agents: 3, Size: 3, Subset: 0.75, Failed: []string{"conflict"}},
		{InstanceID: "d", Agents: 3, Size: 4, Subset: 0.75, Failed: []string{"conflict", "hole"}},
		{InstanceID: "e", Agents: 3, Size: 4, Subset: 0.25, Valid: true, Optimal: true},
		{InstanceID: "f", Agents: 4, Size: 4, Subset: 0.25, Valid: true, Optimal: true},
		{InstanceID: "g", Agents: 4, Size: 4, Subset: 0.75, Failed: []string{"parse"}},
	}
}

func TestTallyHandCount(t *testing.T) {
	e := Tally("scripted", "tiny", evalOutcomes())
	if !reflect.DeepEqual(e.Agents, []int{3, 4}) || !reflect.DeepEqual(e.Sizes, []int{3, 4}) || !reflect.DeepEqual(e.Subsets, []float64{0.25, 0.75}) {
		t.Fatalf("axes: agents %v sizes %v subsets %v", e.Agents, e.Sizes, e.Subsets)
	}
	c, ok := findCell(e.BySize, 3, 3, 0)
	if !ok || c.Episodes != 3 || c.Valid != 2 || c.Optimal != 1 || c.Failures["conflict"] != 1 {
		t.Fatalf("3 agents 3×3: %+v", c)
	}
	c, _ = findCell(e.BySize, 3, 4, 0)
	if c.Episodes != 2 || c.Valid != 1 || c.Optimal != 1 || c.Failures["conflict"] != 1 || c.Failures["hole"] != 1 {
		t.Fatalf("3 agents 4×4: %+v", c)
	}
	c, _ = findCell(e.BySubset, 3, 0, 0.25)
	if c.Episodes != 3 || c.Valid != 3 || c.Optimal != 2 {
		t.Fatalf("3 agents subset 0.25: %+v", c)
	}
	a3, _ := findCell(e.ByAgents, 3, 0, 0)
	// Mean over sizes: 3×3 valid 2/3, 4×4 valid 1/2.
	if a3.Episodes != 5 || math.Abs(a3.SizeMeanValid-(2.0/3+0.5)/2) > 1e-12 || math.Abs(a3.SizeMeanOptimal-(1.0/3+0.5)/2) > 1e-12 {
		t.Fatalf("3 agents: %+v", a3)
	}
	if e.Total.Episodes != 7 || e.Total.Valid != 4 || e.Total.Optimal != 3 || e.Total.Failures["conflict"] != 2 || e.Total.Failures["parse"] != 1 {
		t.Fatalf("total: %+v", e.Total)
	}
}

func TestEvalGolden(t *testing.T) {
	e := Tally("scripted", "tiny", evalOutcomes())
	testutil.Golden(t, filepath.Join("testdata", "eval.md.golden"), []byte(EvalMarkdown(e)))
	testutil.Golden(t, filepath.Join("testdata", "eval.csv.golden"), []byte(EvalCSV(e)))
	recs, err := csv.NewReader(strings.NewReader(EvalCSV(e))).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	// Header, total, 2 agent rows, 3 size rows, 4 subset rows.
	if len(recs) != 1+1+2+3+4 {
		t.Fatalf("CSV has %d records", len(recs))
	}
}

func TestEvalJSONRoundTrip(t *testing.T) {
	e := Tally("scripted", "tiny", evalOutcomes())
	b, err := EvalJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseEvalJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, back) {
		t.Fatalf("round trip differs:\n%+v\n%+v", e, back)
	}
	if _, err := ParseEvalJSON([]byte(`{"kind":"other"}`)); !errors.Is(err, ErrFormat) {
		t.Fatalf("foreign document: %v", err)
	}
	if _, err := ParseExperimentJSON(b); !errors.Is(err, ErrFormat) {
		t.Fatalf("eval document read as experiment: %v", err)
	}
}

// xmlCount parses doc strictly as XML and counts elements by local name.
func xmlCount(t *testing.T, doc string) map[string]int {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(doc))
	d.Strict = true
	counts := map[string]int{}
	for {
		tok, err := d.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			counts[se.Name.Local]++
			for _, a := range se.Attr {
				if (a.Name.Local == "href" || a.Name.Local == "src") && a.Value != "" {
					t.Errorf("external reference %s=%q", a.Name.Local, a.Value)
				}
			}
		}
	}
	return counts
}

func TestEvalSVGAndHTMLParse(t *testing.T) {
	e := Tally("scripted", "tiny <&>", evalOutcomes())
	c := xmlCount(t, EvalSizeSVG(e))
	// 2 agent counts × (valid, optimal) lines over 2 sizes; 4×4 only for 4 agents: one-point series draw no line.
	if c["svg"] != 1 || c["polyline"] != 2 || c["circle"] != 6 {
		t.Fatalf("size SVG elements: %v", c)
	}
	c = xmlCount(t, EvalFailureSVG(e))
	// Bars: 8 categories × 2 agent counts, plus the background and 2 legend swatches.
	if c["rect"] != 16+1+2 {
		t.Fatalf("failure SVG elements: %v", c)
	}
	c = xmlCount(t, EvalHTML(e))
	if c["table"] != 3 || c["svg"] != 2 || c["script"] != 0 || c["link"] != 0 || c["style"] != 1 {
		t.Fatalf("HTML elements: %v", c)
	}
}

// expFixture is a 2-strategy × 2-seed × 2-stage experiment.
func expFixture() *Experiment {
	cfg := func(h float64) *env.Config {
		return &env.Config{Agents: 2, Instances: 64, Sizes: []env.SizeConfig{{Size: 3, DataRatio: 0.5, HoleRatio: h, WaitRatio: 0.3}, {Size: 4, DataRatio: 0.5, HoleRatio: 0.2, WaitRatio: 0.3 + h}}}
	}
	run := func(strategy string, seed uint64, v0, v1, v2 float64) Run {
		pt := func(stage int, v float64, c *env.Config, proposer, why string, audit []Attempt) Point {
			p := Point{Stage: stage, Train: Rate{Episodes: 64, Valid: v / 2, Optimal: v / 4}, Val: Rate{Episodes: 16, Valid: v, Optimal: v / 2},
				Eval: map[int]Rate{3: {Episodes: 10, Valid: v * 0.8, Optimal: v * 0.4}, 4: {Episodes: 10, Valid: v * 0.5, Optimal: v * 0.2}}, Config: c, Proposer: proposer, Rationale: why, Audit: audit, Updates: 2, Seconds: 1.5}
			if c != nil {
				p.ConfigVersion = c.Hash()[:8]
			}
			return p
		}
		return Run{Strategy: strategy, Seed: seed, RunID: strategy + "-s" + string(rune('0'+seed)),
			Initial: pt(-1, v0, nil, "", "", nil),
			Stages: []Point{
				pt(0, v1, cfg(0.2), "initial", "", nil),
				pt(1, v2, cfg(0.1+float64(seed)/10), strategy, "fewer holes | on 3×3", []Attempt{{Attempt: 0, Reason: "infeasible (step 1.00)"}, {Attempt: 1, Accepted: true, Reason: "accepted at step 0.50"}}),
			}}
	}
	return &Experiment{
		Title: "Engineer strategies", Command: "t2t experiment --strategies fixed,rules --seeds 2 --stages 2",
		Budget:     Budget{Policy: "gridnet", Stages: 2, Instances: 64, GroupSize: 4, ValPerSize: 2, EvalPerSize: 1},
		Strategies: []string{"fixed", "rules"}, Seeds: []uint64{1, 2}, Baseline: "fixed",
		Runs: []Run{run("fixed", 1, 0.1, 0.2, 0.3), run("rules", 1, 0.1, 0.25, 0.5), run("fixed", 2, 0.2, 0.3, 0.4), run("rules", 2, 0.2, 0.35, 0.45)},
	}
}

func TestSummarizeHandComputed(t *testing.T) {
	e := expFixture()
	sums := Summarize(e)
	if len(sums) != 2 || sums[0].Strategy != "fixed" || sums[1].Strategy != "rules" {
		t.Fatalf("summaries: %+v", sums)
	}
	ms := Metrics(e)
	if len(ms) != 6 || ms[2].Key != "a3_valid" || ms[5].Key != "a4_optimal" {
		t.Fatalf("metrics: %+v", ms)
	}
	// rules final val valid: 0.5 and 0.45 → mean 0.475, sd sqrt(0.00125).
	f := sums[1].Final[0]
	if f.N != 2 || math.Abs(f.Mean-0.475) > 1e-12 || math.Abs(f.SD-math.Sqrt(0.00125)) > 1e-12 || f.Min != 0.45 || f.Max != 0.5 {
		t.Fatalf("rules final val valid: %+v", f)
	}
	// Paired difference to fixed on 3-agent valid: 0.8·(0.5−0.3) and 0.8·(0.45−0.4).
	d := sums[1].VsBaseline[2]
	if d.N != 2 || math.Abs(d.Mean-0.8*(0.2+0.05)/2) > 1e-12 {
		t.Fatalf("rules − fixed, 3 agents valid: %+v", d)
	}
	if sums[0].VsBaseline != nil {
		t.Fatalf("baseline compared with itself: %+v", sums[0].VsBaseline)
	}
	if len(sums[0].Curve) != 3 || math.Abs(sums[0].Curve[1][0].Mean-0.25) > 1e-12 {
		t.Fatalf("fixed curve: %+v", sums[0].Curve)
	}
	if s := StatOf([]float64{math.NaN()}); s.N != 0 || s.Mean != 0 {
		t.Fatalf("StatOf(NaN) = %+v", s)
	}
}

func TestExperimentGolden(t *testing.T) {
	e := expFixture()
	testutil.Golden(t, filepath.Join("testdata", "experiment.md.golden"), []byte(ExperimentMarkdown(e)))
	// The summary t2t experiment prints is the document up to its learning curves.
	md, sum := ExperimentMarkdown(e), ExperimentSummaryMarkdown(e)
	if i := strings.Index(md, "\n## Learning curves"); i < 0 || sum != md[:i+1] || !strings.Contains(sum, "## Final results") {
		t.Errorf("summary is not the document up to its learning curves:\n%s", sum)
	}
	testutil.Golden(t, filepath.Join("testdata", "experiment.csv.golden"), []byte(ExperimentCSV(e)))
	testutil.Golden(t, filepath.Join("testdata", "summary.csv.golden"), []byte(SummaryCSV(e)))
	for _, doc := range []string{ExperimentCSV(e), SummaryCSV(e)} {
		if _, err := csv.NewReader(strings.NewReader(doc)).ReadAll(); err != nil {
			t.Fatalf("CSV does not parse: %v", err)
		}
	}
}

func TestExperimentJSONRoundTrip(t *testing.T) {
	e := expFixture()
	b, err := ExperimentJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseExperimentJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(e, back) {
		t.Fatalf("round trip differs:\n%+v\n%+v", e, back)
	}
	if !bytes.Contains(b, []byte(`"summary"`)) || !bytes.Contains(b, []byte(`"vs_baseline"`)) {
		t.Fatalf("JSON lacks the summary:\n%s", b)
	}
}

func TestExperimentHTMLParses(t *testing.T) {
	e := expFixture()
	e.Title = `Strategies <"&'>`
	h := ExperimentHTML(e)
	c := xmlCount(t, h)
	// Tables: final, paired, best, 3 curve tables (valid metrics), 2 config tables, 4 audit tables.
	if c["table"] != 3+3+2+4 {
		t.Fatalf("tables: %v", c)
	}
	// SVGs: 6 curves + 2 strategies × 3 heatmaps.
	if c["svg"] != 6+6 || c["script"] != 0 || c["link"] != 0 || c["img"] != 0 {
		t.Fatalf("elements: %v", c)
	}
	if !strings.Contains(h, "fewer holes | on 3×3") || !strings.Contains(h, "infeasible (step 1.00)") {
		t.Fatal("rationale or audit missing from the HTML")
	}
	if strings.Contains(h, `<"&'>`) {
		t.Fatal("title not escaped")
	}
}

func TestEmptyInputsRender(t *testing.T) {
	e := Tally("p", "s", nil)
	xmlCount(t, EvalHTML(e))
	if !strings.Contains(EvalMarkdown(e), "0 episodes") {
		t.Fatal(EvalMarkdown(e))
	}
	x := &Experiment{Title: "empty", Strategies: []string{"fixed"}}
	xmlCount(t, ExperimentHTML(x))
	if _, err := ExperimentJSON(x); err != nil {
		t.Fatal(err)
	}
}
