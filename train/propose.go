package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/cluster/telemetry"
	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
)

// CloseStage implements actors.StageCloser: the engineer actor closes a
// finished stage (evaluation, checkpoint, report; closeStage) before it
// asks for the next stage's config.
func (r *run) CloseStage(ctx context.Context, _ string, stage int) error {
	_, err := r.closeStage(ctx, stage)
	return err
}

// Propose implements actors.Proposer: ask the strategy for stage's config
// (the stage before it is closed) and note its rationale in that stage's
// report.
func (r *run) Propose(ctx context.Context, runID string, stage int) (string, []byte, error) {
	defer r.traces.end(stage - 1)
	cfg, b, rationale, err := r.propose(ctx, stage, false)
	if err != nil {
		return "", nil, err
	}
	r.mu.Lock()
	if n := len(r.res.Stages); n > 0 && r.res.Stages[n-1].Stage == stage-1 {
		r.res.Stages[n-1].Rationale = rationale
	}
	r.mu.Unlock()
	return cfg.Hash(), b, nil
}

// propose asks the strategy for stage's config (the stage before it is
// done and recorded), records the attempts and the config in Redis and
// prints the change. A resumed run re-proposes a config whose record the
// interrupted run did not write (resumed): attempts the interrupted run
// recorded differently are then kept, with a warning.
func (r *run) propose(ctx context.Context, stage int, resumed bool) (env.Config, []byte, string, error) {
	runID := r.opt.RunID
	h, err := History(ctx, r.st, runID, r.opt.Stages)
	if err != nil {
		return env.Config{}, nil, "", err
	}
	h.Budget.EpochsPerStage = r.opt.Epochs // the T module's bookkeeping
	for i := range h.Stages {
		h.Stages[i].Epochs = r.opt.Epochs
	}
	t0 := time.Now()
	_, span := r.traces.start(r.traces.ctx(stage-1), telemetry.SpanEngineerPropose, attribute.Int(telemetry.AttrStage, stage))
	prop, err := r.opt.Strategy.Propose(ctx, h)
	span.End()
	r.opt.Metrics.ObserveEngineerPropose(time.Since(t0), span.SpanContext())
	if err != nil {
		return env.Config{}, nil, "", err
	}
	for i, a := range prop.Attempts {
		ar := store.AuditRecord{Stage: stage, Attempt: i, PromptHash: a.PromptHash, RawAnswer: a.Raw, Parsed: a.Parsed, Projected: a.Projected, Accepted: a.Accepted, Reason: a.Reason, Engineer: a.Engineer}
		if err := r.st.AppendAudit(ctx, runID, ar); err != nil {
			if !resumed || !errors.Is(err, store.ErrConflict) {
				return env.Config{}, nil, "", err
			}
			r.opt.Logger.Warn("train: resumed proposal differs from the recorded attempt; the record is kept", "stage", stage, "attempt", i)
		}
	}
	cfg := prop.Config
	pinned := r.opt.Deterministic && cfg.Instances >= 1 && cfg.Instances != r.opt.Config.Instances
	if cfg.Instances < 1 || pinned {
		cfg.Instances = r.opt.Config.Instances
	}
	b, err := json.Marshal(cfg)
	if err != nil {
		return env.Config{}, nil, "", err
	}
	if err := r.st.PutConfig(ctx, runID, store.ConfigRecord{Stage: stage, Version: cfg.Hash(), JSON: b, Proposer: r.opt.Strategy.Name(), Rationale: prop.Rationale}); err != nil {
		return env.Config{}, nil, "", err
	}
	r.mu.Lock()
	prev := r.configs[stage-1]
	r.configs[stage] = cfg
	r.mu.Unlock()
	if pinned {
		fmt.Fprintf(r.opt.Out, "  engineer (%s) proposed %d instances for stage %d; a deterministic run keeps %d\n", r.opt.Strategy.Name(), prop.Config.Instances, stage, cfg.Instances)
	}
	if lines := compactDiff(prev, cfg); len(lines) > 0 {
		fmt.Fprintf(r.opt.Out, "  engineer (%s) → stage %d config %s:\n", r.opt.Strategy.Name(), stage, cfg.Hash())
		for _, line := range lines {
			fmt.Fprintf(r.opt.Out, "    %s\n", line)
		}
	} else if prop.Fallback {
		fmt.Fprintln(r.opt.Out, fallbackLine(r.opt.Strategy.Name(), stage, cfg.Hash(), prop))
	} else {
		fmt.Fprintf(r.opt.Out, "  engineer (%s) → stage %d keeps config %s\n", r.opt.Strategy.Name(), stage, cfg.Hash())
	}
	return cfg, b, prop.Rationale, nil
}

// fallbackLine is the terminal's one line for a stage whose engineer fell
// back to the previous config: how many attempts were rejected and the
// last rejection's reason (the rationale when no attempt gave one).
func fallbackLine(strategy string, stage int, hash string, prop engineer.Proposal) string {
	rejected, last := 0, prop.Rationale
	for _, a := range prop.Attempts {
		if !a.Accepted {
			rejected++
			if a.Reason != "" {
				last = a.Reason
			}
		}
	}
	return fmt.Sprintf("  engineer (%s) → stage %d keeps config %s: fell back after %d rejected attempt(s); last: %s",
		strategy, stage, hash, rejected, strings.Join(strings.Fields(last), " "))
}

// compactDiff lists config changes one line per size ("size 5: data
// 0.12→0.20  hole 0.20→0.10"), plus agents and instances; Config.Diff has
// the one-change-per-line form.
func compactDiff(old, cfg env.Config) []string {
	var out []string
	prev := map[int]env.SizeConfig{}
	for _, sc := range old.Sizes {
		prev[sc.Size] = sc
	}
	for _, sc := range cfg.Sizes {
		p, ok := prev[sc.Size]
		if !ok {
			out = append(out, fmt.Sprintf("size %d added: data %.2f  hole %.2f  wait %.2f", sc.Size, sc.DataRatio, sc.HoleRatio, sc.WaitRatio))
			continue
		}
		delete(prev, sc.Size)
		var parts []string
		for _, f := range []struct {
			name string
			a, b float64
		}{{"data", p.DataRatio, sc.DataRatio}, {"hole", p.HoleRatio, sc.HoleRatio}, {"wait", p.WaitRatio, sc.WaitRatio}} {
			if math.Abs(f.a-f.b) >= 0.005 {
				parts = append(parts, fmt.Sprintf("%s %.2f→%.2f", f.name, f.a, f.b))
			}
		}
		if len(parts) > 0 {
			out = append(out, fmt.Sprintf("size %2d: %s", sc.Size, strings.Join(parts, "  ")))
		}
	}
	for size := range prev {
		out = append(out, fmt.Sprintf("size %d removed", size))
	}
	if a, b := old.AgentsText(), cfg.AgentsText(); a != b {
		out = append(out, fmt.Sprintf("agents %s→%s", a, b))
	}
	if old.Instances != cfg.Instances {
		out = append(out, fmt.Sprintf("instances %d→%d", old.Instances, cfg.Instances))
	}
	return out
}
