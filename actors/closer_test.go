package actors

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
)

// closingProposer records the order of CloseStage and Propose calls; CloseStage of failClose
// fails.
type closingProposer struct {
	sysProposer
	failClose int
	mu        sync.Mutex
	calls     []string
}

func (p *closingProposer) CloseStage(ctx context.Context, runID string, stage int) error {
	p.mu.Lock()
	p.calls = append(p.calls, fmt.Sprintf("close %d", stage))
	p.mu.Unlock()
	if stage == p.failClose {
		return errors.New("evaluation broke")
	}
	return nil
}

func (p *closingProposer) Propose(ctx context.Context, runID string, stage int) (string, []byte, error) {
	p.mu.Lock()
	p.calls = append(p.calls, fmt.Sprintf("propose %d", stage))
	p.mu.Unlock()
	return p.sysProposer.Propose(ctx, runID, stage)
}

// A StageCloser's stage is closed before the next one is proposed, once per stage, and never
// for the last stage (its runner closes it); a failed close ends the run like a failed proposal.
func TestSystemClosesStagesBeforeProposing(t *testing.T) {
	cfg := sysConfig(NewManualClock(coordT0))
	cfg.UnitsPerStage = 2
	pr := &closingProposer{failClose: -1}
	s := sysStart(t, cfg, func(int) Runner { return &sysRunner{groupsPU: 1} }, &sysUpdater{}, pr)
	if _, err := s.Run(testCtx(t), 3); err != nil {
		t.Fatal(err)
	}
	want := []string{"close 0", "propose 1", "close 1", "propose 2"}
	if !slices.Equal(pr.calls, want) {
		t.Fatalf("calls %v, want %v", pr.calls, want)
	}

	pr = &closingProposer{failClose: 1}
	s = sysStart(t, cfg, func(int) Runner { return &sysRunner{groupsPU: 1} }, &sysUpdater{}, pr)
	rep, err := s.Run(testCtx(t), 4)
	if !errors.Is(err, ErrRunFailed) || !strings.Contains(err.Error(), "closing stage 1: evaluation broke") {
		t.Fatalf("err %v", err)
	}
	if len(rep.Stages) != 2 || rep.Engineer.Failed != 1 || !slices.Equal(pr.calls, []string{"close 0", "propose 1", "close 1"}) {
		t.Fatalf("report %+v, calls %v", rep, pr.calls)
	}
}
