package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

const statusUsage = `t2t status --redis redis://host:port/db [--run ID] [--json]

Prints the live state of a run from Redis: its stage, phase, policy and
config version; the config history and the latest config change; per stage
the valid/optimal rates of the training episodes, the validation set and
the 3/4/5-agent benchmark suite, the learner's updates and the groups it
discarded (stale, late stage, duplicate); the run's flow (groups used,
kept late, discarded, time dispatch waited for the learner); and the
checkpoints. Without --run, the most recently updated run.`

// statusRates are valid and optimal shares over some episodes.
type statusRates struct {
	Episodes int64   `json:"episodes"`
	Valid    float64 `json:"valid"`
	Optimal  float64 `json:"optimal"`
}

func statusRatesOf(c store.Counts) statusRates {
	if c.Episodes == 0 {
		return statusRates{}
	}
	return statusRates{Episodes: c.Episodes, Valid: float64(c.Valid) / float64(c.Episodes), Optimal: float64(c.Optimal) / float64(c.Episodes)}
}

// statusStage is one stage of a run as Redis has it.
type statusStage struct {
	Stage         int                 `json:"stage"`
	ConfigVersion string              `json:"config_version"`
	Proposer      string              `json:"proposer,omitempty"`
	Rationale     string              `json:"rationale,omitempty"`
	Units         int64               `json:"units"` // training units applied
	Train         statusRates         `json:"train"`
	Val           statusRates         `json:"val"`
	Eval          map[int]statusRates `json:"eval_paper,omitempty"` // by agent count
	// Flow is the stage's learner flow (updates, groups used, kept late,
	// discarded by reason), once the stage is done.
	Flow *train.FlowStats `json:"flow,omitempty"`
}

// statusReport is what t2t status prints (--json prints it as is).
type statusReport struct {
	Redis string          `json:"redis"`
	Run   string          `json:"run"`
	Runs  []string        `json:"runs"`
	State *store.RunState `json:"state,omitempty"`
	// ConfigDiff is the latest config change (the last stage's config
	// against the one before), one change per line.
	ConfigDiff  string                   `json:"config_diff,omitempty"`
	DiffStages  [2]int                   `json:"diff_stages"`
	Stages      []statusStage            `json:"stages"`
	Checkpoints []store.CheckpointRecord `json:"checkpoints"`
	// Flow is the run's flow record (train.FlowRecord), when the run
	// wrote one.
	Flow *train.FlowRecord `json:"flow,omitempty"`
}

func runStatus(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t status", statusUsage, stderr)
	redisURL := fs.String("redis", "", "Redis URL of the run (redis://[:password@]host:port/db)")
	runID := fs.String("run", "", "run id (default: the most recently updated run)")
	asJSON := fs.Bool("json", false, "print the status as JSON")
	timeout := fs.Duration("timeout", 30*time.Second, "give up on Redis after this long")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *redisURL == "" {
		return badInput("--redis is required: the Redis URL the run's nodes use")
	}
	if *timeout <= 0 {
		return badInput("--timeout must be > 0")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: *redisURL, MaxRetryElapsed: *timeout})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	ps, err := train.OpenPolicyStore(ctx, *redisURL, "")
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer ps.Close()
	rep, err := collectStatus(ctx, st, ps, *runID)
	if err != nil {
		return err
	}
	rep.Redis = st.URL()
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return writeStatus(stdout, rep, time.Now())
}

// collectStatus reads run's status from st and its flow record from ps
// (nil: none) (the most recently updated run when run is empty).
func collectStatus(ctx context.Context, st *store.Store, ps *train.PolicyStore, run string) (*statusReport, error) {
	runs, err := st.Runs(ctx)
	if err != nil {
		return nil, err
	}
	rep := &statusReport{Run: run, Runs: runs}
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
			return nil, badInput("no run has a state in this Redis (name one with --run)")
		}
	}
	s, ok, err := st.RunState(ctx, rep.Run)
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return nil, badInput("--run %q: %v", rep.Run, err)
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
		return nil, badInput("--run %q: no such run in this Redis (runs with a state: %s)", rep.Run, strings.Join(runs, ", "))
	}
	parsed := make([]env.Config, len(cfgs))
	for i, c := range cfgs {
		if err := json.Unmarshal(c.JSON, &parsed[i]); err != nil {
			return nil, fmt.Errorf("config of stage %d: %w", c.Stage, err)
		}
		ss := statusStage{Stage: c.Stage, ConfigVersion: c.Version, Proposer: c.Proposer, Rationale: c.Rationale}
		if ss.Units, err = st.UnitsApplied(ctx, rep.Run, c.Stage, "train"); err != nil {
			return nil, err
		}
		for _, split := range []string{"train", "val", "eval:paper"} {
			agg, err := st.Aggregates(ctx, rep.Run, c.Stage, split)
			if err != nil {
				return nil, err
			}
			var all store.Counts
			per := map[int]store.Counts{}
			for k, v := range agg {
				all = all.Add(v)
				per[k.Agents] = per[k.Agents].Add(v)
			}
			switch split {
			case "train":
				ss.Train = statusRatesOf(all)
			case "val":
				ss.Val = statusRatesOf(all)
			default:
				if len(per) > 0 {
					ss.Eval = map[int]statusRates{}
					for a, v := range per {
						ss.Eval[a] = statusRatesOf(v)
					}
				}
			}
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
	if ps != nil {
		f, ok, err := ps.Flow(ctx, rep.Run)
		if err != nil {
			return nil, err
		}
		if ok {
			rep.setFlow(&f)
		}
	}
	return rep, nil
}

// setFlow attaches a flow record to the report and its stages.
func (rep *statusReport) setFlow(f *train.FlowRecord) {
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

func statusPct(r statusRates) string {
	if r.Episodes == 0 {
		return "    -        "
	}
	return fmt.Sprintf("%5.1f / %5.1f", 100*r.Valid, 100*r.Optimal)
}

func writeStatus(w io.Writer, rep *statusReport, now time.Time) error {
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
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", s.Stage, s.ConfigVersion, s.Proposer, s.Units, s.Train.Episodes,
			statusPct(s.Train), statusPct(s.Val), statusPct(s.Eval[3]), statusPct(s.Eval[4]), statusPct(s.Eval[5]),
			statusUpdates(s.Flow), statusDiscards(s.Flow))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if f := rep.Flow; f != nil {
		fmt.Fprintf(&b, "\nflow (max lag %s, staleness K %d, late groups kept up to %s): %s\n",
			statusLag(f.MaxLag), f.StalenessK, statusKeep(f), f.Total)
		if f.Total.Warn() {
			fmt.Fprintf(&b, "WARNING: %s\n", train.DiscardWarning(f.Total))
		}
	}
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

func statusUpdates(f *train.FlowStats) string {
	if f == nil {
		return "-"
	}
	return fmt.Sprint(f.Updates)
}

// statusDiscards is "3 (0.6%: stale 3)": the stage's discarded groups,
// their share and the reasons that occurred.
func statusDiscards(f *train.FlowStats) string {
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

func statusKeep(f *train.FlowRecord) string {
	switch {
	case f.KeepStale:
		return "any age"
	case f.KeepLateK <= f.StalenessK:
		return "none"
	}
	return fmt.Sprintf("%d versions", f.KeepLateK)
}
