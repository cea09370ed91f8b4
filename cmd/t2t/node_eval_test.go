package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/env"
)

// TestNodeClusterKillDuringEval: the evaluation after a stage is work
// leased to the rollout nodes. On three t2t node processes (coordinator +
// learner + engineer, two rollout nodes) a rollout node is killed with
// SIGKILL once it has played one of the stage's validation units; the run completes,
// the killed node's evaluation lease is issued again, every validation and
// benchmark instance is counted exactly once in Redis, the aggregates are
// the sum of the units the rollout nodes logged, and the stage's report
// shows what Redis holds.
func TestNodeClusterKillDuringEval(t *testing.T) {
	seed := nodeTestSeed(t, 12)
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	valPerSize := 300
	if nodeRace {
		valPerSize = 100
	}
	const perUnit = 16
	valSpec := env.ValidationSpec(2026, valPerSize)
	evalSpec := env.PaperEvalSpec(2026, 1)
	valUnits := (valSpec.Len() + perUnit - 1) / perUnit
	runID := fmt.Sprintf("evalkill-%d", seed)
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0",
		"--http", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer",
		"--policy", "scripted", "--stages", "1", "--instances", "64", "--instances-per-unit", strconv.Itoa(perUnit),
		"--val-per-size", strconv.Itoa(valPerSize), "--eval-per-size", "1", "--run-id", runID,
		"--seed", strconv.FormatUint(seed, 10), "--summary", filepath.Join(dir, "a.json")}, common...)...)
	gossipA := nodeField(t, a.line("t2t node: joined ", 60*time.Second), "gossip")
	b, bLog, _ := startRolloutNode(t, dir, "B", gossipA, common)
	c, cLog, _ := startRolloutNode(t, dir, "C", gossipA, common)
	b.line("t2t node: serving coordinator ", 30*time.Second)
	c.line("t2t node: serving coordinator ", 30*time.Second)

	st, err := store.Open(context.Background(), store.Options{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	// A rollout node has played a validation unit: the stage is being
	// evaluated. That node is the victim; the other must finish the work.
	deadline := time.Now().Add(90 * time.Second)
	never := make(chan struct{})
	victim, other, otherLog := c, b, bLog
	for !hasSplit(readUnitLog(t, cLog), store.SplitVal) {
		if hasSplit(readUnitLog(t, bLog), store.SplitVal) {
			victim, other, otherLog = b, c, cLog
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no rollout node logged a validation unit within 90s")
		}
		waitABit(never, 20*time.Millisecond)
	}
	applied, err := st.UnitsApplied(ctx, runID, 0, store.SplitVal)
	if err != nil {
		t.Fatal(err)
	}
	if applied >= int64(valUnits) {
		t.Fatalf("the validation was done (%d units applied) before %s was killed; raise --val-per-size", applied, victim.name)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s during the evaluation with %d/%d validation units applied", victim.name, applied, valUnits)
	if code := a.wait(120 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}

	var sum daemon.Summary
	raw, err := os.ReadFile(filepath.Join(dir, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil || sum.Error != "" || sum.Run == nil || len(sum.Run.Actors.Stages) != 1 {
		t.Fatalf("A summary: %v %s", err, raw)
	}
	sd := sum.Run.Actors.Stages[0]
	if sd.EvalUnits != valUnits+(evalSpec.Len()+perUnit-1)/perUnit || sd.Reissued < 1 {
		t.Errorf("stage 0: %d evaluation units, %d re-issued; want %d + the benchmark's, >= 1 re-issued",
			sd.EvalUnits, sd.Reissued, valUnits)
	}
	logged := map[string]daemon.UnitLine{}
	onOther := 0
	for _, path := range []string{bLog, cLog} {
		for _, u := range readUnitLog(t, path) {
			if u.Split == store.SplitTrain {
				continue
			}
			if path == otherLog {
				onOther++
			}
			logged[u.Unit] = u
		}
	}
	if onOther == 0 {
		t.Errorf("%s, the node left, played no evaluation unit", other.name)
	}
	for _, sp := range []struct {
		split string
		n     int
	}{{store.SplitVal, valSpec.Len()}, {store.SplitEvalPaper, evalSpec.Len()}} {
		agg, err := st.Aggregates(ctx, runID, 0, sp.split)
		if err != nil {
			t.Fatal(err)
		}
		got := store.SumSplit(agg).All
		var want store.Counts
		for _, u := range logged {
			if u.Split != sp.split {
				continue
			}
			for _, bk := range u.Buckets {
				want.Episodes += bk.Episodes
				want.Valid += bk.Valid
				want.Optimal += bk.Optimal
				want.RewardSum += bk.RewardSum
			}
		}
		if got.Episodes != int64(sp.n) || got.Episodes != want.Episodes || got.Valid != want.Valid ||
			got.Optimal != want.Optimal || math.Abs(got.RewardSum-want.RewardSum) > 1e-6 {
			t.Errorf("%s: Redis %+v, want %d episodes and the logged units' sum %+v", sp.split, got, sp.n, want)
		}
		if sp.split == store.SplitVal {
			if r := sum.Run.Stages[0].Val; r != got.Rates() {
				t.Errorf("stage report val %+v, Redis %+v", r, got.Rates())
			}
		}
	}
}

func hasSplit(us []daemon.UnitLine, split string) bool {
	for _, u := range us {
		if u.Split == split {
			return true
		}
	}
	return false
}
