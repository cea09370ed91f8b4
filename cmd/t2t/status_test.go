package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/alicebob/miniredis/v2"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

// TestStatusOfRun runs a scripted run on the embedded Redis, asks t2t
// status for it while stage 1 is being evaluated and after the run, and
// checks what it reports against the run's own result.
func TestStatusOfRun(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	url := st.URL()
	const stages, instances, perUnit = 3, 40, 8
	cfg := env.DefaultLocalConfig()
	cfg.Instances = instances
	var (
		midCode int
		midOut  string
	)
	opt := train.Options{RunID: "status", Stages: stages, Seed: 5, Config: cfg, InstancesPerUnit: perUnit, GroupSize: 4,
		LearnerBatch: 3, ValPerSize: 2, EvalPerSize: 1,
		OnState: func(s store.RunState) {
			if s.Stage == 1 && s.Phase == train.PhaseEvaluating && midOut == "" {
				// The state reaches Redis through the run's writer
				// goroutine: wait until it is there.
				deadline := time.Now().Add(10 * time.Second)
				for time.Now().Before(deadline) {
					if got, ok, _ := st.RunState(context.Background(), "status"); ok && got.Stage == 1 && got.Phase == train.PhaseEvaluating {
						break
					}
					waitABit(make(chan struct{}), 5*time.Millisecond)
				}
				var out, errb bytes.Buffer
				midCode = run([]string{"status", "--redis", url, "--run", "status"}, &out, &errb)
				midOut = out.String() + errb.String()
			}
		}}
	res, err := train.Run(context.Background(), opt, &train.ScriptedPolicy{MistakeRate: 0.2}, st)
	if err != nil {
		t.Fatal(err)
	}
	if midCode != 0 || !strings.Contains(midOut, "state: stage 1 evaluating, policy version ") ||
		!strings.Contains(midOut, fmt.Sprintf("running: stage 1 (evaluating): %d training units applied, %d training and ", (instances+perUnit-1)/perUnit, instances*4)) {
		t.Fatalf("status during stage 1's evaluation: exit %d\n%s", midCode, midOut)
	}
	ctx := context.Background()
	for _, c := range []store.CheckpointRecord{
		{Version: 9, Step: 2, Path: "/ck/stage-002", SHA256: strings.Repeat("b", 64)},
		{Version: 4, Step: 1, Path: "/ck/stage-001", SHA256: strings.Repeat("a", 64)},
	} {
		if err := st.PutCheckpoint(ctx, "status", c); err != nil {
			t.Fatal(err)
		}
	}

	code, out, errOut := t2t(t, "status", "--redis", url, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	var rep train.Status
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Run != "status" || rep.State == nil || rep.State.Phase != train.PhaseDone || rep.State.Stage != stages-1 ||
		rep.State.PolicyVersion != res.Stages[stages-1].Policy || rep.State.ConfigVersion != res.Stages[stages-1].ConfigVersion {
		t.Fatalf("state %+v, run ended at policy %d config %s", rep.State, res.Stages[stages-1].Policy, res.Stages[stages-1].ConfigVersion)
	}
	if len(rep.Stages) != stages {
		t.Fatalf("%d stages, want %d", len(rep.Stages), stages)
	}
	same := func(a store.Rates, b train.Rates) bool {
		return a.Episodes == b.Episodes && a.Valid == b.Valid && a.Optimal == b.Optimal
	}
	for i, s := range rep.Stages {
		want := res.Stages[i]
		if s.Stage != i || s.ConfigVersion != want.ConfigVersion || s.Units != (instances+perUnit-1)/perUnit {
			t.Errorf("stage %d: %+v", i, s)
		}
		if !same(s.Train, want.Train) || !same(s.Val, want.Val) || s.Train.Episodes != instances*4 {
			t.Errorf("stage %d: train %+v val %+v; the run reported %+v %+v", i, s.Train, s.Val, want.Train, want.Val)
		}
		if len(s.Eval) != len(want.Eval) {
			t.Errorf("stage %d: eval %+v, the run reported %+v", i, s.Eval, want.Eval)
		}
		for a, r := range want.Eval {
			if !same(s.Eval[a], r) {
				t.Errorf("stage %d, %d agents: %+v, the run reported %+v", i, a, s.Eval[a], r)
			}
		}
	}
	wantDiff := res.Stages[stages-1].Config.Diff(res.Stages[stages-2].Config)
	if rep.ConfigDiff != wantDiff || rep.DiffStages != [2]int{stages - 2, stages - 1} {
		t.Fatalf("config diff %v %q, want %q", rep.DiffStages, rep.ConfigDiff, wantDiff)
	}
	if len(rep.Checkpoints) != 2 || rep.Checkpoints[0].Version != 4 || rep.Checkpoints[1].Version != 9 {
		t.Fatalf("checkpoints %+v", rep.Checkpoints)
	}
	if f := rep.Flow; f == nil || f.Total != res.Flow() || len(f.Stages) != stages {
		t.Fatalf("flow %+v, the run's %+v", rep.Flow, res.Flow())
	}
	for i, s := range rep.Stages {
		if s.Flow == nil || *s.Flow != res.Stages[i].Flow {
			t.Errorf("stage %d flow %+v, the run's %+v", i, s.Flow, res.Stages[i].Flow)
		}
	}

	code, out, errOut = t2t(t, "status", "--redis", url, "--run", "status")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	t.Logf("t2t status:\n%s", out)
	for _, want := range []string{
		fmt.Sprintf("state: stage %d done, policy version %d, config %s", stages-1, rep.State.PolicyVersion, rep.State.ConfigVersion),
		fmt.Sprintf("latest config change, stage %d → %d", stages-2, stages-1),
		"version 9  after stage 2",
		"flow (max lag 2, staleness K 4, late groups kept up to 8 versions): " + res.Flow().String(),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "running:") {
		t.Errorf("status of a finished run: a running stage:\n%s", out)
	}
	if want := fmt.Sprintf(", pid %d) coordinator,learner,rollout,engineer at the run's process: %d units done, 0 in flight, ",
		os.Getpid(), res.Actors.Coordinator.Completed); !strings.Contains(out, "\nnodes (as the run recorded them ") || !strings.Contains(out, want) {
		t.Errorf("status lacks the run's recorded node with %q:\n%s", want, out)
	}
	// The config over stages: one row per size, one cell per stage.
	for _, z := range res.Stages[0].Config.Sizes {
		row := regexp.MustCompile(fmt.Sprintf(`(?m)^ +%d((?: +\d\.\d{3} / \d\.\d\d / \d\.\d\d[ *])+)$`, z.Size)).FindStringSubmatch(out)
		if row == nil {
			t.Errorf("status output has no config row for size %d:\n%s", z.Size, out)
			continue
		}
		var cells []string
		for i := range stages {
			for _, y := range res.Stages[i].Config.Sizes {
				if y.Size == z.Size {
					cells = append(cells, fmt.Sprintf("%.3f / %.2f / %.2f", y.DataRatio, y.HoleRatio, y.WaitRatio))
				}
			}
		}
		if got := strings.Fields(strings.ReplaceAll(strings.ReplaceAll(row[1], "*", " "), " / ", "/")); strings.Join(got, " ") != strings.ReplaceAll(strings.Join(cells, " "), " / ", "/") {
			t.Errorf("config row of size %d: %q, want %q", z.Size, row[1], cells)
		}
	}
	if wantDiff != "" && !strings.Contains(out, "  "+strings.Split(wantDiff, "\n")[0]+"\n") {
		t.Errorf("status output lacks the diff %q:\n%s", wantDiff, out)
	}
	for i := range stages {
		if !strings.Contains(out, fmt.Sprintf("%d  %s", i, res.Stages[i].ConfigVersion)) {
			t.Errorf("status output lacks stage %d's row:\n%s", i, out)
		}
	}
}

// TestStatusNodesRecorded runs a scripted run on a real redis-server and
// reads its nodes with plain `t2t status` (Redis only, no HTTP): the run's
// one process is listed by pid with every role and as many units done as
// its coordinator accepted, none in flight and a mean unit time, in the
// wording of the live page's snapshot; --json carries the same record.
func TestStatusNodesRecorded(t *testing.T) {
	url := nodeRedis(t)
	ctx := context.Background()
	st, err := store.Open(ctx, store.Options{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	cfg := env.DefaultLocalConfig()
	cfg.Instances = 24
	opt := train.Options{RunID: "nodes", Stages: 2, Seed: 3, Config: cfg, InstancesPerUnit: 6, GroupSize: 2,
		LearnerBatch: 2, ValPerSize: 1, EvalPerSize: 1, Rollouts: 2}
	res, err := train.Run(ctx, opt, &train.ScriptedPolicy{MistakeRate: 0.2}, st)
	if err != nil {
		t.Fatal(err)
	}
	done := res.Actors.Coordinator.Completed
	if training := uint64(2 * 4); done < training {
		t.Fatalf("the run accepted %d units, fewer than its %d training units", done, training)
	}
	code, out, errOut := t2t(t, "status", "--redis", url, "--run", "nodes")
	if code != 0 {
		t.Fatalf("status: exit %d: %s", code, errOut)
	}
	t.Logf("t2t status:\n%s", out)
	line := regexp.MustCompile(fmt.Sprintf(`(?m)^  \S+ \(id local, pid %d\) coordinator,learner,rollout,engineer at the run's process: `+
		`(\d+) units done, 0 in flight, mean unit [0-9.]+[mµn]?s, 0 leases lost, last heartbeat [0-9.]+[mµn]?s ago, policy lag \d+$`, os.Getpid())).FindStringSubmatch(out)
	if line == nil || line[1] != fmt.Sprint(done) || !strings.Contains(out, "\nnodes (as the run recorded them ") {
		t.Fatalf("status lacks the run's node with %d units done:\n%s", done, out)
	}
	code, out, errOut = t2t(t, "status", "--redis", url, "--run", "nodes", "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	var rep train.Status
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Nodes) != 1 || rep.Nodes[0].Load == nil || rep.Nodes[0].Load.UnitsDone != done || rep.Nodes[0].PID != os.Getpid() ||
		rep.Nodes[0].Load.MeanUnitTime <= 0 || rep.NodesUnixMs == 0 {
		t.Fatalf("status --json nodes %+v (recorded at %d), want this process with %d units done", rep.Nodes, rep.NodesUnixMs, done)
	}
}

func TestStatusBadInput(t *testing.T) {
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"status"}, 2, "--redis is required"},
		{[]string{"status", "--redis", st.URL()}, 2, "no run has a state"},
		{[]string{"status", "--redis", st.URL(), "--run", "a b"}, 2, `--run "a b"`},
		{[]string{"status", "--redis", st.URL(), "--run", "ghost"}, 2, "no such run"},
		{[]string{"status", "--redis", fmt.Sprintf("redis://127.0.0.1:%d/0", nodeFreePort(t)), "--run", "x", "--timeout", "300ms"}, 1, "t2t status:"},
		{[]string{"status", "--redis", st.URL(), "--json", "--http", "127.0.0.1:0"}, 2, "--json and --http"},
		{[]string{"status", "--redis", st.URL(), "--run", "ghost", "--http", "127.0.0.1:0"}, 2, "no such run"},
		{[]string{"status", "--redis", st.URL(), "--run", "r1", "--http", "127.0.0.1:99999"}, 2, "127.0.0.1:99999"},
	} {
		if tc.code == 2 && slices.Contains(tc.args, "r1") {
			if err := st.PutRunState(context.Background(), store.RunState{RunID: "r1", Phase: train.PhaseTraining}); err != nil {
				t.Fatal(err)
			}
		}
		code, _, stderr := t2t(t, tc.args...)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("t2t %s: exit %d, stderr %q; want %d and %q", strings.Join(tc.args, " "), code, stderr, tc.code, tc.want)
		}
	}
}

// TestStatusRedisPassword: t2t status (and t2t train) reach a Redis that
// requires a password with --redis-password-file or $T2T_REDIS_PASSWORD,
// and neither their output nor their errors show the password (a malformed
// URL is exit 2).
func TestStatusRedisPassword(t *testing.T) {
	const pw = "s3cr3t-pw"
	mr := miniredis.RunT(t)
	mr.RequireAuth(pw)
	st, err := store.Open(context.Background(), store.Options{URL: "redis://:" + pw + "@" + mr.Addr() + "/0"})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutRunState(context.Background(), store.RunState{RunID: "r", Phase: "running", UpdatedUnixMs: 1}); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "redis.password")
	if err := os.WriteFile(file, []byte(pw+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	url := "redis://" + mr.Addr() + "/0"
	for _, tc := range []struct {
		args []string
		env  string
		code int
		want string
	}{
		{[]string{"--redis", url, "--redis-password-file", file, "--json"}, "", 0, `"redis": "redis://:***@` + mr.Addr() + `/0"`},
		{[]string{"--redis", url}, pw, 0, "(Redis redis://:***@" + mr.Addr() + "/0"},
		{[]string{"--redis", url, "--timeout", "2s"}, "", 1, "NOAUTH"},
		{[]string{"--redis", "redis://:" + pw + "@" + mr.Addr() + ":bad/0"}, "", 2, "redis://:***@"},
		{[]string{"--redis", "redis://:" + pw + "@" + mr.Addr() + "/notadb"}, "", 2, "invalid database number"},
		{[]string{"--redis", url, "--redis-password-file", file + ".missing"}, pw, 2, "-redis-password-file"},
	} {
		t.Setenv(store.PasswordEnv, tc.env)
		code, out, stderr := t2t(t, append([]string{"status", "--run", "r"}, tc.args...)...)
		if code != tc.code || !strings.Contains(out+stderr, tc.want) || strings.Contains(out+stderr, pw) {
			t.Errorf("t2t status %q, env %q: exit %d\n%s%s\nwant %d, %q and no password", tc.args, tc.env, code, out, stderr, tc.code, tc.want)
		}
	}
	// t2t train's last line names its Redis, redacted.
	t.Setenv(store.PasswordEnv, "")
	code, out, stderr := t2t(t, "train", "--redis", url, "--redis-password-file", file, "--policy", "scripted", "--stages", "1",
		"--instances", "16", "--instances-per-unit", "8", "--val-per-size", "1", "--eval-per-size", "1", "--run-id", "pw")
	if code != 0 || !strings.Contains(out, "; Redis redis://:***@"+mr.Addr()+"/0;") || strings.Contains(out+stderr, pw) {
		t.Errorf("t2t train: exit %d\n%s%s", code, out, stderr)
	}
}
