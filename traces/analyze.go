package traces

import (
	"slices"
	"sort"
	"time"

	"github.com/t2t-lab/t2t/cluster/telemetry"
)

// StragglerFactor: a work unit is a straggler when it took longer than
// StragglerFactor × the p90 of all work units.
const StragglerFactor = 1.5

// Category is where a stage's wall time went (see Analyze for the rule).
type Category int

// The categories of a stage's critical-path breakdown.
const (
	Generation Category = iota // sampling, instance generation, prompt rendering, reward: rollout work
	Verification
	LearnerUpdate
	EngineerProposal
	Evaluation
	Waiting // nothing attributed to the stage was running
	// LearnerWait: no rollout work ran and units waited for the learner's credits (learner.wait
	// spans): rollout capacity held back because the learner could not use more groups yet.
	LearnerWait
	NumCategories
)

var categoryNames = [NumCategories]string{"generation", "verify", "learner", "engineer", "eval", "waiting", "waiting for the learner"}

func (c Category) String() string {
	if c < 0 || c >= NumCategories {
		return "unknown"
	}
	return categoryNames[c]
}

// Report is the result of Analyze.
type Report struct {
	Spans      int   // distinct spans analysed
	Duplicates int   // spans seen again (same trace and span ID) and ignored
	Traces     int   // distinct trace IDs
	Start, End int64 // observed window: earliest start, latest end (unix ns)

	Latency    []Latency   // per span name, sorted by name
	Stages     []Stage     // per "stage" span, by start time
	Nodes      []NodeUsage // per node, sorted by name
	Stragglers []Straggler // slowest first
	// StragglerThreshold is StragglerFactor × the p90 of the work units'
	// durations (0 without work units).
	StragglerThreshold time.Duration
}

// Latency summarises the durations of the spans of one name. Percentiles use
// the nearest-rank definition: Pp is the smallest duration d such that at
// least p% of the spans took ≤ d (the ⌈p·n/100⌉-th smallest).
type Latency struct {
	Name               string
	Count              int
	P50, P90, P99, Max time.Duration
	Mean, Total        time.Duration
}

// Stage is one stage's wall time and its critical-path breakdown.
type Stage struct {
	Stage           string // the t2t.stage attribute ("" if missing)
	Run             string // the t2t.run attribute ("" if missing)
	Node            string
	TraceID, SpanID string
	Start, End      int64 // unix ns
	Wall            time.Duration
	// Parts[c] is the time attributed to category c; the parts sum to Wall
	// exactly.
	Parts     [NumCategories]time.Duration
	WorkUnits int // executing work_unit spans attributed to the stage
}

// Fraction returns Parts[c] / Wall (0 for an empty stage).
func (s *Stage) Fraction(c Category) float64 {
	if s.Wall <= 0 {
		return 0
	}
	return float64(s.Parts[c]) / float64(s.Wall)
}

// NodeUsage is one node's utilisation.
type NodeUsage struct {
	Node        string
	Spans       int           // spans recorded by the node
	WorkUnits   int           // executing work_unit spans
	Busy        time.Duration // union of the node's work_unit spans
	Window      time.Duration // the report's observed window (End - Start)
	Utilisation float64       // Busy / Window
	MeanUnit    time.Duration // mean work_unit duration
	Stragglers  int
}

// Straggler is a work unit slower than Report.StragglerThreshold.
type Straggler struct {
	Node            string
	Stage           string // from the enclosing stage span, else the unit's t2t.stage
	WorkUnit        string // t2t.work_unit attribute
	TraceID, SpanID string
	Start           int64
	Duration        time.Duration
	Ratio           float64 // Duration / p90 of the work units
}

// class is a span's activity class for the sweep, in priority order (lower
// wins); classNone spans are not activity.
type class int8

const (
	classSample      class = iota // sample → Generation
	classVerify                   // verify → Verification
	classRollout                  // instance, executing work_unit → Generation
	classLearnerWait              // learner.wait → LearnerWait
	classLearner                  // learner.update
	classEngineer                 // engineer.propose
	classEval                     // eval
	numClasses
	classNone class = -1
)

var classCategory = [numClasses]Category{Generation, Verification, Generation, LearnerWait, LearnerUpdate, EngineerProposal, Evaluation}

// isExecutingUnit reports whether s is a work unit as run by a rollout node
// (not the coordinator's producer/client span for the same unit).
func isExecutingUnit(s *Span) bool {
	return s.Name == telemetry.SpanWorkUnit && s.Kind != "producer" && s.Kind != "client"
}

func classOf(s *Span) class {
	switch s.Name {
	case telemetry.SpanSample:
		return classSample
	case telemetry.SpanVerify:
		return classVerify
	case telemetry.SpanInstance:
		return classRollout
	case telemetry.SpanWorkUnit:
		if isExecutingUnit(s) {
			return classRollout
		}
	case telemetry.SpanLearnerWait:
		return classLearnerWait
	case telemetry.SpanLearnerUpdate:
		return classLearner
	case telemetry.SpanEngineerPropose:
		return classEngineer
	case telemetry.SpanEval:
		return classEval
	}
	return classNone
}

// Analyze summarises spans (from any number of nodes, in any order):
//
//   - Latency: nearest-rank p50/p90/p99, max, mean and total per span name.
//   - Stages: for each span named "stage", its wall time and where it went.
//     The spans attributed to a stage are (a) its descendants, following
//     parent links across nodes; (b) spans without a stage ancestor whose
//     t2t.stage (and t2t.run, when both have one) equals the stage's and
//     that overlap it; (c) spans with neither, that overlap it. Each is
//     clipped to the stage's window. A sweep over time then gives every
//     instant of the stage to the highest-priority activity running:
//     sample > verify > instance/work_unit > learner.wait > learner.update >
//     engineer.propose > eval, mapped to Generation, Verification,
//     Generation, LearnerWait ("waiting for the learner": units held back
//     for the learner's credits), LearnerUpdate, EngineerProposal and
//     Evaluation; instants
//     with none running are Waiting. Rollout work comes first because it is
//     the stage's throughput path: a learner update, proposal or evaluation
//     counts only for the time no rollout work hides it, which is what
//     making it faster would save. (Samples drawn inside an eval span count
//     as Generation.) The parts are integer nanoseconds and sum to the
//     stage's wall time exactly.
//   - Nodes: Busy is the union of the node's executing work_unit spans (not
//     kind producer or client), Utilisation is Busy over the observed window
//     of the whole span set.
//   - Stragglers: executing work units longer than StragglerFactor × their
//     p90, with their node.
//
// Spans repeated with the same trace and span ID are counted once.
func Analyze(spans []Span) Report {
	var r Report
	idx := make(map[spanKey]int, len(spans))
	uniq := make([]*Span, 0, len(spans))
	traces := map[string]struct{}{}
	for i := range spans {
		s := &spans[i]
		k := spanKey{s.TraceID, s.SpanID}
		if _, dup := idx[k]; dup {
			r.Duplicates++
			continue
		}
		idx[k] = len(uniq)
		uniq = append(uniq, s)
		traces[s.TraceID] = struct{}{}
		if len(uniq) == 1 || s.StartUnixNano < r.Start {
			r.Start = s.StartUnixNano
		}
		if len(uniq) == 1 || s.EndUnixNano > r.End {
			r.End = s.EndUnixNano
		}
	}
	r.Spans, r.Traces = len(uniq), len(traces)
	if len(uniq) == 0 {
		return r
	}
	r.Latency = latencies(uniq)

	stageOf := stageAncestors(uniq, idx)
	r.Stages, r.Stragglers, r.StragglerThreshold = stagesAndStragglers(uniq, stageOf)
	r.Nodes = nodeUsage(uniq, r)
	return r
}

type spanKey struct{ trace, span string }

func latencies(spans []*Span) []Latency {
	byName := map[string][]time.Duration{}
	for _, s := range spans {
		byName[s.Name] = append(byName[s.Name], s.Duration())
	}
	out := make([]Latency, 0, len(byName))
	for name, ds := range byName {
		out = append(out, latencyOf(name, ds))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// latencyOf sorts ds in place.
func latencyOf(name string, ds []time.Duration) Latency {
	slices.Sort(ds)
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	return Latency{
		Name: name, Count: len(ds),
		P50: percentile(ds, 50), P90: percentile(ds, 90), P99: percentile(ds, 99),
		Max: ds[len(ds)-1], Total: total, Mean: total / time.Duration(len(ds)),
	}
}

// percentile returns the nearest-rank p-th percentile (0 < p ≤ 100) of
// sorted: the ⌈p·n/100⌉-th smallest value. Integer arithmetic, exact.
func percentile(sorted []time.Duration, p int) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	rank := (p*n + 99) / 100
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// stageAncestors returns, per span, the index of its nearest ancestor named
// "stage" (-1 if none). Parent links missing from the set end the walk;
// cycles (corrupt input) are cut.
func stageAncestors(spans []*Span, idx map[spanKey]int) []int {
	const unknown, visiting = -2, -3
	res := make([]int, len(spans))
	for i := range res {
		res[i] = unknown
	}
	var path []int
	for i := range spans {
		if res[i] != unknown {
			continue
		}
		path = path[:0]
		j, found := i, -1
		for {
			if res[j] >= -1 { // memoised
				found = res[j]
				break
			}
			if res[j] == visiting { // cycle
				found = -1
				break
			}
			res[j] = visiting
			path = append(path, j)
			s := spans[j]
			if s.ParentSpanID == "" {
				found = -1
				break
			}
			p, ok := idx[spanKey{s.TraceID, s.ParentSpanID}]
			if !ok {
				found = -1
				break
			}
			if spans[p].Name == telemetry.SpanStage {
				found = p
				break
			}
			j = p
		}
		for _, k := range path {
			res[k] = found
		}
	}
	return res
}

type interval struct {
	start, end int64
	cls        class
}

func stagesAndStragglers(spans []*Span, stageOf []int) ([]Stage, []Straggler, time.Duration) {
	stages, pos := collectStages(spans)
	unitStage := attributeActivity(spans, stages, stageOf, pos)
	strag, threshold, ok := stragglers(spans, unitStage)
	if !ok {
		return stages, nil, 0
	}
	return stages, strag, threshold
}

// collectStages returns the stage spans as Stages, by start time, and each
// stage span's position among them (span index → position).
func collectStages(spans []*Span) ([]Stage, map[int]int) {
	var stageIdx []int
	for i, s := range spans {
		if s.Name == telemetry.SpanStage {
			stageIdx = append(stageIdx, i)
		}
	}
	sort.SliceStable(stageIdx, func(a, b int) bool {
		return spans[stageIdx[a]].StartUnixNano < spans[stageIdx[b]].StartUnixNano
	})
	pos := make(map[int]int, len(stageIdx)) // span index → position in stages
	stages := make([]Stage, len(stageIdx))
	for k, i := range stageIdx {
		s := spans[i]
		st, _ := s.Attr(telemetry.AttrStage)
		run, _ := s.Attr(telemetry.AttrRun)
		stages[k] = Stage{
			Stage: st, Run: run, Node: s.Node, TraceID: s.TraceID, SpanID: s.SpanID,
			Start: s.StartUnixNano, End: s.EndUnixNano, Wall: s.Duration(),
		}
		pos[i] = k
	}
	return stages, pos
}

// attributeActivity clips every activity span to the stages it belongs to,
// sweeps each stage's intervals into its time breakdown and counts its work
// units. It returns the stage label of each executing unit (by span index).
func attributeActivity(spans []*Span, stages []Stage, stageOf []int, pos map[int]int) []string {
	ivs := make([][]interval, len(stages))
	unitStage := make([]string, len(spans)) // stage label per executing unit
	for i, s := range spans {
		c := classOf(s)
		if c == classNone {
			continue
		}
		targets := stageTargets(spans, stages, stageOf, pos, i)
		for _, k := range targets {
			st := &stages[k]
			a, b := max(s.StartUnixNano, st.Start), min(s.EndUnixNano, st.End)
			if b > a {
				ivs[k] = append(ivs[k], interval{a, b, c})
			}
			if isExecutingUnit(s) {
				st.WorkUnits++
			}
		}
		if isExecutingUnit(s) {
			if stageOf[i] >= 0 {
				unitStage[i] = stages[pos[stageOf[i]]].Stage
			} else {
				unitStage[i], _ = s.Attr(telemetry.AttrStage)
			}
		}
	}
	for k := range stages {
		sweep(&stages[k], ivs[k])
	}
	return unitStage
}

// stragglers returns the executing work units that ran longer than
// StragglerFactor × the p90 of their durations, longest first, and that
// threshold; ok is false when there are no executing units.
func stragglers(spans []*Span, unitStage []string) (strag []Straggler, threshold time.Duration, ok bool) {
	var units []int
	var ds []time.Duration
	for i, s := range spans {
		if isExecutingUnit(s) {
			units = append(units, i)
			ds = append(ds, s.Duration())
		}
	}
	if len(units) == 0 {
		return nil, 0, false
	}
	slices.Sort(ds)
	p90 := percentile(ds, 90)
	threshold = time.Duration(float64(p90) * StragglerFactor)
	for _, i := range units {
		s := spans[i]
		if d := s.Duration(); d > threshold {
			wu, _ := s.Attr(telemetry.AttrWorkUnit)
			ratio := 0.0
			if p90 > 0 {
				ratio = float64(d) / float64(p90)
			}
			strag = append(strag, Straggler{
				Node: s.Node, Stage: unitStage[i], WorkUnit: wu, TraceID: s.TraceID, SpanID: s.SpanID,
				Start: s.StartUnixNano, Duration: d, Ratio: ratio,
			})
		}
	}
	sort.SliceStable(strag, func(a, b int) bool { return strag[a].Duration > strag[b].Duration })
	return strag, threshold, true
}

// stageTargets returns the positions of the stages span i is attributed to.
func stageTargets(spans []*Span, stages []Stage, stageOf []int, pos map[int]int, i int) []int {
	if a := stageOf[i]; a >= 0 {
		return []int{pos[a]}
	}
	s := spans[i]
	st, hasStage := s.Attr(telemetry.AttrStage)
	run, hasRun := s.Attr(telemetry.AttrRun)
	var out []int
	for k := range stages {
		g := &stages[k]
		if s.EndUnixNano <= g.Start || s.StartUnixNano >= g.End {
			continue // no overlap
		}
		if hasStage && (st != g.Stage || (hasRun && g.Run != "" && run != g.Run)) {
			continue
		}
		out = append(out, k)
	}
	return out
}

// sweep fills st.Parts from the (clipped) activity intervals: each instant
// goes to the highest-priority class running, or to Waiting.
func sweep(st *Stage, ivs []interval) {
	type event struct {
		t     int64
		delta int8
		cls   class
	}
	evs := make([]event, 0, 2*len(ivs))
	for _, iv := range ivs {
		evs = append(evs, event{iv.start, 1, iv.cls}, event{iv.end, -1, iv.cls})
	}
	slices.SortFunc(evs, func(a, b event) int {
		switch {
		case a.t < b.t:
			return -1
		case a.t > b.t:
			return 1
		}
		return 0
	})
	var active [numClasses]int
	top := func() Category {
		for c := range numClasses {
			if active[c] > 0 {
				return classCategory[c]
			}
		}
		return Waiting
	}
	cur := st.Start
	for _, e := range evs {
		if e.t > cur {
			st.Parts[top()] += time.Duration(e.t - cur)
			cur = e.t
		}
		active[e.cls] += int(e.delta)
	}
	if st.End > cur {
		st.Parts[top()] += time.Duration(st.End - cur)
	}
}

func nodeUsage(spans []*Span, r Report) []NodeUsage {
	type acc struct {
		u     NodeUsage
		units []interval
		total time.Duration
	}
	byNode := map[string]*acc{}
	for _, s := range spans {
		a := byNode[s.Node]
		if a == nil {
			a = &acc{u: NodeUsage{Node: s.Node}}
			byNode[s.Node] = a
		}
		a.u.Spans++
		if isExecutingUnit(s) {
			a.u.WorkUnits++
			a.total += s.Duration()
			a.units = append(a.units, interval{s.StartUnixNano, s.EndUnixNano, classRollout})
		}
	}
	for _, st := range r.Stragglers {
		byNode[st.Node].u.Stragglers++
	}
	window := time.Duration(r.End - r.Start)
	out := make([]NodeUsage, 0, len(byNode))
	for _, a := range byNode {
		a.u.Window = window
		a.u.Busy = unionLength(a.units)
		if window > 0 {
			a.u.Utilisation = float64(a.u.Busy) / float64(window)
		}
		if a.u.WorkUnits > 0 {
			a.u.MeanUnit = a.total / time.Duration(a.u.WorkUnits)
		}
		out = append(out, a.u)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Node < out[j].Node })
	return out
}

// unionLength returns the total length covered by ivs (sorted in place).
func unionLength(ivs []interval) time.Duration {
	slices.SortFunc(ivs, func(a, b interval) int {
		switch {
		case a.start < b.start:
			return -1
		case a.start > b.start:
			return 1
		}
		return 0
	})
	var total int64
	var curS, curE int64
	open := false
	for _, iv := range ivs {
		if !open || iv.start > curE {
			if open {
				total += curE - curS
			}
			curS, curE, open = iv.start, iv.end, true
			continue
		}
		curE = max(curE, iv.end)
	}
	if open {
		total += curE - curS
	}
	return time.Duration(total)
}
