package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/t2t-lab/t2t/env"
)

// ErrFormat marks a JSON document that is not a report of the expected kind.
var ErrFormat = errors.New("report: not a report document")

// Outcome is one instance's verified answer.
type Outcome struct {
	InstanceID string `json:"instance_id"`
	Agents     int    `json:"agents"`
	Size       int    `json:"size"`
	// Subset is the instance's wait-ratio subset (env.SuiteGroup.Subset);
	// 0 when the suite has no subsets.
	Subset  float64 `json:"subset,omitempty"`
	Valid   bool    `json:"valid"`
	Optimal bool    `json:"optimal"`
	// Failed lists the failure categories (env.Category names) of an
	// invalid answer, each once.
	Failed []string `json:"failed,omitempty"`
	// Plan is the answer's paths as the verifier read them, one per agent
	// (env.Verify of the instance and this plan gives the outcome again);
	// nil for an answer that did not parse. Evaluations keep it in their
	// answer cache, so what a policy wrote can be read back.
	Plan [][]env.Pos `json:"plan,omitempty"`
}

// Cell counts the outcomes of one table cell.
type Cell struct {
	// Agents, Size and Subset locate the cell; a zero Size or Subset means
	// the cell spans all sizes or all subsets.
	Agents   int     `json:"agents,omitempty"`
	Size     int     `json:"size,omitempty"`
	Subset   float64 `json:"subset,omitempty"`
	Episodes int64   `json:"episodes"`
	Valid    int64   `json:"valid"`
	Optimal  int64   `json:"optimal"`
	// Failures counts invalid episodes per failure category; an episode
	// that failed several checks counts under each of their categories.
	Failures map[string]int64 `json:"failures,omitempty"`
	// SizeMeanValid and SizeMeanOptimal are set on cells spanning all
	// sizes: the unweighted mean over sizes of the per-size rates (the
	// paper's "mean over sizes").
	SizeMeanValid   float64 `json:"size_mean_valid,omitempty"`
	SizeMeanOptimal float64 `json:"size_mean_optimal,omitempty"`
	// Plans counts the episodes whose outcome holds the answer's plan, and
	// Waiting those of them in which some agent waits (stays on a cell)
	// before its last move: whether a policy ever yields to another.
	Plans   int64 `json:"plans,omitempty"`
	Waiting int64 `json:"waiting,omitempty"`
}

// ValidRate is Valid/Episodes (NaN without episodes).
func (c Cell) ValidRate() float64 { return rate(c.Valid, c.Episodes) }

// OptimalRate is Optimal/Episodes (NaN without episodes).
func (c Cell) OptimalRate() float64 { return rate(c.Optimal, c.Episodes) }

// FailureRate is the share of episodes that failed category cat.
func (c Cell) FailureRate(cat string) float64 { return rate(c.Failures[cat], c.Episodes) }

func rate(k, n int64) float64 {
	if n <= 0 {
		return math.NaN()
	}
	return float64(k) / float64(n)
}

func (c *Cell) add(o *Outcome) {
	c.Episodes++
	if o.Plan != nil {
		c.Plans++
		if planWaits(o.Plan) {
			c.Waiting++
		}
	}
	if o.Valid {
		c.Valid++
		if o.Optimal {
			c.Optimal++
		}
		return
	}
	for _, f := range o.Failed {
		if c.Failures == nil {
			c.Failures = map[string]int64{}
		}
		c.Failures[f]++
	}
}

// planWaits reports whether some path of plan stays on a cell and moves on
// later: a wait before the agent's last move.
func planWaits(plan [][]env.Pos) bool {
	for _, path := range plan {
		last := len(path) - 1
		for last > 0 && path[last-1] == path[last] {
			last--
		}
		for t := 1; t <= last; t++ {
			if path[t] == path[t-1] {
				return true
			}
		}
	}
	return false
}

// Eval is one policy's results on one suite, folded into the paper's
// tables.
type Eval struct {
	Policy string `json:"policy"`
	Suite  string `json:"suite"`
	// Agents, Sizes and Subsets list the values present, sorted.
	Agents  []int     `json:"agents"`
	Sizes   []int     `json:"sizes"`
	Subsets []float64 `json:"subsets,omitempty"`
	// Categories is the failure category order (env.Category order).
	Categories []string `json:"categories"`
	// Total spans everything; ByAgents one cell per agent count (with the
	// size means); BySize one per (agents, size); BySubset one per
	// (agents, subset). Cells are sorted by agents, then size or subset.
	Total    Cell   `json:"total"`
	ByAgents []Cell `json:"by_agents"`
	BySize   []Cell `json:"by_size"`
	BySubset []Cell `json:"by_subset,omitempty"`
}

// Categories returns the failure category names in env.Category order.
func Categories() []string {
	out := make([]string, env.NumCategories)
	for c := range env.NumCategories {
		out[c] = c.String()
	}
	return out
}

// Tally folds outcomes into an Eval. Outcomes with Subset 0 count in no
// subset cell.
func Tally(policy, suite string, outs []Outcome) *Eval {
	e := &Eval{Policy: policy, Suite: suite, Categories: Categories()}
	type sk struct{ agents, size int }
	type bk struct {
		agents int
		subset float64
	}
	bySize := map[sk]*Cell{}
	bySub := map[bk]*Cell{}
	byAg := map[int]*Cell{}
	for i := range outs {
		o := &outs[i]
		e.Total.add(o)
		k := sk{o.Agents, o.Size}
		if bySize[k] == nil {
			bySize[k] = &Cell{Agents: o.Agents, Size: o.Size}
		}
		bySize[k].add(o)
		if byAg[o.Agents] == nil {
			byAg[o.Agents] = &Cell{Agents: o.Agents}
		}
		byAg[o.Agents].add(o)
		if o.Subset != 0 {
			b := bk{o.Agents, o.Subset}
			if bySub[b] == nil {
				bySub[b] = &Cell{Agents: o.Agents, Subset: o.Subset}
			}
			bySub[b].add(o)
		}
	}
	for k, c := range bySize {
		e.BySize = append(e.BySize, *c)
		if !slices.Contains(e.Sizes, k.size) {
			e.Sizes = append(e.Sizes, k.size)
		}
	}
	for k, c := range bySub {
		e.BySubset = append(e.BySubset, *c)
		if !slices.Contains(e.Subsets, k.subset) {
			e.Subsets = append(e.Subsets, k.subset)
		}
	}
	for a, c := range byAg {
		e.Agents = append(e.Agents, a)
		e.ByAgents = append(e.ByAgents, *c)
	}
	e.sortCells()
	sizeMeans(e.BySize, func(c *Cell) bool { return true }, &e.Total)
	for i := range e.ByAgents {
		a := e.ByAgents[i].Agents
		sizeMeans(e.BySize, func(c *Cell) bool { return c.Agents == a }, &e.ByAgents[i])
	}
	return e
}

// sortCells sorts the agent counts, sizes and subsets, and the cells by
// (agents, size, subset).
func (e *Eval) sortCells() {
	slices.Sort(e.Agents)
	slices.Sort(e.Sizes)
	slices.Sort(e.Subsets)
	slices.SortFunc(e.BySize, cmpCell)
	slices.SortFunc(e.BySubset, cmpCell)
	slices.SortFunc(e.ByAgents, cmpCell)
}

// cmpCell orders cells by agents, then size, then subset.
func cmpCell(a, b Cell) int {
	if a.Agents != b.Agents {
		return a.Agents - b.Agents
	}
	if a.Size != b.Size {
		return a.Size - b.Size
	}
	switch {
	case a.Subset < b.Subset:
		return -1
	case a.Subset > b.Subset:
		return 1
	}
	return 0
}

// sizeMeans sets dst's size means from the per-(agents, size) cells that
// keep selects: first the mean over agent counts per size, then over sizes.
func sizeMeans(cells []Cell, keep func(*Cell) bool, dst *Cell) {
	perSize := map[int][]float64{}
	perSizeOpt := map[int][]float64{}
	var sizes []int
	for i := range cells {
		c := &cells[i]
		if !keep(c) || c.Episodes == 0 {
			continue
		}
		if _, ok := perSize[c.Size]; !ok {
			sizes = append(sizes, c.Size)
		}
		perSize[c.Size] = append(perSize[c.Size], c.ValidRate())
		perSizeOpt[c.Size] = append(perSizeOpt[c.Size], c.OptimalRate())
	}
	if len(sizes) == 0 {
		return
	}
	slices.Sort(sizes)
	var v, o float64
	for _, s := range sizes {
		v += mean(perSize[s])
		o += mean(perSizeOpt[s])
	}
	dst.SizeMeanValid = v / float64(len(sizes))
	dst.SizeMeanOptimal = o / float64(len(sizes))
}

func mean(xs []float64) float64 {
	s := 0.0
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// cell finds the cell of list with the given agents, size and subset.
func findCell(list []Cell, agents, size int, subset float64) (Cell, bool) {
	for _, c := range list {
		if c.Agents == agents && c.Size == size && c.Subset == subset {
			return c, true
		}
	}
	return Cell{}, false
}

// vo prints "valid / optimal" in percent.
func vo(valid, optimal float64) string {
	if math.IsNaN(valid) {
		return "–"
	}
	return pct1(valid) + " / " + pct1(optimal)
}

func subsetLabel(s float64) string { return fmt.Sprintf("%.2f", s) }

// evalTables builds the eval's tables: by size, by subset (nil without
// subsets) and the failure breakdown.
func evalTables(e *Eval) (bySize, bySubset, failures *table) {
	bySize = &table{header: []string{"agents"}}
	for _, s := range e.Sizes {
		bySize.header = append(bySize.header, fmt.Sprintf("%d×%d", s, s))
	}
	bySize.header = append(bySize.header, "mean over sizes", "episodes")
	for _, a := range e.Agents {
		row := []string{fmt.Sprint(a)}
		for _, s := range e.Sizes {
			c, ok := findCell(e.BySize, a, s, 0)
			if !ok {
				row = append(row, "–")
				continue
			}
			row = append(row, vo(c.ValidRate(), c.OptimalRate()))
		}
		c, _ := findCell(e.ByAgents, a, 0, 0)
		row = append(row, vo(c.SizeMeanValid, c.SizeMeanOptimal), fmt.Sprint(c.Episodes))
		bySize.rows = append(bySize.rows, row)
	}
	if len(e.Subsets) > 0 {
		bySubset = &table{header: []string{"agents"}}
		for _, s := range e.Subsets {
			bySubset.header = append(bySubset.header, "wait "+subsetLabel(s))
		}
		bySubset.header = append(bySubset.header, "all")
		for _, a := range e.Agents {
			row := []string{fmt.Sprint(a)}
			for _, s := range e.Subsets {
				c, ok := findCell(e.BySubset, a, 0, s)
				if !ok {
					row = append(row, "–")
					continue
				}
				row = append(row, vo(c.ValidRate(), c.OptimalRate()))
			}
			c, _ := findCell(e.ByAgents, a, 0, 0)
			row = append(row, vo(c.ValidRate(), c.OptimalRate()))
			bySubset.rows = append(bySubset.rows, row)
		}
	}
	failures = &table{header: append([]string{"agents", "episodes", "invalid"}, e.Categories...)}
	for _, c := range append(slices.Clone(e.ByAgents), e.Total) {
		name := fmt.Sprint(c.Agents)
		if c.Agents == 0 {
			name = "all"
		}
		row := []string{name, fmt.Sprint(c.Episodes), pct1(rate(c.Episodes-c.Valid, c.Episodes))}
		for _, cat := range e.Categories {
			row = append(row, pct1(c.FailureRate(cat)))
		}
		failures.rows = append(failures.rows, row)
	}
	return bySize, bySubset, failures
}

// EvalMarkdown renders the eval's tables as Markdown.
func EvalMarkdown(e *Eval) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Evaluation: %s on %s\n\n", e.Policy, e.Suite)
	fmt.Fprintf(&b, "%d episodes; valid %s %%, optimal %s %% overall (mean over sizes %s / %s). Cells are valid %% / optimal %%: valid = all eight checks pass, optimal = valid at the optimal cost.\n\n",
		e.Total.Episodes, pct1(e.Total.ValidRate()), pct1(e.Total.OptimalRate()), pct1(e.Total.SizeMeanValid), pct1(e.Total.SizeMeanOptimal))
	bySize, bySubset, failures := evalTables(e)
	b.WriteString("## By agents and map size\n\n")
	bySize.markdown(&b)
	if bySubset != nil {
		b.WriteString("\n## By wait-ratio subset\n\n")
		bySubset.markdown(&b)
	}
	b.WriteString("\n## Failure breakdown (% of episodes failing each check category)\n\n")
	failures.markdown(&b)
	if e.Total.Plans > 0 {
		b.WriteString("\n## Waits (answers in which some agent waits before its last move)\n\n")
		waits := &table{header: []string{"agents", "answers with a plan", "with a wait", "with a wait %"}}
		for _, c := range append(slices.Clone(e.ByAgents), e.Total) {
			name := fmt.Sprint(c.Agents)
			if c.Agents == 0 {
				name = "all"
			}
			waits.rows = append(waits.rows, []string{name, fmt.Sprint(c.Plans), fmt.Sprint(c.Waiting), pct1(rate(c.Waiting, c.Plans))})
		}
		waits.markdown(&b)
	}
	return b.String()
}

// EvalCSV renders every cell as one CSV row (long format). Column table
// is "total", "agents", "size" or "subset"; rates are percentages.
func EvalCSV(e *Eval) string {
	var b strings.Builder
	head := []string{"table", "agents", "size", "subset", "episodes", "valid", "optimal", "valid_pct", "optimal_pct", "size_mean_valid_pct", "size_mean_optimal_pct"}
	for _, c := range e.Categories {
		head = append(head, "fail_"+c)
	}
	csvRow(&b, head...)
	row := func(kind string, c Cell) {
		f := []string{kind, "", "", "", fmt.Sprint(c.Episodes), fmt.Sprint(c.Valid), fmt.Sprint(c.Optimal), pct2(c.ValidRate()), pct2(c.OptimalRate()), "", ""}
		if c.Agents != 0 {
			f[1] = fmt.Sprint(c.Agents)
		}
		if c.Size != 0 {
			f[2] = fmt.Sprint(c.Size)
		}
		if c.Subset != 0 {
			f[3] = subsetLabel(c.Subset)
		}
		if kind == "total" || kind == "agents" {
			f[9], f[10] = pct2(c.SizeMeanValid), pct2(c.SizeMeanOptimal)
		}
		for _, cat := range e.Categories {
			f = append(f, fmt.Sprint(c.Failures[cat]))
		}
		csvRow(&b, f...)
	}
	row("total", e.Total)
	for _, c := range e.ByAgents {
		row("agents", c)
	}
	for _, c := range e.BySize {
		row("size", c)
	}
	for _, c := range e.BySubset {
		row("subset", c)
	}
	return b.String()
}

// evalDoc is the JSON document of an Eval.
type evalDoc struct {
	Kind string `json:"kind"`
	*Eval
}

const evalKind = "t2t-eval/1"

// EvalJSON renders the eval as indented JSON; ParseEvalJSON reads it back.
func EvalJSON(e *Eval) ([]byte, error) {
	b, err := json.MarshalIndent(evalDoc{Kind: evalKind, Eval: e}, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// ParseEvalJSON reads a document written by EvalJSON.
func ParseEvalJSON(b []byte) (*Eval, error) {
	d := evalDoc{Eval: &Eval{}}
	if err := json.Unmarshal(b, &d); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrFormat, err)
	}
	if d.Kind != evalKind {
		return nil, fmt.Errorf("%w: kind %q, want %q", ErrFormat, d.Kind, evalKind)
	}
	return d.Eval, nil
}

// EvalSizeSVG plots valid % (solid) and optimal % (dashed) by map size,
// one colour per agent count.
func EvalSizeSVG(e *Eval) string {
	c := &lineChart{title: "Success by map size: " + e.Policy + " on " + e.Suite, xLabel: "map size N (N×N)", yLabel: "% of episodes", yMax: 100, width: 560, height: 300, legend: true}
	for _, s := range e.Sizes {
		c.xLabels = append(c.xLabels, fmt.Sprint(s))
	}
	for i, a := range e.Agents {
		v := series{name: fmt.Sprintf("%d agents valid", a), color: color(i)}
		o := series{name: fmt.Sprintf("%d agents optimal", a), color: color(i), dash: true}
		for _, s := range e.Sizes {
			cell, ok := findCell(e.BySize, a, s, 0)
			if !ok {
				v.ys = append(v.ys, math.NaN())
				o.ys = append(o.ys, math.NaN())
				continue
			}
			v.ys = append(v.ys, 100*cell.ValidRate())
			o.ys = append(o.ys, 100*cell.OptimalRate())
		}
		c.series = append(c.series, v, o)
	}
	return c.svg()
}

// EvalFailureSVG plots the failure breakdown: per category, the share of
// episodes that failed it, one bar per agent count.
func EvalFailureSVG(e *Eval) string {
	c := &barChart{title: "Failure breakdown: " + e.Policy + " on " + e.Suite, yLabel: "% of episodes failing", width: 640, height: 300}
	c.xLabels = e.Categories
	top := 0.0
	for i, cell := range e.ByAgents {
		s := series{name: fmt.Sprintf("%d agents", cell.Agents), color: color(i)}
		for _, cat := range e.Categories {
			v := 100 * cell.FailureRate(cat)
			s.ys = append(s.ys, v)
			if v > top {
				top = v
			}
		}
		c.series = append(c.series, s)
	}
	c.yMax = niceMax(top)
	return c.svg()
}

// niceMax rounds v up to 10, 20, 25, 50 or 100 (percent axes).
func niceMax(v float64) float64 {
	for _, m := range []float64{10, 20, 25, 50} {
		if v <= m {
			return m
		}
	}
	return 100
}

// EvalHTML renders the eval as a self-contained HTML page: the tables and
// both plots inline.
func EvalHTML(e *Eval) string {
	var b strings.Builder
	htmlOpen(&b, "Evaluation: "+e.Policy+" on "+e.Suite)
	fmt.Fprintf(&b, `<p class="note">%d episodes; valid %s %%, optimal %s %% overall (mean over sizes %s / %s). Cells are valid %% / optimal %%.</p>`+"\n",
		e.Total.Episodes, pct1(e.Total.ValidRate()), pct1(e.Total.OptimalRate()), pct1(e.Total.SizeMeanValid), pct1(e.Total.SizeMeanOptimal))
	bySize, bySubset, failures := evalTables(e)
	b.WriteString("<h2>By agents and map size</h2>\n")
	bySize.html(&b, "results")
	if bySubset != nil {
		b.WriteString("<h2>By wait-ratio subset</h2>\n")
		bySubset.html(&b, "results")
	}
	b.WriteString("<h2>Failure breakdown (% of episodes failing each check category)</h2>\n")
	failures.html(&b, "results")
	b.WriteString(`<div class="charts">` + EvalSizeSVG(e) + EvalFailureSVG(e) + "</div>\n")
	htmlClose(&b)
	return b.String()
}
