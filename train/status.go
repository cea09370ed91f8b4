package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// StatusStage is one stage of a run as Redis has it: how it did
// (store.StageView), the config it ran and who proposed it, and, once the
// stage is done, its learner flow.
type StatusStage struct {
	Stage         int    `json:"stage"`
	ConfigVersion string `json:"config_version"`
	Proposer      string `json:"proposer,omitempty"`
	Rationale     string `json:"rationale,omitempty"`
	Units         int64  `json:"units"` // training units applied
	// Train, Val and Eval (by agent count) are as in store.StageView.
	Train store.Rates         `json:"train"`
	Val   store.Rates         `json:"val"`
	Eval  map[int]store.Rates `json:"eval_paper,omitempty"`
	// Flow is the stage's learner flow (updates, groups used, kept late,
	// discarded by reason), once the stage is done.
	Flow *FlowStats `json:"flow,omitempty"`
	// Running is true for the stage the run is training or evaluating
	// now: its rates are partial and are not a result.
	Running bool `json:"running,omitempty"`
	// Config is the stage's configuration (per size: data, hole and wait
	// ratio), for the page's heat map.
	Config env.Config `json:"config"`
	// Failures are the failed checks of the stage's training and
	// validation answers by split and agent count: the aggregates the
	// engineer's failure breakdown (F) reads.
	Failures []StatusFailures `json:"failures,omitempty"`
}

// StatusFailures counts one split's failures at one agent count: the
// answers, the invalid ones and the failed checks by category
// (store.CategoryNames; one answer may fail several).
type StatusFailures struct {
	Split      string           `json:"split"`
	Agents     int              `json:"agents"`
	Episodes   int64            `json:"episodes"`
	Invalid    int64            `json:"invalid"`
	Categories map[string]int64 `json:"categories,omitempty"`
}

// stageFailures reads the failures of stage's training and validation
// answers, ordered by split then agent count.
func stageFailures(ctx context.Context, st *store.Store, run string, stage int) ([]StatusFailures, error) {
	var out []StatusFailures
	for _, split := range []string{store.SplitTrain, store.SplitVal} {
		agg, err := st.Aggregates(ctx, run, stage, split)
		if err != nil {
			return nil, err
		}
		sum := store.SumSplit(agg)
		agents := slices.Sorted(maps.Keys(sum.ByAgents))
		for _, a := range agents {
			c := sum.ByAgents[a]
			out = append(out, StatusFailures{Split: split, Agents: a, Episodes: c.Episodes, Invalid: c.Episodes - c.Valid, Categories: c.Categories})
		}
	}
	return out, nil
}

// stageRunning reports whether s is training or evaluating stage now.
func stageRunning(s *store.RunState, stage int) bool {
	if s == nil || s.Stage != stage {
		return false
	}
	switch s.Phase {
	case PhaseStarting, PhaseTraining, PhaseEvaluating:
		return true
	}
	return false
}

// Status is the live state of a run from Redis, as `t2t status` and the
// live page show it (JSON as is).
type Status struct {
	Redis string          `json:"redis"`
	Run   string          `json:"run"`
	Runs  []string        `json:"runs"`
	State *store.RunState `json:"state,omitempty"`
	// ConfigDiff is the latest config change (the last stage's config
	// against the one before), one change per line.
	ConfigDiff  string                   `json:"config_diff,omitempty"`
	DiffStages  [2]int                   `json:"diff_stages"`
	Stages      []StatusStage            `json:"stages"`
	Checkpoints []store.CheckpointRecord `json:"checkpoints"`
	// Flow is the run's flow record, when the run wrote one.
	Flow *FlowRecord `json:"flow,omitempty"`
	// Sampling is an LLM policy's sampling through its generation
	// scheduler (--gen-slots), as the process running the policy sees it;
	// nil where none reports it (`t2t status` reads Redis only).
	Sampling *SamplingStatus `json:"sampling,omitempty"`
	// Device is an LLM policy's device memory as the process running the
	// policy last read it (DeviceMeter); nil where none reports it.
	Device *DeviceStatus `json:"device,omitempty"`
	// Nodes are the run's processes as the process serving the live page
	// knows them, else as the run last recorded them in Redis
	// (NodesRecord, at NodesUnixMs); nil where neither is known.
	Nodes       []StatusNode `json:"nodes"`
	NodesUnixMs int64        `json:"nodes_recorded_unix_ms,omitempty"`
}

// StatusNode is one process of a run: every role of a one-process run,
// or a member of the cluster.
type StatusNode struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Roles    []string `json:"roles"`
	Address  string   `json:"address"`
	Capacity int      `json:"capacity"`
	// PID and PolicyLag (of the last unit its rollouts finished) are known
	// for the serving process only.
	PID       int   `json:"pid,omitempty"`
	PolicyLag int64 `json:"policy_lag,omitempty"`
	// Load is the run's coordinator's account of the node's units; nil
	// where unknown (the node ran no rollout for this run, or the serving
	// process is not the coordinator).
	Load *StatusLoad `json:"load,omitempty"`
}

// SamplingStatus is an LLM policy's generation scheduler: cumulative
// counters (engine.SchedulerStats) and the rates they give.
type SamplingStatus struct {
	// RowsPerDecodeStep is StepRows/Steps: how many sequences a decode
	// step advanced on average (the batching the scheduler achieved).
	RowsPerDecodeStep float64 `json:"rows_per_decode_step"`
	// TokensPerSecond is the tokens sampled per second over
	// TokensPerSecondOver, the span between two of the server's readings.
	TokensPerSecond     float64       `json:"tokens_per_s"`
	TokensPerSecondOver time.Duration `json:"tokens_per_s_over_ns"`
	Tokens              int64         `json:"tokens"`
	Steps               int64         `json:"steps"`
	Requests            int64         `json:"requests"`
	// MeanQueueWait is the mean wait of a row between its request and
	// its prefill.
	MeanQueueWait time.Duration `json:"mean_queue_wait_ns"`
	Slots         int           `json:"slots"`
	SlotsInUse    int           `json:"slots_in_use"`
	Queued        int           `json:"queued"`
}

// CollectStatus reads run's status from st and its flow record from ps
// (nil: none) (the most recently updated run when run is empty).
func CollectStatus(ctx context.Context, st *store.Store, ps *PolicyStore, run string) (*Status, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	rep := &Status{Run: run, Runs: runs}
	if run == "" {
		var latest int64 = -1
		for _, id := range runs {
			s, ok, err := st.RunState(ctx, id)
			if err != nil {
				return nil, err
			}
			if ok && s.UpdatedUnixMs > latest {
				latest, rep.Run = s.UpdatedUnixMs, id
			}
		}
		if rep.Run == "" {
			return nil, &fielderr.Error{Kind: ErrOptions, Flag: "run", Value: `""`, Reason: "no run has a state in this Redis (name one with --run)"}
		}
	}
	s, ok, err := st.RunState(ctx, rep.Run)
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return nil, &fielderr.Error{Kind: ErrOptions, Flag: "run", Value: fmt.Sprintf("%q", rep.Run), Reason: err.Error()}
		}
		return nil, err
	}
	if ok {
		rep.State = &s
	}
	cfgs, err := st.Configs(ctx, rep.Run)
	if err != nil {
		return nil, err
	}
	if !ok && len(cfgs) == 0 {
		return nil, &fielderr.Error{Kind: ErrOptions, Flag: "run", Value: fmt.Sprintf("%q", rep.Run), Reason: "no such run in this Redis (runs with a state: " + strings.Join(runs, ", ") + ")"}
	}
	parsed := make([]env.Config, len(cfgs))
	for i, c := range cfgs {
		if err := json.Unmarshal(c.JSON, &parsed[i]); err != nil {
			return nil, fmt.Errorf("config of stage %d: %w", c.Stage, err)
		}
		view, err := st.StageView(ctx, rep.Run, c.Stage)
		if err != nil {
			return nil, err
		}
		ss := StatusStage{Stage: c.Stage, ConfigVersion: c.Version, Proposer: c.Proposer, Rationale: c.Rationale,
			Units: view.Units, Train: view.Train, Val: view.Val, Eval: view.Eval,
			Running: stageRunning(rep.State, c.Stage), Config: parsed[i]}
		if ss.Failures, err = stageFailures(ctx, st, rep.Run, c.Stage); err != nil {
			return nil, err
		}
		rep.Stages = append(rep.Stages, ss)
	}
	if n := len(cfgs); n >= 2 {
		rep.ConfigDiff = parsed[n-1].Diff(parsed[n-2])
		rep.DiffStages = [2]int{cfgs[n-2].Stage, cfgs[n-1].Stage}
	}
	if rep.Checkpoints, err = st.Checkpoints(ctx, rep.Run); err != nil {
		return nil, err
	}
	nodes, ok, err := ReadNodes(ctx, st, rep.Run)
	if err != nil {
		return nil, err
	}
	if ok {
		rep.Nodes, rep.NodesUnixMs = nodes.Nodes, nodes.UpdatedUnixMs
	}
	if ps != nil {
		f, ok, err := ps.Flow(ctx, rep.Run)
		if err != nil {
			return nil, err
		}
		if ok {
			rep.SetFlow(&f)
		}
	}
	return rep, nil
}

// SetFlow attaches a flow record to the report and its stages.
func (rep *Status) SetFlow(f *FlowRecord) {
	rep.Flow = f
	for i := range rep.Stages {
		rep.Stages[i].Flow = nil
		for _, sf := range f.Stages {
			if sf.Stage == rep.Stages[i].Stage {
				fs := sf.FlowStats
				rep.Stages[i].Flow = &fs
			}
		}
	}
}

func statusPct(r store.Rates) string {
	if r.Episodes == 0 {
		return "    -        "
	}
	return fmt.Sprintf("%5.1f / %5.1f", 100*r.Valid, 100*r.Optimal)
}

// WriteStatusJSON writes rep as indented JSON, as `t2t status --json`
// prints it.
func WriteStatusJSON(w io.Writer, rep *Status) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// WriteStatus prints rep for a reader as `t2t status` does; now dates the
// state's age.
func WriteStatus(w io.Writer, rep *Status, now time.Time) error {
	var b strings.Builder
	fmt.Fprintf(&b, "run %s (Redis %s", rep.Run, rep.Redis)
	if others := slices.DeleteFunc(slices.Clone(rep.Runs), func(s string) bool { return s == rep.Run }); len(others) > 0 {
		fmt.Fprintf(&b, "; other runs: %s", strings.Join(others, ", "))
	}
	b.WriteString(")\n")
	if s := rep.State; s != nil {
		at := time.UnixMilli(s.UpdatedUnixMs)
		fmt.Fprintf(&b, "state: stage %d %s, policy version %d, config %s, updated %s (%s ago)\n",
			s.Stage, s.Phase, s.PolicyVersion, s.ConfigVersion, at.UTC().Format(time.RFC3339), now.Sub(at).Round(time.Second))
	} else {
		b.WriteString("state: none recorded (the run did not write one)\n")
	}
	for _, s := range rep.Stages {
		if s.Running {
			fmt.Fprintf(&b, "running: stage %d (%s): %d training units applied, %d training and %d validation episodes so far\n",
				s.Stage, rep.State.Phase, s.Units, s.Train.Episodes, s.Val.Episodes)
		}
	}
	if rep.ConfigDiff != "" || len(rep.Stages) >= 2 {
		last := rep.Stages[len(rep.Stages)-1]
		fmt.Fprintf(&b, "latest config change, stage %d → %d (%s):", rep.DiffStages[0], rep.DiffStages[1], last.Proposer)
		if rep.ConfigDiff == "" {
			b.WriteString(" none\n")
		} else {
			b.WriteString("\n")
			for _, l := range strings.Split(rep.ConfigDiff, "\n") {
				fmt.Fprintf(&b, "  %s\n", l)
			}
		}
		if last.Rationale != "" {
			r := strings.Join(strings.Fields(last.Rationale), " ")
			if len(r) > 300 {
				r = strings.ToValidUTF8(r[:300], "") + "…"
			}
			fmt.Fprintf(&b, "  rationale: %s\n", r)
		}
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\tconfig\tproposer\tunits\ttrain episodes\ttrain v/o %\tval v/o %\t3 agents v/o %\t4 agents v/o %\t5 agents v/o %\tupdates\tdiscarded groups\t")
	for _, s := range rep.Stages {
		stage := fmt.Sprint(s.Stage)
		if s.Running {
			stage += " (running)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", stage, s.ConfigVersion, s.Proposer, s.Units, s.Train.Episodes,
			statusPct(s.Train), statusPct(s.Val), statusPct(s.Eval[3]), statusPct(s.Eval[4]), statusPct(s.Eval[5]),
			statusUpdates(s.Flow), statusDiscards(s.Flow))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	writeConfigs(&b, rep.Stages)
	writeFailures(&b, rep.Stages)
	if sm := rep.Sampling; sm != nil {
		fmt.Fprintf(&b, "\nsampling: %s\n", sm)
	}
	if d := rep.Device; d != nil {
		fmt.Fprintf(&b, "\ndevice memory: %s\n", d)
	}
	if f := rep.Flow; f != nil {
		fmt.Fprintf(&b, "\nflow (max lag %s, staleness K %d, late groups kept up to %s): %s\n",
			statusLag(f.MaxLag), f.StalenessK, statusKeep(f), f.Total)
		if f.Total.Warn() {
			fmt.Fprintf(&b, "WARNING: %s\n", DiscardWarning(f.Total))
		}
	}
	writeNodes(&b, rep.Nodes, rep.NodesUnixMs, now)
	if len(rep.Checkpoints) == 0 {
		b.WriteString("\ncheckpoints: none\n")
	} else {
		b.WriteString("\ncheckpoints:\n")
		for _, c := range rep.Checkpoints {
			fmt.Fprintf(&b, "  version %d  after stage %d  config %s  sha256 %.16s…  %s\n", c.Version, c.Step, c.ConfigVersion, c.SHA256, c.Path)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func statusUpdates(f *FlowStats) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprint(f.Updates)
}

// statusDiscards is "3 (0.6%: stale 3)": the stage's discarded groups,
// their share and the reasons that occurred.
func statusDiscards(f *FlowStats) string {
	if f == nil {
		return "-"
	}
	if f.Discarded() == 0 {
		return "0"
	}
	var why []string
	for _, r := range []struct {
		name string
		n    uint64
	}{{"stale", f.DiscardedStale}, {"late stage", f.DiscardedLateStage}, {"duplicate", f.DiscardedDuplicate}} {
		if r.n > 0 {
			why = append(why, fmt.Sprintf("%s %d", r.name, r.n))
		}
	}
	return fmt.Sprintf("%d (%.1f%%: %s)", f.Discarded(), 100*f.DiscardShare(), strings.Join(why, ", "))
}

func statusLag(v int64) string {
	if v < 0 {
		return "off"
	}
	return fmt.Sprint(v)
}

func statusKeep(f *FlowRecord) string {
	switch {
	case f.KeepStale:
		return "any age"
	case f.KeepLateK <= f.StalenessK:
		return "none"
	}
	return fmt.Sprintf("%d versions", f.KeepLateK)
}

// writeFailures prints each stage's failed checks per split and agent
// count: the invalid answers and, per category, the count and its share
// of the answers.
func writeFailures(b *strings.Builder, stages []StatusStage) {
	b.WriteString("\nfailures (failed checks per category; one invalid answer may fail several):\n")
	n := 0
	for _, s := range stages {
		for _, f := range s.Failures {
			if f.Episodes == 0 {
				continue
			}
			n++
			fmt.Fprintf(b, "  stage %d %s %d agents: %d of %d invalid", s.Stage, f.Split, f.Agents, f.Invalid, f.Episodes)
			for _, c := range store.CategoryNames() {
				if k := f.Categories[c]; k > 0 {
					fmt.Fprintf(b, ", %s %d (%.1f%%)", c, k, 100*float64(k)/float64(f.Episodes))
				}
			}
			b.WriteString("\n")
		}
	}
	if n == 0 {
		b.WriteString("  none recorded yet\n")
	}
}

// String is "2.3 rows per decode step, 41.0 tokens/s (over 5s), …".
func (s *SamplingStatus) String() string {
	rate := "tokens/s: not measured yet"
	if s.TokensPerSecondOver > 0 {
		rate = fmt.Sprintf("%.1f tokens/s (over %s)", s.TokensPerSecond, s.TokensPerSecondOver.Round(100*time.Millisecond))
	}
	return fmt.Sprintf("%.2f rows per decode step, %s; %d tokens in %d decode steps for %d requests, mean queue wait %s; slots %d of %d in use, %d requests queued",
		s.RowsPerDecodeStep, rate, s.Tokens, s.Steps, s.Requests, s.MeanQueueWait.Round(time.Millisecond), s.SlotsInUse, s.Slots, s.Queued)
}

// writeConfigs prints the configuration over stages: per map size, each
// stage's data, hole and wait ratio ("*": changed from the stage before),
// and the agents row where the agent count is a range or changed.
func writeConfigs(b *strings.Builder, stages []StatusStage) {
	if len(stages) == 0 {
		return
	}
	b.WriteString("\nconfig over stages (data / hole / wait ratio; *: changed from the stage before):\n")
	sizes := map[int]bool{}
	for _, s := range stages {
		for _, z := range s.Config.Sizes {
			sizes[z.Size] = true
		}
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "  size\t")
	for _, s := range stages {
		fmt.Fprintf(tw, "stage %d\t", s.Stage)
	}
	fmt.Fprintln(tw)
	for _, size := range slices.Sorted(maps.Keys(sizes)) {
		fmt.Fprintf(tw, "%d\t", size)
		var prev *env.SizeConfig
		for _, s := range stages {
			i := slices.IndexFunc(s.Config.Sizes, func(z env.SizeConfig) bool { return z.Size == size })
			if i < 0 {
				fmt.Fprint(tw, "-\t")
				prev = nil
				continue
			}
			z := s.Config.Sizes[i]
			mark := " "
			if prev != nil && (prev.DataRatio != z.DataRatio || prev.HoleRatio != z.HoleRatio || prev.WaitRatio != z.WaitRatio) {
				mark = "*"
			}
			fmt.Fprintf(tw, "%.3f / %.2f / %.2f%s\t", z.DataRatio, z.HoleRatio, z.WaitRatio, mark)
			prev = &z
		}
		fmt.Fprintln(tw)
	}
	writeAgentsRow(tw, stages)
	tw.Flush()
}

// writeAgentsRow adds the agents row to the config table ("2..5" for a
// range, "*": changed), when some stage has an agent range or the count
// changed over the stages; a run on one count keeps the table of sizes.
func writeAgentsRow(tw *tabwriter.Writer, stages []StatusStage) {
	texts := make([]string, len(stages))
	show := false
	for i, s := range stages {
		texts[i] = s.Config.AgentsText()
		show = show || s.Config.HasAgentRange() || texts[i] != texts[0]
	}
	if !show {
		return
	}
	fmt.Fprint(tw, "agents\t")
	for i, text := range texts {
		mark := " "
		if i > 0 && text != texts[i-1] {
			mark = "*"
		}
		fmt.Fprintf(tw, "%s%s\t", text, mark)
	}
	fmt.Fprintln(tw)
}
