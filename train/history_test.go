package train

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// histRecorder is a strategy that records the histories it is shown and
// delegates to another strategy.
type histRecorder struct {
	engineer.Strategy
	mu   sync.Mutex
	seen []*engineer.History
}

func (h *histRecorder) Propose(ctx context.Context, hist *engineer.History) (engineer.Proposal, error) {
	h.mu.Lock()
	h.seen = append(h.seen, hist)
	h.mu.Unlock()
	return h.Strategy.Propose(ctx, hist)
}

// TestHistoryMatchesWhatTheEngineerSaw rebuilds the history after a run
// and checks it against what the strategy was shown during the run.
func TestHistoryMatchesWhatTheEngineerSaw(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	cfg := smallConfig()
	rules, err := engineer.ParseStrategy(engineer.NameRules, engineer.Options{Base: &cfg})
	if err != nil {
		t.Fatal(err)
	}
	rec := &histRecorder{Strategy: rules}
	opt := Options{RunID: "hist", Stages: 3, Seed: seed, Config: cfg, InstancesPerUnit: 10, GroupSize: 2, LearnerBatch: 4, ValPerSize: 2, EvalPerSize: 1, Strategy: rec}
	if _, err := Run(context.Background(), opt, &ScriptedPolicy{MistakeRate: 0.2}, st); err != nil {
		t.Fatal(err)
	}
	if len(rec.seen) != 2 {
		t.Fatalf("strategy asked %d times, want 2", len(rec.seen))
	}
	h, err := History(context.Background(), st, "hist", 3)
	if err != nil {
		t.Fatal(err)
	}
	if h.RunID != "hist" || h.Budget.TotalStages != 3 || len(h.Stages) != 3 {
		t.Fatalf("history: run %q budget %+v, %d stages", h.RunID, h.Budget, len(h.Stages))
	}
	last := rec.seen[len(rec.seen)-1]
	if !reflect.DeepEqual(h.Stages[:len(last.Stages)], last.Stages) {
		t.Fatalf("rebuilt history differs from what the engineer saw:\n%+v\n%+v", h.Stages[:len(last.Stages)], last.Stages)
	}
	if h.Stages[2].Rationale == "" || len(h.Stages[2].Val) == 0 || len(h.Stages[2].Train) == 0 {
		t.Fatalf("last stage incomplete: %+v", h.Stages[2])
	}
	if h.Stages[2].TrainByAgents != nil {
		t.Fatalf("a run on one agent count has per-agent stats: %+v", h.Stages[2].TrainByAgents)
	}
	if empty, err := History(context.Background(), st, "nosuchrun", 0); err != nil || len(empty.Stages) != 0 {
		t.Fatalf("unknown run: %+v, %v", empty, err)
	}
	// RunHistory reads the same history through the store's URL, and
	// refuses a run with no finished stage as bad input.
	byURL, err := RunHistory(context.Background(), st.URL(), "hist", 3)
	if err != nil || !reflect.DeepEqual(byURL, h) {
		t.Fatalf("RunHistory: %v, differs from History: %v", err, !reflect.DeepEqual(byURL, h))
	}
	// ProposeHistory reads the run without a file, and the file with one.
	if ph, err := ProposeHistory(context.Background(), "", "hist", st.URL(), 3); err != nil || !reflect.DeepEqual(ph, h) {
		t.Fatalf("ProposeHistory from Redis: %v", err)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "h.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if ph, err := ProposeHistory(context.Background(), path, "", "", 0); err != nil || len(ph.Stages) != len(h.Stages) {
		t.Fatalf("ProposeHistory from a file: %v", err)
	}
	_, err = RunHistory(context.Background(), st.URL(), "nosuchrun", 0)
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe.Usage() != fmt.Sprintf("run %q has no finished stage in %s", "nosuchrun", st.URL()) {
		t.Fatalf("RunHistory of an unknown run: %v", err)
	}
}

// TestHistoryByAgents: a run on an agent range records its training
// statistics per agent count in the history (what the engineer's F module
// shows), summing to the per-size ones; a run on one count records none.
func TestHistoryByAgents(t *testing.T) {
	seed := testSeed(t)
	st := openStore(t)
	cfg := smallConfig()
	cfg.AgentsMax = 4
	opt := Options{RunID: "hist-range", Stages: 2, Seed: seed, Config: cfg, InstancesPerUnit: 10, GroupSize: 2, LearnerBatch: 4, ValPerSize: 1, EvalPerSize: 1,
		Strategy: engineer.NewFixed(engineer.Options{Base: &cfg})}
	if _, err := Run(context.Background(), opt, &ScriptedPolicy{MistakeRate: 0.2}, st); err != nil {
		t.Fatal(err)
	}
	h, err := History(context.Background(), st, "hist-range", 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range h.Stages {
		var agents []int
		var episodes, valid int64
		for _, a := range s.TrainByAgents {
			agents = append(agents, a.Agents)
			episodes, valid = episodes+a.Episodes, valid+a.Valid
		}
		var sizeEpisodes, sizeValid int64
		for _, z := range s.Train {
			sizeEpisodes, sizeValid = sizeEpisodes+z.Episodes, sizeValid+z.Valid
		}
		if !reflect.DeepEqual(agents, []int{2, 3, 4}) || episodes != sizeEpisodes || valid != sizeValid || episodes == 0 {
			t.Errorf("stage %d: agents %v, %d episodes (%d valid); per size %d (%d)", s.Stage, agents, episodes, valid, sizeEpisodes, sizeValid)
		}
	}
}
