package daemon

import (
	"context"
	"encoding/json"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

var dashSeed = flag.Uint64("dashseed", 11, "run seed of TestDashboardRealRun")

// TestDashboardRealRun runs a small scripted one-process run with its
// live page (RunHandler) served over HTTP and reads /api/status once the
// run is done: the process is the one node, with every unit the
// coordinator accepted done, none in flight, a mean unit time, a last
// heartbeat no later than the page's time, and no lease lost.
func TestDashboardRealRun(t *testing.T) {
	t.Parallel()
	t.Logf("seed %d (-dashseed to replay)", *dashSeed)
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := env.DefaultLocalConfig()
	c.Instances = 48
	opt := train.Options{RunID: "dash", Stages: 2, Seed: *dashSeed, Config: c, InstancesPerUnit: 8, GroupSize: 4, LearnerBatch: 2,
		ValPerSize: 1, EvalPerSize: 1, Rollouts: 2}
	dash := NewDashboard(st, nil, "dash", nil)
	h, err := RunHandler("dash-node", &opt, dash)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ReadOnly(h))
	defer srv.Close()
	res, err := train.Run(context.Background(), opt, &train.ScriptedPolicy{MistakeRate: 0.05}, st)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Get(srv.URL + "/api/status")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	var got struct {
		Nodes   []train.StatusNode `json:"nodes"`
		NowUnix int64              `json:"now_unix_ms"`
	}
	if err != nil || resp.StatusCode != 200 || json.Unmarshal(body, &got) != nil {
		t.Fatalf("/api/status: %d %v %.300s", resp.StatusCode, err, body)
	}
	for _, key := range []string{`"units_done":`, `"units_in_flight":0,`, `"mean_unit_time_ns":`, `"last_heartbeat_unix_ms":`} {
		if !strings.Contains(string(body), key) {
			t.Errorf("/api/status has no %s: %.2000s", key, body)
		}
	}
	if len(got.Nodes) != 1 || got.Nodes[0].PID != os.Getpid() || got.Nodes[0].Load == nil {
		t.Fatalf("nodes %+v: want this process with its load", got.Nodes)
	}
	l := got.Nodes[0].Load
	if done := res.Actors.Coordinator.Completed; l.UnitsDone != done || done < 12 || l.UnitsInFlight != 0 || l.LostLeases != 0 || l.Left ||
		l.MeanUnitTime <= 0 || l.LastUnitMs == 0 || l.LastHeartbeatMs < l.LastUnitMs || l.LastHeartbeatMs > got.NowUnix {
		t.Errorf("load %+v; the coordinator completed %d units, the page read at %d", l, done, got.NowUnix)
	}
}
