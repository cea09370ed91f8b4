package actors

import (
	"context"
	"fmt"
	"log/slog"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"
)

// Proposer designs the config of the next stage (the environment engineer's
// strategy: fixed, rules, LLM ...). stage is the stage being designed (the
// one after the stage that just finished). It is called from the engineer
// actor only, one call at a time.
type Proposer interface {
	Propose(ctx context.Context, runID string, stage int) (version string, configJSON []byte, err error)
}

// StageCloser is a Proposer that also closes each finished stage (evaluates the policy, saves a
// checkpoint, writes the stage's report) before the next one is designed: after a StageDone the
// engineer actor calls CloseStage for that stage, then Propose for the next. The run's last
// stage, which has no next, is closed by whoever runs the system once Run returns.
type StageCloser interface {
	CloseStage(ctx context.Context, runID string, stage int) error
}

// EngineerStats are the engineer's counters.
type EngineerStats struct {
	Proposed uint64 // configs sent to the coordinator
	Failed   uint64 // Proposer errors (reported as ProposalFailed)
}

type engineerMetrics struct{ proposed, failed atomic.Uint64 }

// engineer is the engineer logic: which StageDone needs a proposal, and what
// to send for a Proposer result.
type engineer struct {
	last    int // last stage proposed; -1 before any
	metrics *engineerMetrics
}

func newEngineer(m *engineerMetrics) *engineer { return &engineer{last: -1, metrics: m} }

// stageDone returns the stage to propose, if any: none after the last stage
// and none twice.
func (e *engineer) stageDone(d *StageDone) (int, bool) {
	next := d.Stage + 1
	if d.Last || next <= e.last {
		return 0, false
	}
	e.last = next
	return next, true
}

// proposed turns a Proposer result into the message for the coordinator.
func (e *engineer) proposed(runID string, stage int, version string, js []byte, err error) any {
	if err == nil && version == "" {
		err = fmt.Errorf("empty config version")
	}
	if err != nil {
		e.metrics.failed.Add(1)
		return &ProposalFailed{RunID: runID, Stage: stage, Error: err.Error()}
	}
	e.metrics.proposed.Add(1)
	return &ConfigUpdate{Version: version, Stage: stage, JSON: js}
}

type engineerActor struct {
	logic       *engineer
	proposer    Proposer
	coordinator *actor.PID
	logger      *slog.Logger
	ctx         context.Context
	cancel      context.CancelFunc
}

func (a *engineerActor) Receive(c actor.Context) {
	switch m := c.Message().(type) {
	case *actor.Started:
		a.ctx, a.cancel = context.WithCancel(context.Background())
	case *actor.Stopping:
		a.cancel()
	case *StageDone:
		stage, ok := a.logic.stageDone(m)
		if !ok {
			return
		}
		v, js, err := a.closeAndPropose(m.RunID, stage)
		if err != nil {
			a.logger.Error("engineer: proposal failed", "run", m.RunID, "stage", stage, "error", err)
		}
		c.Send(a.coordinator, a.logic.proposed(m.RunID, stage, v, js, err))
	case *Shutdown:
		c.Stop(c.Self())
	}
}

// closeAndPropose closes the stage before stage (a StageCloser), then proposes stage's config.
func (a *engineerActor) closeAndPropose(runID string, stage int) (v string, js []byte, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("proposer panicked: %v", p)
		}
	}()
	if c, ok := a.proposer.(StageCloser); ok {
		if err := c.CloseStage(a.ctx, runID, stage-1); err != nil {
			return "", nil, fmt.Errorf("closing stage %d: %w", stage-1, err)
		}
	}
	return a.proposer.Propose(a.ctx, runID, stage)
}
