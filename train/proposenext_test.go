package train

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestProposeNext: the fixed strategy proposes the last stage's config for
// the next stage and the proposal is written; an unknown strategy is a
// field error about --strategy.
func TestProposeNext(t *testing.T) {
	cfg := smallConfig()
	h := &engineer.History{RunID: "r", Stages: []engineer.StageResult{{Stage: 0, Config: cfg, Epochs: 1}}}
	var b strings.Builder
	prop, err := ProposeNext(context.Background(), EngineerSpec{Strategy: engineer.NameFixed, Seed: 1}, cfg, h, &b)
	if err != nil {
		t.Fatal(err)
	}
	if prop.Config.Hash() != cfg.Hash() || !strings.Contains(b.String(), "=== proposal (fixed) for stage 1: config "+cfg.Hash()) {
		t.Fatalf("config %s, want %s; wrote:\n%s", prop.Config.Hash(), cfg.Hash(), b.String())
	}
	var fe *fielderr.Error
	if _, err := ProposeNext(context.Background(), EngineerSpec{Strategy: "nope"}, cfg, h, &b); !errors.As(err, &fe) || fe.Flag != "strategy" {
		t.Fatalf("unknown strategy: %v", err)
	}
}
