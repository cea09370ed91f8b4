package store

import (
	"context"
	"testing"
)

func TestCountsRates(t *testing.T) {
	t.Parallel()
	if got := (Counts{}).Rates(); got != (Rates{}) {
		t.Fatalf("no episodes: %+v, want zero", got)
	}
	got := Counts{Episodes: 8, Valid: 6, Optimal: 3}.Rates()
	if got != (Rates{Episodes: 8, Valid: 0.75, Optimal: 0.375}) {
		t.Fatalf("rates %+v", got)
	}
}

func TestSplitNames(t *testing.T) {
	t.Parallel()
	for _, s := range []string{SplitTrain, SplitVal, SplitEvalPaper, EvalSplit("quick")} {
		if err := checkSplit(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
	for _, s := range []string{"", "eval:", "Train", "test"} {
		if err := checkSplit(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestStageView runs on the embedded store and on a real Redis.
func TestStageView(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { checkStageView(t, storeOpenMini(t, Options{})) })
	t.Run("redis", func(t *testing.T) {
		s := storeOpenMini(t, Options{URL: storeStartRedis(t).url()})
		checkStageView(t, s)
	})
}

func checkStageView(t *testing.T, s *Store) {
	ctx := context.Background()
	rec := func(split, unit string, agents int, eps, valid, opt int64) {
		t.Helper()
		r := UnitResult{RunID: "r1", Stage: 2, Split: split, UnitID: unit, PolicyVersion: 1, ConfigVersion: "c",
			Buckets: map[Key]Counts{{Agents: agents, Size: 4}: {Episodes: eps, Valid: valid, Optimal: opt}}}
		if _, err := s.RecordUnit(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	rec(SplitTrain, "u1", 2, 4, 2, 1)
	rec(SplitTrain, "u2", 3, 4, 4, 2)
	rec(SplitVal, "v", 2, 10, 5, 5)
	rec(SplitEvalPaper, "e3", 3, 4, 1, 0)
	rec(SplitEvalPaper, "e4", 4, 2, 2, 2)
	v, err := s.StageView(ctx, "r1", 2)
	if err != nil {
		t.Fatal(err)
	}
	if v.Units != 2 || v.Train != (Rates{Episodes: 8, Valid: 0.75, Optimal: 0.375}) || v.Val != (Rates{Episodes: 10, Valid: 0.5, Optimal: 0.5}) {
		t.Fatalf("view %+v", v)
	}
	if len(v.Eval) != 2 || v.Eval[3] != (Rates{Episodes: 4, Valid: 0.25}) || v.Eval[4] != (Rates{Episodes: 2, Valid: 1, Optimal: 1}) {
		t.Fatalf("eval %+v", v.Eval)
	}
	empty, err := s.StageView(ctx, "r1", 3)
	if err != nil || empty.Units != 0 || empty.Eval != nil || empty.Train != (Rates{}) {
		t.Fatalf("empty stage: %+v, %v", empty, err)
	}
}
