package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/train"
)

func testUnitLog(unit string) train.UnitLog {
	return train.UnitLog{
		Result: store.UnitResult{RunID: "r1", Stage: 2, Split: "train", UnitID: unit, PolicyVersion: 7, Buckets: map[store.Key]store.Counts{
			{Size: 8, Agents: 3}: {Episodes: 4, Valid: 2, Optimal: 1, RewardSum: 1.5, Categories: map[string]int64{"collision": 2}},
			{Size: 5, Agents: 4}: {Episodes: 2, Valid: 2, Optimal: 2, RewardSum: 2},
			{Size: 5, Agents: 2}: {Episodes: 6, Valid: 5, Optimal: 4, RewardSum: 4.25},
		}},
		PolicyVersion: 7, LearnerVersion: 9, Lag: 2, Millis: 31,
	}
}

// TestUnitLineJSON pins a unit log line: field names, buckets sorted by
// size then agents, categories only where there are some.
func TestUnitLineJSON(t *testing.T) {
	t.Parallel()
	b, err := json.Marshal(unitLineOf("node-1", testUnitLog("u-3")))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"node":"node-1","run":"r1","unit":"u-3","stage":2,"split":"train","policy_version":7,"learner_version":9,"lag":2,"millis":31,"buckets":[` +
		`{"size":5,"agents":2,"episodes":6,"valid":5,"optimal":4,"reward_sum":4.25},` +
		`{"size":5,"agents":4,"episodes":2,"valid":2,"optimal":2,"reward_sum":2},` +
		`{"size":8,"agents":3,"episodes":4,"valid":2,"optimal":1,"reward_sum":1.5,"categories":{"collision":2}}]}`
	if string(b) != want {
		t.Fatalf("unit line\n%s\nwant\n%s", b, want)
	}
}

// TestOpenUnitLog appends whole lines from concurrent writers, to an
// existing file; no path logs nothing; a path that cannot be opened is an
// *fielderr.Error.
func TestOpenUnitLog(t *testing.T) {
	t.Parallel()
	logger := slog.New(slog.DiscardHandler)
	path := filepath.Join(t.TempDir(), "units.jsonl")
	if err := os.WriteFile(path, []byte("{\"unit\":\"before\"}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logUnit, closeLog, err := openUnitLog(path, "n1", logger)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { logUnit(testUnitLog(fmt.Sprintf("u-%d", i))) })
	}
	wg.Wait()
	closeLog()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 9 {
		t.Fatalf("%d lines, want 9:\n%s", len(lines), b)
	}
	seen := map[string]bool{}
	for _, l := range lines[1:] {
		var u UnitLine
		if err := json.Unmarshal([]byte(l), &u); err != nil || u.Node != "n1" || len(u.Buckets) != 3 {
			t.Fatalf("line %q: %v", l, err)
		}
		seen[u.Unit] = true
	}
	if len(seen) != 8 {
		t.Fatalf("units %v, want 8 distinct", seen)
	}

	noop, closeNoop, err := openUnitLog("", "n1", logger)
	if err != nil {
		t.Fatal(err)
	}
	noop(testUnitLog("u"))
	closeNoop()

	bad := filepath.Join(t.TempDir(), "missing", "units.jsonl")
	_, _, err = openUnitLog(bad, "n1", logger)
	var ie *fielderr.Error
	if !errors.As(err, &ie) || ie.Field != "UnitLogPath" || ie.Flag != "unit-log" || !errors.Is(err, ErrBadSetting) || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("open %s: %v, want a *fielderr.Error for UnitLogPath", bad, err)
	}
}

// TestWriteSummary pins the summary file of a rollout process.
func TestWriteSummary(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.json")
	roles := Roles{List: []cluster.Role{cluster.RoleRollout}, Rollout: true}
	stats := train.RemoteStats{Units: 3, PolicyLoads: 1, PolicyLagSum: 2, PolicyLagMax: 1}
	if err := writeSummary(path, "id-1", roles, Summary{ID: "ignored", Rollout: &stats}); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "id": "id-1",
  "roles": "rollout",
  "rollout": {
    "Units": 3,
    "Failed": 0,
    "PolicyLoads": 1,
    "PolicyLagSum": 2,
    "PolicyLagMax": 1
  }
}
`
	if string(b) != want {
		t.Fatalf("summary\n%s\nwant\n%s", b, want)
	}
	if err := writeSummary("", "id-1", roles, Summary{}); err != nil {
		t.Fatalf("no path: %v", err)
	}
	if got := meanLag(stats); got != 2.0/3 {
		t.Fatalf("meanLag = %v", got)
	}
	if got := meanLag(train.RemoteStats{}); got != 0 {
		t.Fatalf("meanLag of no units = %v", got)
	}
}
