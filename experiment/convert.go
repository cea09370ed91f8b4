package experiment

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/report"
	"github.com/t2t-lab/t2t/train"
)

// trainRun trains one run in a fresh embedded store and reads its configs
// and audit back.
func trainRun(ctx context.Context, opt train.Options, pol train.Policy, label string, logger *slog.Logger) (report.Run, error) {
	st, err := store.Open(ctx, store.Options{Logger: logger})
	if err != nil {
		return report.Run{}, fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	t0 := time.Now()
	res, err := train.Run(ctx, opt, pol, st)
	if err != nil {
		return report.Run{}, err
	}
	r, err := reportRun(ctx, st, res, label, opt.Seed)
	r.Seconds = time.Since(t0).Seconds()
	return r, err
}

// reportRun turns a training result and the store's config history and
// audit log into a report.Run of the arm label.
func reportRun(ctx context.Context, st *store.Store, res *train.Result, label string, seed uint64) (report.Run, error) {
	cfgs, err := st.Configs(ctx, res.RunID)
	if err != nil {
		return report.Run{}, err
	}
	audit, err := st.Audit(ctx, res.RunID)
	if err != nil {
		return report.Run{}, err
	}
	recs := map[int]store.ConfigRecord{}
	for _, c := range cfgs {
		recs[c.Stage] = c
	}
	r := report.Run{Strategy: label, Seed: seed, RunID: res.RunID, Initial: reportPoint(&res.Initial)}
	for i := range res.Stages {
		s := &res.Stages[i]
		p := reportPoint(s)
		if rec, ok := recs[s.Stage]; ok {
			var c env.Config
			if err := json.Unmarshal(rec.JSON, &c); err != nil {
				return report.Run{}, fmt.Errorf("config of stage %d: %w", s.Stage, err)
			}
			if rec.Version != s.ConfigVersion {
				return report.Run{}, fmt.Errorf("stage %d trained on config %s, the store records %s", s.Stage, s.ConfigVersion, rec.Version)
			}
			p.Config, p.Proposer, p.Rationale = &c, rec.Proposer, rec.Rationale
		}
		for _, a := range audit {
			if a.Stage == s.Stage {
				p.Audit = append(p.Audit, report.Attempt{Attempt: a.Attempt, Accepted: a.Accepted, Reason: a.Reason, PromptHash: a.PromptHash})
			}
		}
		r.Stages = append(r.Stages, p)
	}
	return r, nil
}

// reportPoint turns a stage report into a report point; the initial
// evaluation (Stage -1) has no training rates, config version or updates.
func reportPoint(s *train.StageReport) report.Point {
	p := report.Point{
		Stage: s.Stage, Train: report.Rate(s.Train), Val: report.Rate(s.Val), Eval: map[int]report.Rate{},
		ConfigVersion: s.ConfigVersion, Updates: s.Updates, Seconds: s.Duration.Seconds(),
	}
	if s.Stage < 0 {
		p.Train, p.ConfigVersion, p.Updates = report.Rate{}, "", 0
	}
	for k, r := range s.Eval {
		p.Eval[k] = report.Rate(r)
	}
	return p
}

// prefixWriter prefixes every line written through it; it is safe for
// concurrent use.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool // inside a line
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		if !p.mid {
			if _, err := io.WriteString(p.w, p.prefix); err != nil {
				return 0, err
			}
			p.mid = true
		}
		i := strings.IndexByte(string(b), '\n')
		if i < 0 {
			if _, err := p.w.Write(b); err != nil {
				return 0, err
			}
			break
		}
		if _, err := p.w.Write(b[:i+1]); err != nil {
			return 0, err
		}
		p.mid = false
		b = b[i+1:]
	}
	return n, nil
}
