package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

// testStatusStore is an embedded store holding run r7: its state and two
// stages' configs.
func testStatusStore(t *testing.T) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	cfg, err := json.Marshal(env.DefaultLocalConfig())
	if err != nil {
		t.Fatal(err)
	}
	for stage, v := range []string{"c0", "c1"} {
		if err := st.PutConfig(ctx, "r7", store.ConfigRecord{Stage: stage, Version: v, JSON: cfg, Proposer: "fixed", Rationale: "<keep> & go"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.PutRunState(ctx, store.RunState{RunID: "r7", Stage: 1, Phase: train.PhaseTraining, PolicyVersion: 3, ConfigVersion: "c1"}); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestDashboardStatus: /api/status is the run's train.Status with the
// flow record this process's run reported (another run's is ignored),
// then the cluster's nodes with the coordinator's account of their load (a
// node that is no member any more listed after them) and the time, in that
// order.
func TestDashboardStatus(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := testStatusStore(t)
	members := []cluster.NodeMeta{
		{ID: "a", Name: "coord", Address: "10.0.0.1:4000", Roles: []cluster.Role{cluster.RoleCoordinator, cluster.RoleLearner, cluster.RoleEngineer}},
		{ID: "b", Name: "roll", Address: "10.0.0.2:4000", Roles: []cluster.Role{cluster.RoleRollout}, Capacity: 4, Version: "v1"},
	}
	flow := train.FlowRecord{RunID: "r7", MaxLag: 2, StalenessK: 4, Stages: []train.StageFlow{{Stage: 1, FlowStats: train.FlowStats{Arrived: 8, Used: 8}}}}
	now := time.UnixMilli(1_700_000_000_123)
	loads := []actors.NodeLoad{
		{Node: "b", UnitsDone: 5, InFlight: 2, MeanUnitTime: 1500 * time.Millisecond, Timed: 5, LastDone: now.Add(-time.Second), LastContact: now.Add(-200 * time.Millisecond)},
		{Node: "gone", UnitsDone: 1, Lost: 3, Left: true},
	}
	for _, tc := range []struct {
		name  string
		nodes func() []cluster.NodeMeta
		loads []actors.NodeLoad
		flows []train.FlowRecord
		want  []train.StatusNode
	}{
		{name: "no nodes known (t2t status --http)"},
		{name: "cluster", nodes: func() []cluster.NodeMeta { return members }, flows: []train.FlowRecord{flow, {RunID: "other", MaxLag: 9}},
			want: []train.StatusNode{{ID: "a", Name: "coord", Address: "10.0.0.1:4000", Roles: []string{"coordinator", "learner", "engineer"}},
				{ID: "b", Name: "roll", Address: "10.0.0.2:4000", Roles: []string{"rollout"}, Capacity: 4}}},
		{name: "cluster with loads", nodes: func() []cluster.NodeMeta { return members }, loads: loads,
			want: []train.StatusNode{{ID: "a", Name: "coord", Address: "10.0.0.1:4000", Roles: []string{"coordinator", "learner", "engineer"}},
				{ID: "b", Name: "roll", Address: "10.0.0.2:4000", Roles: []string{"rollout"}, Capacity: 4,
					Load: &train.StatusLoad{UnitsDone: 5, UnitsInFlight: 2, MeanUnitTime: 1500 * time.Millisecond,
						LastUnitMs: now.Add(-time.Second).UnixMilli(), LastHeartbeatMs: now.Add(-200 * time.Millisecond).UnixMilli()}},
				{ID: "gone", Roles: []string{"rollout"}, Address: "not a member", Load: &train.StatusLoad{UnitsDone: 1, LostLeases: 3, Left: true}}}},
	} {
		d := NewDashboard(st, nil, "r7", tc.nodes)
		if tc.loads != nil {
			f := func() []actors.NodeLoad { return tc.loads }
			d.loads.Store(&f)
		}
		for _, f := range tc.flows {
			d.onFlow(f)
		}
		got, err := d.read(ctx, now)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := train.CollectStatus(ctx, st, nil, "r7")
		if err != nil {
			t.Fatal(err)
		}
		if len(tc.flows) > 0 {
			rep.SetFlow(&flow)
			if got.Flow == nil || got.Flow.MaxLag != 2 || got.Stages[1].Flow == nil || got.Stages[1].Flow.Used != 8 {
				t.Errorf("%s: the page's flow is not the run's: %+v", tc.name, got.Flow)
			}
		} else if got.Flow != nil {
			t.Errorf("%s: flow %+v, want none", tc.name, got.Flow)
		}
		var gotJSON, wantJSON bytes.Buffer
		json.NewEncoder(&gotJSON).Encode(got)
		rep.Nodes = tc.want
		json.NewEncoder(&wantJSON).Encode(struct {
			*train.Status
			NowUnix int64 `json:"now_unix_ms"`
		}{rep, now.UnixMilli()})
		if gotJSON.String() != wantJSON.String() {
			t.Errorf("%s: /api/status\n%s\nwant\n%s", tc.name, gotJSON.String(), wantJSON.String())
		}
		if s := gotJSON.String(); !strings.HasPrefix(s, `{"redis":`) || !strings.Contains(s, `,"nodes":`) || !strings.HasSuffix(s, `,"now_unix_ms":1700000000123}`+"\n") {
			t.Errorf("%s: /api/status layout: %s", tc.name, s)
		}
	}
}

// TestDashboardHTTP serves /api/status (a 503 with the error in JSON for
// a run Redis does not have) and /ui.
func TestDashboardHTTP(t *testing.T) {
	t.Parallel()
	st := testStatusStore(t)
	for _, tc := range []struct {
		run, path string
		code      int
		ctype     string
		has       string
	}{
		{"r7", "/api/status", 200, "application/json", `"run":"r7"`},
		{"missing", "/api/status", 503, "application/json", `{"error":"`},
		{"r7", "/ui", 200, "text/html; charset=utf-8", "fetch('/api/status'"},
	} {
		mux := http.NewServeMux()
		NewDashboard(st, nil, tc.run, nil).register(mux)
		w := httptest.NewRecorder()
		mux.ServeHTTP(w, httptest.NewRequest(http.MethodGet, tc.path, nil))
		if w.Code != tc.code || w.Header().Get("Content-Type") != tc.ctype || !strings.Contains(w.Body.String(), tc.has) {
			t.Errorf("run %s GET %s: %d %s %.200s; want %d %s with %q", tc.run, tc.path, w.Code, w.Header().Get("Content-Type"), w.Body.String(), tc.code, tc.ctype, tc.has)
		}
	}
}
