package textpolicy

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/report"
)

// SFTStep runs one supervised (behaviour-cloning) step on ins: the mean cross-entropy of the
// target tokens of kind (TargetOf) after each prompt, through the learner.Trainer (BCStep) that
// GRPO uses, while no generation runs. It counts as a policy version.
func (p *Policy) SFTStep(ins []*env.Instance, kind TargetPlan) (learner.UpdateStats, error) {
	samples := make([]engine.Sample, 0, len(ins))
	for _, in := range ins {
		target, err := p.TargetOf(in, kind)
		if err != nil {
			return learner.UpdateStats{}, err
		}
		samples = append(samples, engine.Sample{Prompt: p.Prompt(in), Completion: target})
	}
	return p.BCStep(samples)
}

// BCStep runs one supervised (behaviour-cloning) step on samples: the mean cross-entropy of
// each Completion after its Prompt (token ids), as SFTStep does for env answers; any text can
// be taught this way (an engineer's answer to its prompt, say). It counts as a policy version.
func (p *Policy) BCStep(samples []engine.Sample) (learner.UpdateStats, error) {
	batch, err := engine.NewSeqBatch(samples)
	if err != nil {
		return learner.UpdateStats{}, err
	}
	st, err := p.step(engine.StepBC, batch)
	if err != nil {
		return st, fmt.Errorf("textpolicy: sft: %w", err)
	}
	st.Step = p.version.Add(1)
	return st, nil
}

// Evaluate plays each instance once, greedily (evaluate.Play, one batch per agent count, seed
// 0), and tallies the verified answers (report.Tally; ParsableRate, SizeSummary and
// FailureSummary summarise them).
func (p *Policy) Evaluate(ins []*env.Instance) (*report.Eval, error) {
	_, e, err := p.evaluate(ins)
	return e, err
}

// evaluate is Evaluate that also returns the episodes it tallied (a map probe compares their
// plans).
func (p *Policy) evaluate(ins []*env.Instance) ([]learner.Episode, *report.Eval, error) {
	eps, err := evaluate.PlayEpisodes(p, ins, evaluate.PlayOptions{})
	if err != nil {
		return nil, nil, err
	}
	outs := make([]report.Outcome, len(eps))
	for i := range eps {
		outs[i] = evaluate.OutcomeOf(ins[i], &eps[i].Report)
	}
	return eps, report.Tally(p.Name(), "", outs), nil
}

// ParsableRate is the share of e's answers that parse (0 without answers).
func ParsableRate(e *report.Eval) float64 {
	if e.Total.Episodes == 0 {
		return 0
	}
	return float64(e.Total.Episodes-e.Total.Failures[env.CategoryParse.String()]) / float64(e.Total.Episodes)
}

// FailureSummary lists the verifier checks that e's answers failed, by count, most first, ties
// in check order: "goal_reached 30, hole_free 12"; "none" when every answer passed every check.
// An answer that parses can fail several checks; one that does not counts for parsable only.
func FailureSummary(e *report.Eval) string {
	var order []env.Check
	for c := range env.NumChecks {
		if failed(e, c) > 0 {
			order = append(order, c)
		}
	}
	slices.SortStableFunc(order, func(a, b env.Check) int { return cmp.Compare(failed(e, b), failed(e, a)) })
	parts := make([]string, len(order))
	for i, c := range order {
		parts[i] = fmt.Sprintf("%s %d", c, failed(e, c))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// failed counts e's answers that failed check c (each check has its own failure category).
func failed(e *report.Eval, c env.Check) int64 {
	return e.Total.Failures[env.CategoryOf(c).String()]
}

// SizeSummary lists e's valid answers per map size, over all agent counts: "3x3 4/16, 4x4 1/16,
// 5x5 0/16".
func SizeSummary(e *report.Eval) string {
	var valid, episodes = map[int]int64{}, map[int]int64{}
	for _, c := range e.BySize {
		valid[c.Size] += c.Valid
		episodes[c.Size] += c.Episodes
	}
	parts := make([]string, len(e.Sizes))
	for i, s := range e.Sizes {
		parts[i] = fmt.Sprintf("%dx%d %d/%d", s, s, valid[s], episodes[s])
	}
	return strings.Join(parts, ", ")
}

// AgentsSummary is "2 agents 5/12, 3 agents 1/12": valid answers out of instances per agent
// count.
func AgentsSummary(e *report.Eval) string {
	parts := make([]string, len(e.ByAgents))
	for i, c := range e.ByAgents {
		parts[i] = fmt.Sprintf("%d agents %d/%d", c.Agents, c.Valid, c.Episodes)
	}
	return strings.Join(parts, ", ")
}

// EvalShape is "2 agents, 3x3..5x5" (or "2,3,4,5 agents, 3x3..10x10"): the agent counts and map
// sizes of an evaluation.
func EvalShape(e *report.Eval) string {
	sizes := "no sizes"
	if n := len(e.Sizes); n > 0 {
		sizes = fmt.Sprintf("%dx%d", e.Sizes[0], e.Sizes[0])
		if n > 1 {
			sizes += fmt.Sprintf("..%dx%d", e.Sizes[n-1], e.Sizes[n-1])
		}
	}
	agents := make([]string, len(e.Agents))
	for i, a := range e.Agents {
		agents[i] = strconv.Itoa(a)
	}
	return strings.Join(agents, ",") + " agents, " + sizes
}

// SFTConfig is the distribution supervised fine-tuning trains and evaluates on by default: 2
// agents on 3x3, 4x4 and 5x5 maps in equal shares, hole ratio 0.2, wait ratio 0.3 (Instances
// unset); SFTConfigFor gives other agent counts and sizes.
func SFTConfig() env.Config {
	return SFTConfigFor(2, 3, 5)
}

// SFTConfigFor is SFTConfig with agents agents on sizes minSize..maxSize in equal shares.
func SFTConfigFor(agents, minSize, maxSize int) env.Config {
	return sftConfig(agents, minSize, maxSize, DefaultSFTHoleRatio, DefaultSFTWaitRatio)
}

// DefaultSFTHoleRatio is the hole ratio of t2t sft's maps unless --holes says otherwise.
const DefaultSFTHoleRatio = 0.2

// DefaultSFTWaitRatio is the share of t2t sft's instances drawn to need a wait (an agent that
// must wait or detour for another) unless --wait-ratio says otherwise.
const DefaultSFTWaitRatio = 0.3

// sftConfig is SFTConfigFor at hole ratio holes and wait ratio waits, on the sizes whose map can
// hold it for agents agents (env.CheckFeasible), in equal shares; no size when none can.
func sftConfig(agents, minSize, maxSize int, holes, waits float64) env.Config {
	cfg := env.Config{Agents: agents}
	for s := minSize; s <= maxSize; s++ {
		sc := env.SizeConfig{Size: s, DataRatio: 1, HoleRatio: holes, WaitRatio: waits}
		if env.CheckFeasible(env.Config{Agents: agents, Sizes: []env.SizeConfig{sc}, Instances: 1}) == nil {
			cfg.Sizes = append(cfg.Sizes, sc)
		}
	}
	for i := range cfg.Sizes {
		cfg.Sizes[i].DataRatio = 1 / float64(len(cfg.Sizes))
	}
	return cfg
}

// SFTPolicyOptions returns o set up for supervised fine-tuning: AdamW at learning rate lr,
// micro-batches of 16, length buckets for short sequences (SFT targets are short: pad little)
// and generation batches of 16 for the evaluations.
func SFTPolicyOptions(o Options, lr float64) Options {
	g := learner.DefaultGRPOConfig()
	g.LR, g.MicroBatch = lr, 16
	g.LengthBuckets = []int{64, 80, 96, 128, 192, 224, 256, 512, 1024, 2048, 4096}
	o.GRPO, o.GenBatch = g, 16
	return o
}

// SFTOptions configure RunSFT.
type SFTOptions struct {
	// Steps is the number of optimizer steps; 0 only evaluates (and saves).
	Steps int
	// Batch is the number of training instances per step (≥ 1); step s draws them from
	// SFTConfig with seed Seed+s.
	Batch int
	// EvalInstances is the size of the evaluation set (≥ 1), evaluated greedily before and
	// after training.
	EvalInstances int
	// ReportEvery reports the mean loss every this many steps and after the last (≥ 1).
	ReportEvery int
	// EvalEvery also evaluates every this many steps (0: before and after only).
	EvalEvery int
	// SkipEvalBefore leaves out the evaluation before the first step: a run that continues a
	// checkpoint whose evaluation on the same set is known (scripts/llm-recipe/trainee.sh).
	SkipEvalBefore bool
	// MapProbe also plays each evaluation on the set's instances with their holes moved to other
	// cells and compares the plans (evaluate.ProbeMapUse: does the model read the map?); it
	// doubles an evaluation's generation.
	MapProbe bool
	// SaveEvery also saves the checkpoint every this many steps, so that a stopped run keeps
	// its progress (0: at the end only).
	SaveEvery int
	// Agents lists the agent counts to train and evaluate on (nil: 2 only); the k-th step on env
	// instances trains on Agents[(k-1) mod len(Agents)] agents (one agent count per batch:
	// similar lengths pad little; engineer steps are not counted, so that every count gets its
	// share whatever EngineerEvery is), and the evaluation set splits its instances evenly over
	// them.
	Agents []int
	// MinSize and MaxSize bound the map sizes, in equal shares (0: 3 and 5).
	MinSize, MaxSize int
	// HoleRatios are the maps' hole ratios (nil: DefaultSFTHoleRatio alone). The env steps take
	// them in turn, one per round of the agent counts, so every count meets every ratio; a size
	// whose map cannot hold a ratio for the step's agents (env.CheckFeasible: too few free cells
	// for distinct starts and goals) sits that ratio out. The evaluation set splits each agent
	// count's instances evenly over them. The paper's benchmark spans 0.1..0.5.
	HoleRatios []float64
	// WaitRatio is the share of the instances drawn to need a wait (env.SizeConfig.WaitRatio:
	// some agent must wait or detour for another), training and evaluation alike; nil:
	// DefaultSFTWaitRatio. The paper's benchmark has subsets at 0.25, 0.5 and 0.75.
	WaitRatio *float64
	// Target is the plan the answers teach (TargetOptimal when empty).
	Target TargetPlan
	// Seed seeds the training instances.
	Seed uint64
	// EvalSeed seeds the evaluation instances (0: Seed's), so that runs of different Seed can
	// be compared on the same instances.
	EvalSeed uint64
	// Engineer are engineer turns as supervised samples (EngineerSample: the environment
	// engineer's prompt and a teacher's proposal), mixed into the run: every EngineerEvery-th
	// step trains on Batch of them, taken in turn, instead of env instances. Nil: none.
	Engineer []engine.Sample
	// EngineerEvery spaces the engineer steps (1: every step; 0 with Engineer: 4).
	EngineerEvery int
	// Dir receives the checkpoint (Policy.Save) at the end and every SaveEvery steps.
	Dir string
	// Resumable saves SaveSFTCheckpoint instead: AdamW's state and the step beside the
	// weights, so that LoadSFTCheckpoint and StartStep continue the run exactly.
	Resumable bool
	// StartStep is the steps already taken (a resumed run, in [0, Steps]): training runs steps
	// StartStep+1..Steps, on the instances and engineer turns those steps get in one run.
	StartStep int
	// LR moves the learning rate over the run (the zero value: the policy's, constant). A
	// resumed run gives each step the rate it has in one run.
	LR LRSchedule
	// Progress receives the run's reports.
	Progress SFTProgress
}

// DefaultLRSegments is the number of constant pieces of a cosine LRSchedule.
const DefaultLRSegments = 20

// LRSchedule is how t2t sft's learning rate moves over a run's steps.
type LRSchedule struct {
	// Cosine: the rate falls from the policy's rate (Options.GRPO.LR, the peak) at the first
	// step to MinLR at the last, along a half cosine held constant within each of Segments
	// equal pieces of the run (the gomlx engine rebuilds its trainer at each change; AdamW's
	// state stays on both engines). false: the policy's rate throughout.
	Cosine bool
	// MinLR is the last piece's rate, in [0, peak] (0: a tenth of the peak).
	MinLR float64
	// Segments is the number of pieces (0: DefaultLRSegments; else ≥ 2), at most one per step.
	Segments int
}

// At returns the rate of step (1-based) of a steps-step run at peak rate peak.
func (s LRSchedule) At(step, steps int, peak float64) float64 {
	if !s.Cosine || steps < 2 {
		return peak
	}
	lo := s.MinLR
	if lo == 0 {
		lo = peak / 10
	}
	n := min(cmp.Or(s.Segments, DefaultLRSegments), steps)
	switch j := min(max(step-1, 0)*n/steps, n-1); j {
	case 0: // exactly: the first piece runs at the rate the policy has
		return peak
	case n - 1:
		return lo
	default:
		return lo + (peak-lo)*(1+math.Cos(math.Pi*float64(j)/float64(n-1)))/2
	}
}

// Validate checks s against the peak rate; errors are *fielderr.Error.
func (s LRSchedule) Validate(peak float64) error {
	switch {
	case !(s.MinLR >= 0 && s.MinLR <= peak):
		return &fielderr.Error{Kind: ErrOptions, Field: "LR.MinLR", Flag: "lr-min", Value: s.MinLR, Reason: fmt.Sprintf("must be in [0, the peak rate %g] (0: a tenth of it)", peak)}
	case s.Segments < 0 || s.Segments == 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "LR.Segments", Flag: "lr-segments", Value: s.Segments, Reason: "must be 0 (the default) or ≥ 2"}
	}
	return nil
}

// Validate checks the options; errors are *fielderr.Error.
func (o *SFTOptions) Validate() error {
	switch {
	case o.Steps < 0:
		return &fielderr.Error{Kind: ErrOptions, Field: "Steps", Value: o.Steps, Reason: "must be ≥ 0"}
	case o.Batch < 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "Batch", Value: o.Batch, Reason: "must be ≥ 1"}
	case o.EvalInstances < 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "EvalInstances", Value: o.EvalInstances, Reason: "must be ≥ 1"}
	case o.ReportEvery < 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "ReportEvery", Value: o.ReportEvery, Reason: "must be ≥ 1"}
	case o.EvalEvery < 0:
		return &fielderr.Error{Kind: ErrOptions, Field: "EvalEvery", Value: o.EvalEvery, Reason: "must be ≥ 0"}
	case o.SaveEvery < 0:
		return &fielderr.Error{Kind: ErrOptions, Field: "SaveEvery", Value: o.SaveEvery, Reason: "must be ≥ 0"}
	case o.StartStep < 0 || o.StartStep > o.Steps:
		return &fielderr.Error{Kind: ErrOptions, Field: "StartStep", Value: o.StartStep, Reason: fmt.Sprintf("must be in [0, Steps = %d]", o.Steps)}
	case o.Dir == "":
		return &fielderr.Error{Kind: ErrOptions, Field: "Dir", Value: o.Dir, Reason: "must name the checkpoint directory"}
	case o.EngineerEvery < 0:
		return &fielderr.Error{Kind: ErrOptions, Field: "EngineerEvery", Value: o.EngineerEvery, Reason: "must be ≥ 0"}
	}
	for _, a := range o.Agents {
		if a < 1 || a > env.MaxAgents {
			return &fielderr.Error{Kind: ErrOptions, Field: "Agents", Value: o.Agents, Reason: fmt.Sprintf("each must be in 1..%d", env.MaxAgents)}
		}
	}
	lo, hi := o.sizes()
	if lo < env.MinSize || hi > env.MaxSize || lo > hi {
		return &fielderr.Error{Kind: ErrOptions, Field: "MinSize..MaxSize", Value: fmt.Sprintf("%d..%d", lo, hi), Reason: fmt.Sprintf("must lie in %d..%d, min ≤ max", env.MinSize, env.MaxSize)}
	}
	for _, h := range o.HoleRatios {
		if !(h >= 0 && h < 1) {
			return &fielderr.Error{Kind: ErrOptions, Field: "HoleRatios", Flag: "holes", Value: o.HoleRatios, Reason: "each must be in [0, 1)"}
		}
		for _, k := range o.agents() {
			if k <= hi && len(o.config(k, 1, h).Sizes) == 0 {
				return &fielderr.Error{Kind: ErrOptions, Field: "HoleRatios", Flag: "holes", Value: o.HoleRatios,
					Reason: fmt.Sprintf("no map of sizes %d..%d holds %d agents at hole ratio %g: lower it or raise --sizes", max(lo, k), hi, k, h)}
			}
		}
	}
	if _, err := ParseTargetPlan(string(o.Target)); err != nil {
		return err
	}
	if w := o.waitRatio(); !(w >= 0 && w <= 1) {
		return &fielderr.Error{Kind: ErrOptions, Field: "WaitRatio", Flag: "wait-ratio", Value: w, Reason: "must be in [0, 1]"}
	} else if o.WaitRatio != nil && w > 0 && slices.Contains(o.agents(), 1) {
		return &fielderr.Error{Kind: ErrOptions, Field: "WaitRatio", Flag: "wait-ratio", Value: w, Reason: "a single agent never needs a wait: drop 1 from --agents or set 0"}
	}
	if k := slices.Max(o.agents()); k > hi {
		return &fielderr.Error{Kind: ErrOptions, Field: "MinSize..MaxSize", Value: fmt.Sprintf("%d..%d", lo, hi), Reason: fmt.Sprintf("%d agents need a %dx%d map or larger: raise the largest size to %d", k, k, k, k)}
	}
	return nil
}

// ParseShape sets Agents from agents, agent counts in 1..env.MaxAgents,
// comma-separated (t2t sft --agents), and MinSize..MaxSize from sizes,
// "MIN-MAX" or one size within env.MinSize..env.MaxSize (--sizes). Errors
// are *fielderr.Error about the flag.
func (o *SFTOptions) ParseShape(agents, sizes string) error {
	for part := range strings.SplitSeq(agents, ",") {
		a, err := strconv.Atoi(strings.TrimSpace(part))
		if err != nil || a < 1 || a > env.MaxAgents {
			return &fielderr.Error{Flag: "agents", Value: strconv.Quote(agents), Reason: fmt.Sprintf("want agent counts in 1..%d, comma-separated", env.MaxAgents)}
		}
		o.Agents = append(o.Agents, a)
	}
	lo, hi, ok := strings.Cut(sizes, "-")
	if !ok {
		hi = lo
	}
	var err1, err2 error
	o.MinSize, err1 = strconv.Atoi(strings.TrimSpace(lo))
	o.MaxSize, err2 = strconv.Atoi(strings.TrimSpace(hi))
	if err1 != nil || err2 != nil || o.MinSize < env.MinSize || o.MaxSize > env.MaxSize || o.MinSize > o.MaxSize {
		return &fielderr.Error{Flag: "sizes", Value: strconv.Quote(sizes), Reason: fmt.Sprintf("want MIN-MAX within %d..%d", env.MinSize, env.MaxSize)}
	}
	return nil
}

// ParseHoles sets HoleRatios from holes, ratios comma-separated (t2t sft --holes); Validate
// checks their range. An error is a *fielderr.Error about the flag.
func (o *SFTOptions) ParseHoles(holes string) error {
	o.HoleRatios = o.HoleRatios[:0]
	for part := range strings.SplitSeq(holes, ",") {
		h, err := strconv.ParseFloat(strings.TrimSpace(part), 64)
		if err != nil {
			return &fielderr.Error{Flag: "holes", Value: strconv.Quote(holes), Reason: "want hole ratios in [0, 1), comma-separated"}
		}
		o.HoleRatios = append(o.HoleRatios, h)
	}
	return nil
}

// ParseTarget sets Target from t (t2t sft --target). An error is a *fielderr.Error about the
// flag.
func (o *SFTOptions) ParseTarget(t string) (err error) {
	o.Target, err = ParseTargetPlan(t)
	return err
}

// ParseWaitRatio sets WaitRatio from w (t2t sft --wait-ratio); Validate checks its range. An
// error is a *fielderr.Error about the flag.
func (o *SFTOptions) ParseWaitRatio(w string) error {
	v, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
	if err != nil {
		return &fielderr.Error{Flag: "wait-ratio", Value: strconv.Quote(w), Reason: "want a ratio in [0, 1]"}
	}
	o.WaitRatio = &v
	return nil
}

// agents is Agents, or 2 alone when unset.
func (o *SFTOptions) agents() []int {
	if len(o.Agents) == 0 {
		return []int{2}
	}
	return o.Agents
}

// sizes is MinSize..MaxSize, 3..5 for either unset.
func (o *SFTOptions) sizes() (lo, hi int) {
	lo, hi = o.MinSize, o.MaxSize
	if lo == 0 {
		lo = 3
	}
	if hi == 0 {
		hi = 5
	}
	return lo, hi
}

// holeRatios is HoleRatios, or DefaultSFTHoleRatio alone when unset.
func (o *SFTOptions) holeRatios() []float64 {
	if len(o.HoleRatios) == 0 {
		return []float64{DefaultSFTHoleRatio}
	}
	return o.HoleRatios
}

// waitRatio is WaitRatio, or DefaultSFTWaitRatio when unset.
func (o *SFTOptions) waitRatio() float64 {
	if o.WaitRatio == nil {
		return DefaultSFTWaitRatio
	}
	return *o.WaitRatio
}

// config is the distribution of agents agents at hole ratio holes on the run's sizes that fit
// them: k agents need a k×k map, so a size range starting below k starts at k for them, and a
// size that cannot hold the ratio for them is left out (sftConfig).
func (o *SFTOptions) config(agents, instances int, holes float64) env.Config {
	lo, hi := o.sizes()
	cfg := sftConfig(agents, max(lo, agents), hi, holes, o.waitRatio())
	cfg.Instances = instances
	return cfg
}

// SFTProgress are RunSFT's reports, each called from RunSFT's goroutine in the order the
// events happen; each may be nil.
type SFTProgress struct {
	// EvalSet describes the evaluation set, first.
	EvalSet func(SFTEvalSet)
	// Evaluated sees each evaluation.
	Evaluated func(SFTEval)
	// Loss sees the mean loss every ReportEvery steps and after the last.
	Loss func(SFTLoss)
	// Saved sees each periodic save (not the final one: RunSFT returns after it).
	Saved func(step int)
}

// SFTEvalSet describes the evaluation set of a run.
type SFTEvalSet struct {
	// Instances is the set's size; Seed the seed it was drawn with.
	Instances int
	Seed      uint64
	// ID names the set: the first 6 bytes of the SHA-256 of its instance ids, in hex.
	ID string
	// Baseline is the share of instances on which rows-first Manhattan paths, blind to holes
	// and the other agent (env.ManhattanPlan), are valid; BaselineEval tallies those plans
	// (FailureSummary gives their failed checks, to set beside a model's).
	Baseline     float64
	BaselineEval *report.Eval
}

// SFTEval is one greedy evaluation of a run.
type SFTEval struct {
	// Step is the number of steps done: 0 before training.
	Step int
	// Final marks the evaluation after the last step.
	Final bool
	Eval  *report.Eval
	// MapUse is the map probe's verdict (SFTOptions.MapProbe), else nil.
	MapUse *evaluate.MapUse
}

// When names the evaluation: "before" (step 0), "after" (Final) or "step N".
func (e SFTEval) When() string {
	switch {
	case e.Step == 0:
		return "before"
	case e.Final:
		return "after"
	}
	return fmt.Sprintf("step %d", e.Step)
}

// SFTLoss is the mean loss of the steps since the previous report.
type SFTLoss struct {
	// Step is the last step; Steps the number of env steps averaged.
	Step, Steps int
	// Loss is the mean cross-entropy and Accuracy the mean teacher-forced token accuracy of
	// the env steps (0 without any).
	Loss, Accuracy float64
	// EngineerSteps, EngineerLoss and EngineerAccuracy are the same for the engineer steps
	// (SFTOptions.Engineer) among them.
	EngineerSteps                  int
	EngineerLoss, EngineerAccuracy float64
	// Elapsed is the time since the first step started.
	Elapsed time.Duration
	// LR is the last step's learning rate.
	LR float64
}

// RunSFT fine-tunes the policy on optimal answers (SFTStep on Batch instances per step) and
// evaluates it greedily on a fixed set before and after (and every EvalEvery steps), then
// saves the checkpoint to Dir. The context stops it between steps.
func (p *Policy) RunSFT(ctx context.Context, opt SFTOptions) error {
	if err := opt.Validate(); err != nil {
		return err
	}
	peak := p.LR()
	if err := opt.LR.Validate(peak); err != nil {
		return err
	}
	evalIns, err := sftEvalSet(&opt)
	if err != nil {
		return err
	}
	pr := opt.Progress
	evaluated := func(step int, final bool) error {
		eps, e, err := p.evaluate(evalIns)
		if err != nil {
			return err
		}
		ev := SFTEval{Step: step, Final: final, Eval: e}
		if opt.MapProbe {
			mu, err := evaluate.ProbeMapUse(p, evalIns, eps, evaluate.PlayOptions{})
			if err != nil {
				return err
			}
			ev.MapUse = &mu
		}
		if pr.Evaluated != nil {
			pr.Evaluated(ev)
		}
		return nil
	}
	if !opt.SkipEvalBefore || opt.Steps == 0 {
		if err := evaluated(0, false); err != nil {
			return err
		}
	}
	run := &sftRun{p: p, opt: &opt, agents: opt.agents(), every: cmp.Or(opt.EngineerEvery, 4), start: time.Now(), peak: peak, lr: peak}
	defer func() {
		if run.lr != peak {
			_ = p.SetLR(peak) // a later run starts from the same peak (a rate that passed before)
		}
	}()
	run.nextTurn = opt.StartStep / run.every * opt.Batch // the turns the engineer steps before StartStep took
	save := func(step int) error {
		if opt.Resumable {
			return p.SaveSFTCheckpoint(opt.Dir, step)
		}
		return p.Save(opt.Dir)
	}
	for step := opt.StartStep + 1; step <= opt.Steps; step++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := run.step(step); err != nil {
			return err
		}
		if step%opt.ReportEvery == 0 || step == opt.Steps {
			run.report(step)
		}
		if opt.EvalEvery > 0 && step%opt.EvalEvery == 0 && step < opt.Steps {
			if err := evaluated(step, false); err != nil {
				return err
			}
		}
		if opt.SaveEvery > 0 && step%opt.SaveEvery == 0 && step < opt.Steps {
			if err := save(step); err != nil {
				return err
			}
			if pr.Saved != nil {
				pr.Saved(step)
			}
		}
	}
	if opt.Steps > 0 { // with no steps the run is an evaluation (and a copy to Dir)
		if err := evaluated(opt.Steps, true); err != nil {
			return err
		}
	}
	return save(opt.Steps)
}

// sftRun is RunSFT's training loop: which step trains on what, and the
// running sums each report averages (index 0: policy steps, 1: engineer steps).
type sftRun struct {
	p        *Policy
	opt      *SFTOptions
	agents   []int
	every    int // an engineer step every this many steps (with engineer turns)
	nextTurn int
	peak, lr float64 // the schedule's peak rate and the policy's current one
	start    time.Time
	sums     [2]struct {
		n         int
		loss, acc float64
	}
}

// shapeAt is the agent count and hole ratio of step, a step on env instances: the agent counts
// in turn over those steps alone, and the hole ratios in turn over rounds of the agent counts.
// (Counted over all steps, an engineer step every len(Agents) steps would always take the same
// count's turn: with 2,3,4,5 and every 4, no 5-agent batch was trained.)
func (r *sftRun) shapeAt(step int) (agents int, holes float64) {
	k := step - 1 // the env steps before step
	if len(r.opt.Engineer) > 0 {
		k -= (step - 1) / r.every
	}
	ratios := r.opt.holeRatios()
	return r.agents[k%len(r.agents)], ratios[k/len(r.agents)%len(ratios)]
}

// step trains one step: a batch of engineer turns every r.every steps (when
// there are any), else SFTStep on freshly generated instances.
func (r *sftRun) step(step int) error {
	opt := r.opt
	if lr := opt.LR.At(step, opt.Steps, r.peak); lr != r.lr {
		if err := r.p.SetLR(lr); err != nil {
			return err
		}
		r.lr = lr
	}
	kind := 0
	var st learner.UpdateStats
	var err error
	if len(opt.Engineer) > 0 && step%r.every == 0 {
		kind = 1
		batch := make([]engine.Sample, opt.Batch)
		for i := range batch {
			batch[i] = opt.Engineer[r.nextTurn%len(opt.Engineer)]
			r.nextTurn++
		}
		st, err = r.p.BCStep(batch)
	} else {
		k, holes := r.shapeAt(step)
		ins, gerr := env.Generate(opt.config(k, opt.Batch, holes), opt.Seed+uint64(step), 0, opt.Batch)
		if gerr != nil {
			return gerr
		}
		st, err = r.p.SFTStep(ins, opt.Target)
	}
	if err != nil {
		return err
	}
	r.sums[kind].n++
	r.sums[kind].loss += st.Loss
	r.sums[kind].acc += st.Accuracy
	return nil
}

// report passes the means since the last report to Progress.Loss and
// starts new sums.
func (r *sftRun) report(step int) {
	l := SFTLoss{Step: step, Steps: r.sums[0].n, EngineerSteps: r.sums[1].n, Elapsed: time.Since(r.start), LR: r.lr}
	if n := float64(r.sums[0].n); n > 0 {
		l.Loss, l.Accuracy = r.sums[0].loss/n, r.sums[0].acc/n
	}
	if n := float64(r.sums[1].n); n > 0 {
		l.EngineerLoss, l.EngineerAccuracy = r.sums[1].loss/n, r.sums[1].acc/n
	}
	if r.opt.Progress.Loss != nil {
		r.opt.Progress.Loss(l)
	}
	r.sums = [2]struct {
		n         int
		loss, acc float64
	}{}
}

// sftEvalSet draws the evaluation set and reports it.
func sftEvalSet(opt *SFTOptions) ([]*env.Instance, error) {
	seed := opt.Seed
	if opt.EvalSeed != 0 {
		seed = opt.EvalSeed
	}
	agents := opt.agents()
	var ins []*env.Instance
	for i, a := range agents {
		n := opt.EvalInstances / len(agents)
		if i < opt.EvalInstances%len(agents) {
			n++
		}
		// Each ratio draws the agent count's whole share, spread over the sizes, and keeps every
		// len(ratios)-th instance from its own offset: the sizes stay covered whatever the
		// number of ratios, and one ratio alone draws the set it always has.
		ratios := opt.holeRatios()
		for j, h := range ratios {
			part, err := env.Generate(opt.config(a, n, h), seed^0xe7a1e7a1^uint64(j)<<32, 0, n)
			if err != nil {
				return nil, err
			}
			for i := j; i < len(part); i += len(ratios) {
				ins = append(ins, part[i])
			}
		}
	}
	h := sha256.New()
	for _, in := range ins {
		io.WriteString(h, in.ID)
	}
	if opt.Progress.EvalSet != nil {
		outs, err := evaluate.Play(evaluate.RowsFirst{}, ins, evaluate.PlayOptions{})
		if err != nil {
			return nil, err
		}
		base := report.Tally("rows-first Manhattan", "", outs)
		opt.Progress.EvalSet(SFTEvalSet{Instances: len(ins), Seed: seed, ID: hex.EncodeToString(h.Sum(nil)[:6]),
			Baseline: base.Total.ValidRate(), BaselineEval: base})
	}
	return ins, nil
}
