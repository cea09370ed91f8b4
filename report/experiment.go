package report

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// Rate is a valid and an optimal share over a set of episodes, with
// store.Rates' fields (convert with report.Rate(r)); report keeps its own
// type so that it, and the evaluator that learner-side code uses, import no
// cluster package.
type Rate struct {
	Episodes int64   `json:"episodes"`
	Valid    float64 `json:"valid"`
	Optimal  float64 `json:"optimal"`
}

// Attempt is one audited engineer attempt (store.AuditRecord, without the
// raw answer).
type Attempt struct {
	Attempt    int    `json:"attempt"`
	Accepted   bool   `json:"accepted"`
	Reason     string `json:"reason,omitempty"`
	PromptHash string `json:"prompt_hash,omitempty"`
}

// Point is the state of a run after one stage (or, with Stage -1, of the
// untrained policy).
type Point struct {
	Stage int `json:"stage"`
	// Train is over the stage's training episodes (sampled); Val over the
	// validation set and Eval per agent count over the benchmark suite,
	// both greedy, after the stage.
	Train Rate         `json:"train"`
	Val   Rate         `json:"val"`
	Eval  map[int]Rate `json:"eval"`
	// Config is the generator config the stage trained on (nil for the
	// initial point), ConfigVersion its hash, Proposer the strategy that
	// wrote it ("initial" for stage 0) and Rationale the reason it gave.
	Config        *env.Config `json:"config,omitempty"`
	ConfigVersion string      `json:"config_version,omitempty"`
	Proposer      string      `json:"proposer,omitempty"`
	Rationale     string      `json:"rationale,omitempty"`
	// Audit lists the engineer's attempts that proposed this stage's config.
	Audit   []Attempt `json:"audit,omitempty"`
	Updates int       `json:"updates,omitempty"`
	Seconds float64   `json:"seconds,omitempty"`
}

// Run is one training run: one strategy, one seed.
type Run struct {
	Strategy string  `json:"strategy"`
	Seed     uint64  `json:"seed"`
	RunID    string  `json:"run_id"`
	Initial  Point   `json:"initial"`
	Stages   []Point `json:"stages"`
	Seconds  float64 `json:"seconds,omitempty"`
}

// point returns the i-th point of the run's curve: 0 is the initial
// policy, 1+s stage s.
func (r *Run) point(i int) (*Point, bool) {
	if i == 0 {
		return &r.Initial, true
	}
	if i-1 < len(r.Stages) {
		return &r.Stages[i-1], true
	}
	return nil, false
}

// Budget is what every run of an experiment was given.
type Budget struct {
	Policy      string `json:"policy"`
	Stages      int    `json:"stages"`
	Instances   int    `json:"instances"`
	GroupSize   int    `json:"group_size"`
	ValPerSize  int    `json:"val_per_size"`
	EvalPerSize int    `json:"eval_per_size"`
	// Epochs is the passes over each stage's instances (0 or 1: one).
	Epochs int `json:"epochs,omitempty"`
	// SuiteSeed seeds the validation set and the benchmark suite.
	SuiteSeed uint64 `json:"suite_seed,omitempty"`
	// Agents is the stage-0 config's agent count as env.Config.AgentsText
	// writes it ("2", or "2..5" for a range); "" (older files) reads as 2.
	Agents string `json:"agents,omitempty"`
}

// Experiment is several strategies trained with the same seeds.
type Experiment struct {
	Title   string `json:"title"`
	Command string `json:"command,omitempty"`
	Budget  Budget `json:"budget"`
	// Strategies and Seeds give the order of the tables; Baseline names the
	// strategy the others are compared with (paired by seed), "" for none.
	Strategies []string `json:"strategies"`
	Seeds      []uint64 `json:"seeds"`
	Baseline   string   `json:"baseline,omitempty"`
	Runs       []Run    `json:"runs"`
}

// Metric is one number read off a Point.
type Metric struct {
	Key   string `json:"key"`
	Label string `json:"label"`
	// Agents is the benchmark agent count, 0 for the validation set.
	Agents  int  `json:"agents"`
	Optimal bool `json:"optimal"`
}

// Of returns the metric of p in [0,1], NaN when p lacks it.
func (m Metric) Of(p *Point) float64 {
	r := p.Val
	if m.Agents > 0 {
		var ok bool
		if r, ok = p.Eval[m.Agents]; !ok {
			return math.NaN()
		}
	}
	if r.Episodes == 0 {
		return math.NaN()
	}
	if m.Optimal {
		return r.Optimal
	}
	return r.Valid
}

// Metrics lists the experiment's metrics: validation valid and optimal,
// then valid and optimal per benchmark agent count present.
func Metrics(e *Experiment) []Metric {
	out := []Metric{{Key: "val_valid", Label: "val valid"}, {Key: "val_optimal", Label: "val optimal", Optimal: true}}
	var agents []int
	for i := range e.Runs {
		r := &e.Runs[i]
		for j := 0; ; j++ {
			p, ok := r.point(j)
			if !ok {
				break
			}
			for a := range p.Eval {
				if !slices.Contains(agents, a) {
					agents = append(agents, a)
				}
			}
		}
	}
	slices.Sort(agents)
	for _, a := range agents {
		out = append(out,
			Metric{Key: fmt.Sprintf("a%d_valid", a), Label: fmt.Sprintf("%d agents valid", a), Agents: a},
			Metric{Key: fmt.Sprintf("a%d_optimal", a), Label: fmt.Sprintf("%d agents optimal", a), Agents: a, Optimal: true})
	}
	return out
}

// Stat summarises values over seeds.
type Stat struct {
	N int `json:"n"`
	// Mean, SD (sample standard deviation, 0 for one value), Min and Max;
	// all zero when N is 0.
	Mean float64 `json:"mean"`
	SD   float64 `json:"sd"`
	Min  float64 `json:"min"`
	Max  float64 `json:"max"`
}

// StatOf summarises xs, skipping NaN.
func StatOf(xs []float64) Stat {
	var s Stat
	for _, x := range xs {
		if math.IsNaN(x) {
			continue
		}
		if s.N == 0 || x < s.Min {
			s.Min = x
		}
		if s.N == 0 || x > s.Max {
			s.Max = x
		}
		s.N++
		s.Mean += x
	}
	if s.N == 0 {
		return s
	}
	s.Mean /= float64(s.N)
	if s.N > 1 {
		v := 0.0
		for _, x := range xs {
			if !math.IsNaN(x) {
				v += (x - s.Mean) * (x - s.Mean)
			}
		}
		s.SD = math.Sqrt(v / float64(s.N-1))
	}
	return s
}

// Summary is one strategy's results over its seeds.
type Summary struct {
	Strategy string `json:"strategy"`
	Runs     int    `json:"runs"`
	// Initial and Final hold one Stat per metric (Metrics order) of the
	// untrained policy and after each run's last stage.
	Initial []Stat `json:"initial"`
	Final   []Stat `json:"final"`
	// Curve[i][m] is metric m at curve point i (0: initial, 1+s: stage s).
	Curve [][]Stat `json:"curve"`
	// VsBaseline[m] is the paired difference of the final metric m to the
	// baseline's run with the same seed; nil for the baseline itself or
	// without a baseline.
	VsBaseline []Stat `json:"vs_baseline,omitempty"`
}

// runsOf returns the strategy's runs in seed order.
func runsOf(e *Experiment, strategy string) []*Run {
	var out []*Run
	for i := range e.Runs {
		if e.Runs[i].Strategy == strategy {
			out = append(out, &e.Runs[i])
		}
	}
	slices.SortStableFunc(out, func(a, b *Run) int {
		switch {
		case a.Seed < b.Seed:
			return -1
		case a.Seed > b.Seed:
			return 1
		}
		return 0
	})
	return out
}

// finalPoint is the run's last point (the initial one without stages).
func finalPoint(r *Run) *Point {
	if len(r.Stages) == 0 {
		return &r.Initial
	}
	return &r.Stages[len(r.Stages)-1]
}

// Summarize computes one Summary per strategy, in e.Strategies order.
func Summarize(e *Experiment) []Summary {
	ms := Metrics(e)
	var base map[uint64]*Run
	if e.Baseline != "" {
		base = map[uint64]*Run{}
		for _, r := range runsOf(e, e.Baseline) {
			base[r.Seed] = r
		}
	}
	var out []Summary
	for _, name := range e.Strategies {
		runs := runsOf(e, name)
		s := Summary{Strategy: name, Runs: len(runs)}
		points := 0
		for _, r := range runs {
			points = max(points, len(r.Stages)+1)
		}
		for i := range points {
			row := make([]Stat, len(ms))
			for mi, m := range ms {
				var xs []float64
				for _, r := range runs {
					if p, ok := r.point(i); ok {
						xs = append(xs, m.Of(p))
					}
				}
				row[mi] = StatOf(xs)
			}
			s.Curve = append(s.Curve, row)
		}
		for _, m := range ms {
			var ini, fin, diff []float64
			for _, r := range runs {
				ini = append(ini, m.Of(&r.Initial))
				fin = append(fin, m.Of(finalPoint(r)))
				if b, ok := base[r.Seed]; ok && name != e.Baseline {
					diff = append(diff, m.Of(finalPoint(r))-m.Of(finalPoint(b)))
				}
			}
			s.Initial = append(s.Initial, StatOf(ini))
			s.Final = append(s.Final, StatOf(fin))
			if base != nil && name != e.Baseline {
				s.VsBaseline = append(s.VsBaseline, StatOf(diff))
			}
		}
		out = append(out, s)
	}
	return out
}

// pm prints a Stat of rates as "mean ± sd" in percent.
func pm(s Stat) string {
	if s.N == 0 {
		return "–"
	}
	if s.N == 1 {
		return pct1(s.Mean)
	}
	return pct1(s.Mean) + " ± " + pct1(s.SD)
}

// pmSigned prints a Stat of rate differences as signed points ± sd.
func pmSigned(s Stat) string {
	if s.N == 0 {
		return "–"
	}
	v := fmt.Sprintf("%+.1f", 100*s.Mean)
	if s.N > 1 {
		v += fmt.Sprintf(" ± %.1f", 100*s.SD)
	}
	return v
}

// budgetLine describes the experiment's budget in one sentence.
func budgetLine(e *Experiment) string {
	bd := e.Budget
	seeds := make([]string, len(e.Seeds))
	for i, s := range e.Seeds {
		seeds[i] = fmt.Sprint(s)
	}
	epochs := ""
	if bd.Epochs > 1 {
		epochs = fmt.Sprintf(" × %d epochs", bd.Epochs)
	}
	agents := bd.Agents
	switch agents {
	case "":
		agents = "2 agents" // written before the field
	case "1":
		agents = "1 agent"
	default:
		agents += " agents"
	}
	return fmt.Sprintf("Policy %s; %d stages × %d training instances%s (%s, group %d); validation %d per size (2 agents, sizes 3..10); benchmark %d per (agents, size, wait subset) for 3/4/5 agents; seeds %s.",
		bd.Policy, bd.Stages, bd.Instances, epochs, agents, bd.GroupSize, bd.ValPerSize, bd.EvalPerSize, strings.Join(seeds, ", "))
}

// experimentTables builds the final-results table (initial policy first)
// and, with a baseline, the paired-difference table.
func experimentTables(e *Experiment, sums []Summary) (final, paired, best *table) {
	ms := Metrics(e)
	final = finalTable(e, ms, sums)
	if e.Baseline == "" {
		return final, nil, nil
	}
	return final, pairedTable(e, ms, sums), bestTable(e, ms, sums)
}

// finalTable lists each metric's final value per strategy, after the
// initial policy's row (one run per seed) when there are strategies.
func finalTable(e *Experiment, ms []Metric, sums []Summary) *table {
	final := &table{header: []string{"strategy", "runs"}}
	for _, m := range ms {
		final.header = append(final.header, m.Label)
	}
	if len(sums) > 0 {
		// The initial policy depends only on the seed: one run per seed.
		var all []*Run
		seen := map[uint64]bool{}
		for i := range e.Runs {
			if !seen[e.Runs[i].Seed] {
				seen[e.Runs[i].Seed] = true
				all = append(all, &e.Runs[i])
			}
		}
		row := []string{"initial policy", fmt.Sprint(len(all))}
		for _, m := range ms {
			var xs []float64
			for _, r := range all {
				xs = append(xs, m.Of(&r.Initial))
			}
			row = append(row, pm(StatOf(xs)))
		}
		final.rows = append(final.rows, row)
	}
	for _, s := range sums {
		row := []string{s.Strategy, fmt.Sprint(s.Runs)}
		for mi := range ms {
			row = append(row, pm(s.Final[mi]))
		}
		final.rows = append(final.rows, row)
	}
	return final
}

// pairedTable lists each strategy's paired difference to the baseline.
func pairedTable(e *Experiment, ms []Metric, sums []Summary) *table {
	paired := &table{header: []string{"strategy − " + e.Baseline, "seeds"}}
	for _, m := range ms {
		paired.header = append(paired.header, m.Label)
	}
	for _, s := range sums {
		if s.VsBaseline == nil {
			continue
		}
		row := []string{s.Strategy, fmt.Sprint(s.VsBaseline[0].N)}
		for mi := range ms {
			row = append(row, pmSigned(s.VsBaseline[mi]))
		}
		paired.rows = append(paired.rows, row)
	}
	return paired
}

// bestTable names, for each non-optimality metric, the strategy with the
// best final mean and its difference to the baseline; nil when there is
// none.
func bestTable(e *Experiment, ms []Metric, sums []Summary) *table {
	best := &table{header: []string{"metric", "best strategy", "its mean", e.Baseline + " mean", "paired difference (points)"}}
	var base *Summary
	for i := range sums {
		if sums[i].Strategy == e.Baseline {
			base = &sums[i]
		}
	}
	for mi, m := range ms {
		if m.Optimal || base == nil {
			continue
		}
		bi := -1
		for i, s := range sums {
			if s.VsBaseline == nil || s.Final[mi].N == 0 {
				continue
			}
			if bi < 0 || s.Final[mi].Mean > sums[bi].Final[mi].Mean {
				bi = i
			}
		}
		if bi < 0 {
			continue
		}
		best.rows = append(best.rows, []string{m.Label, sums[bi].Strategy, pm(sums[bi].Final[mi]), pm(base.Final[mi]), pmSigned(sums[bi].VsBaseline[mi])})
	}
	if len(best.rows) == 0 {
		return nil
	}
	return best
}

// curveLabels labels curve points: "init", "0", "1", ...
func curveLabels(n int) []string {
	out := []string{"init"}
	for s := 0; s < n-1; s++ {
		out = append(out, fmt.Sprint(s))
	}
	return out
}

// curveTable lists metric m per strategy and curve point (mean over seeds).
func curveTable(sums []Summary, mi int) *table {
	n := 0
	for _, s := range sums {
		n = max(n, len(s.Curve))
	}
	t := &table{header: append([]string{"strategy"}, curveLabels(n)...)}
	for _, s := range sums {
		row := []string{s.Strategy}
		for i := range n {
			if i < len(s.Curve) {
				row = append(row, pm(s.Curve[i][mi]))
			} else {
				row = append(row, "–")
			}
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// meanConfigs returns, per stage, the strategy's configs averaged over
// seeds: sizes (sorted) and [ratio][size][stage] values (data, hole,
// wait), NaN where no run had that size at that stage.
func meanConfigs(runs []*Run) (sizes []int, vals [3][][]float64, stages int) {
	for _, r := range runs {
		stages = max(stages, len(r.Stages))
		for _, p := range r.Stages {
			if p.Config == nil {
				continue
			}
			for _, sc := range p.Config.Sizes {
				if !slices.Contains(sizes, sc.Size) {
					sizes = append(sizes, sc.Size)
				}
			}
		}
	}
	slices.Sort(sizes)
	for k := range vals {
		vals[k] = make([][]float64, len(sizes))
		for i := range sizes {
			vals[k][i] = make([]float64, stages)
		}
	}
	for i, size := range sizes {
		for st := range stages {
			var sum [3]float64
			n := 0
			for _, r := range runs {
				if st >= len(r.Stages) || r.Stages[st].Config == nil {
					continue
				}
				for _, sc := range r.Stages[st].Config.Sizes {
					if sc.Size == size {
						sum[0] += sc.DataRatio
						sum[1] += sc.HoleRatio
						sum[2] += sc.WaitRatio
						n++
					}
				}
			}
			for k := range vals {
				if n == 0 {
					vals[k][i][st] = math.NaN()
				} else {
					vals[k][i][st] = sum[k] / float64(n)
				}
			}
		}
	}
	return sizes, vals, stages
}

// configTable lists the mean config per stage: one row per stage, one
// "data / hole / wait" column per size.
func configTable(runs []*Run) *table {
	sizes, vals, stages := meanConfigs(runs)
	t := &table{header: []string{"stage"}}
	for _, s := range sizes {
		t.header = append(t.header, fmt.Sprintf("%d×%d d/h/w", s, s))
	}
	for st := range stages {
		row := []string{fmt.Sprint(st)}
		for i := range sizes {
			if math.IsNaN(vals[0][i][st]) {
				row = append(row, "–")
				continue
			}
			row = append(row, fmt.Sprintf("%.2f/%.2f/%.2f", vals[0][i][st], vals[1][i][st], vals[2][i][st]))
		}
		t.rows = append(t.rows, row)
	}
	return t
}

// attemptsText summarises audit attempts in one line.
func attemptsText(as []Attempt) string {
	if len(as) == 0 {
		return "–"
	}
	var parts []string
	for _, a := range as {
		verdict := "rejected"
		if a.Accepted {
			verdict = "accepted"
		}
		s := fmt.Sprintf("#%d %s", a.Attempt, verdict)
		if a.Reason != "" && a.Reason != "accepted" {
			s += ": " + a.Reason
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// auditTable lists a run's stages with config, proposer, rationale and
// audit attempts.
func auditTable(r *Run) *table {
	t := &table{header: []string{"stage", "config", "proposer", "rationale", "audit", "val valid", "train valid"}}
	for _, p := range r.Stages {
		t.rows = append(t.rows, []string{fmt.Sprint(p.Stage), p.ConfigVersion, p.Proposer, p.Rationale, attemptsText(p.Audit), pct1(ratesOrNaN(p.Val, false)), pct1(ratesOrNaN(p.Train, false))})
	}
	return t
}

func ratesOrNaN(r Rate, optimal bool) float64 {
	if r.Episodes == 0 {
		return math.NaN()
	}
	if optimal {
		return r.Optimal
	}
	return r.Valid
}

// ExperimentSummaryMarkdown is ExperimentMarkdown up to its learning
// curves: the title, budget, final table and paired differences, as `t2t
// experiment` prints them at the end of a run.
func ExperimentSummaryMarkdown(e *Experiment) string {
	md := ExperimentMarkdown(e)
	if i := strings.Index(md, "\n## Learning curves"); i >= 0 {
		md = md[:i+1]
	}
	return md
}

// ExperimentMarkdown renders the experiment: final table, paired
// differences to the baseline, learning curves, configs per stage and the
// engineer's audited rationale per run.
func ExperimentMarkdown(e *Experiment) string {
	var b strings.Builder
	sums := Summarize(e)
	ms := Metrics(e)
	fmt.Fprintf(&b, "# %s\n\n", e.Title)
	if e.Command != "" {
		fmt.Fprintf(&b, "Command: `%s`\n\n", e.Command)
	}
	b.WriteString(budgetLine(e) + "\n\n")
	final, paired, best := experimentTables(e, sums)
	b.WriteString("## Final results (after the last stage; % as mean ± SD over seeds)\n\n")
	final.markdown(&b)
	if paired != nil {
		fmt.Fprintf(&b, "\n## Paired difference to %s (same seed; percentage points, mean ± SD)\n\n", e.Baseline)
		paired.markdown(&b)
	}
	b.WriteString("\n## Per run: engineer proposals the guardrails accepted, final valid rates")
	if e.Baseline != "" {
		fmt.Fprintf(&b, ", paired difference to %s (points)", e.Baseline)
	}
	b.WriteString("\n\n")
	runsTable(e).markdown(&b)
	if best != nil {
		fmt.Fprintf(&b, "\n## Best strategy against %s, per valid-rate metric (by final mean)\n\n", e.Baseline)
		best.markdown(&b)
	}
	b.WriteString("\n## Learning curves (mean ± SD over seeds, %)\n")
	for mi, m := range ms {
		fmt.Fprintf(&b, "\n### %s\n\n", m.Label)
		curveTable(sums, mi).markdown(&b)
	}
	b.WriteString("\n## Generator configs per stage (mean over seeds: data / hole / wait ratio per size)\n")
	for _, name := range e.Strategies {
		fmt.Fprintf(&b, "\n### %s\n\n", name)
		configTable(runsOf(e, name)).markdown(&b)
	}
	b.WriteString("\n## Engineer rationale per stage (from the store's configs and audit log)\n")
	for _, name := range e.Strategies {
		for _, r := range runsOf(e, name) {
			fmt.Fprintf(&b, "\n### %s, seed %d (run %s)\n\n", r.Strategy, r.Seed, r.RunID)
			auditTable(r).markdown(&b)
		}
	}
	return b.String()
}

// ExperimentCSV renders one row per run and curve point (initial first);
// rates are percentages.
func ExperimentCSV(e *Experiment) string {
	var b strings.Builder
	ms := Metrics(e)
	head := []string{"strategy", "seed", "run_id", "stage", "config_version", "train_valid_pct"}
	for _, m := range ms {
		head = append(head, m.Key+"_pct")
	}
	head = append(head, "updates", "seconds")
	csvRow(&b, head...)
	for _, name := range e.Strategies {
		for _, r := range runsOf(e, name) {
			for i := 0; ; i++ {
				p, ok := r.point(i)
				if !ok {
					break
				}
				stage := "init"
				if i > 0 {
					stage = fmt.Sprint(p.Stage)
				}
				f := []string{r.Strategy, fmt.Sprint(r.Seed), r.RunID, stage, p.ConfigVersion, pct2(ratesOrNaN(p.Train, false))}
				for _, m := range ms {
					f = append(f, pct2(m.Of(p)))
				}
				f = append(f, fmt.Sprint(p.Updates), fmt.Sprintf("%.1f", p.Seconds))
				csvRow(&b, f...)
			}
		}
	}
	return b.String()
}

// SummaryCSV renders one row per strategy and metric: initial and final
// mean, SD, min and max over seeds, and the paired difference to the
// baseline; in percent (points for differences).
func SummaryCSV(e *Experiment) string {
	var b strings.Builder
	ms := Metrics(e)
	csvRow(&b, "strategy", "runs", "metric", "initial_mean", "initial_sd", "final_mean", "final_sd", "final_min", "final_max", "vs_baseline_mean", "vs_baseline_sd", "vs_baseline_n")
	num := func(s Stat, v float64) string {
		if s.N == 0 {
			return ""
		}
		return pct2(v)
	}
	for _, s := range Summarize(e) {
		for mi, m := range ms {
			ini, fin := s.Initial[mi], s.Final[mi]
			f := []string{s.Strategy, fmt.Sprint(s.Runs), m.Key, num(ini, ini.Mean), num(ini, ini.SD), num(fin, fin.Mean), num(fin, fin.SD), num(fin, fin.Min), num(fin, fin.Max), "", "", ""}
			if s.VsBaseline != nil {
				d := s.VsBaseline[mi]
				f[9], f[10], f[11] = num(d, d.Mean), num(d, d.SD), fmt.Sprint(d.N)
			}
			csvRow(&b, f...)
		}
	}
	return b.String()
}

// experimentDoc is the JSON document of an Experiment: the runs and the
// derived summary.
type experimentDoc struct {
	Kind string `json:"kind"`
	*Experiment
	Metrics []Metric  `json:"metrics"`
	Summary []Summary `json:"summary"`
}

const experimentKind = "t2t-experiment/1"

// ExperimentJSON renders the experiment and its summary as indented JSON;
// ParseExperimentJSON reads the experiment back.
func ExperimentJSON(e *Experiment) ([]byte, error) {
	b, err := json.MarshalIndent(experimentDoc{Kind: experimentKind, Experiment: e, Metrics: Metrics(e), Summary: Summarize(e)}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseExperimentJSON reads a document written by ExperimentJSON.
func ParseExperimentJSON(b []byte) (*Experiment, error) {
	d := experimentDoc{Experiment: &Experiment{}}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if d.Kind != experimentKind {
		return nil, fmt.Errorf("%w: kind %q, want %q", ErrFormat, d.Kind, experimentKind)
	}
	return d.Experiment, nil
}
