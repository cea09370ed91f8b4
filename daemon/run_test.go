package daemon

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/train"
)

// outLines is a Config.Stdout that tests can wait on, line by line.
type outLines struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	change chan struct{} // poked on every write
}

func newOutLines() *outLines { return &outLines{change: make(chan struct{}, 1)} }

func (o *outLines) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	n, err := o.buf.Write(b)
	select {
	case o.change <- struct{}{}:
	default:
	}
	return n, err
}

func (o *outLines) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.String()
}

// line waits for a line starting with prefix and returns it.
func (o *outLines) line(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		sc := bufio.NewScanner(strings.NewReader(o.String()))
		for sc.Scan() {
			if strings.HasPrefix(sc.Text(), prefix) {
				return sc.Text()
			}
		}
		select {
		case <-o.change:
		case <-deadline.C:
			t.Fatalf("no line %q within %v in:\n%s", prefix, timeout, o.String())
		}
	}
}

// field returns key's value in a "k=v k=v" line.
func field(t *testing.T, line, key string) string {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in %q", key, line)
	return ""
}

// testRun is a scripted run of 2 stages of 6 units.
func testRun(runID string, closed *bool) *RunSetup {
	return &RunSetup{RunID: runID, Build: func(logger *slog.Logger, out io.Writer) (*Training, error) {
		c := env.DefaultLocalConfig()
		c.Instances = 48
		opt := train.Options{RunID: runID, Stages: 2, Seed: 5, Config: c, InstancesPerUnit: 8, GroupSize: 4, LearnerBatch: 2,
			ValPerSize: 1, EvalPerSize: 1, Out: out, Logger: logger}
		return &Training{Options: opt, Policy: &train.ScriptedPolicy{MistakeRate: 0.05}, Close: func() error { *closed = true; return nil }}, nil
	}}
}

func testConfig(t *testing.T, roles string, out io.Writer) Config {
	t.Helper()
	r, err := ParseRoles(roles)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Roles, cfg.Gossip, cfg.Capacity, cfg.Stdout = r, cluster.LocalConfig(), 2, out
	cfg.ID, cfg.Name, cfg.TelemetryName = cluster.NewNodeID(), "test", "test"
	dir := t.TempDir()
	cfg.SummaryPath, cfg.UnitLogPath = filepath.Join(dir, "summary.json"), filepath.Join(dir, "units.jsonl")
	return cfg
}

func readSummary(t *testing.T, path string) Summary {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var s Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	return s
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestRunOneProcess runs every role in one process on the embedded Redis
// (a one-node cluster): the run completes, its own rollouts log every
// unit, no actor address is advertised, and the summary and the last line
// say what the run did.
func TestRunOneProcess(t *testing.T) {
	t.Parallel()
	out := newOutLines()
	cfg := testConfig(t, "coordinator,learner,engineer,rollout", out)
	cfg.HTTPAddr = "127.0.0.1:0"
	closed := false
	if err := Run(context.Background(), cfg, testRun("one", &closed)); err != nil {
		t.Fatalf("Run: %v\n%s", err, out)
	}
	out.line(t, "t2t node: http=127.0.0.1:", 0)
	if joined := out.line(t, "t2t node: joined ", 0); field(t, joined, "actors") != "" || field(t, joined, "roles") != "coordinator,learner,engineer,rollout" {
		t.Errorf("joined line %q: want no actor address and every role", joined)
	}
	out.line(t, "t2t node: run one: 2 stages done, 6 units per stage, 0 re-issued, 0 duplicate results, learner ", 0)
	if !closed {
		t.Error("the policy was not closed")
	}
	s := readSummary(t, cfg.SummaryPath)
	if s.ID != cfg.ID || s.Roles != "coordinator,learner,engineer,rollout" || s.Error != "" || s.Run == nil ||
		len(s.Run.Stages) != 2 || s.UnitsPerStage != 6 || s.Flow == nil || s.Rollout != nil {
		t.Fatalf("summary %+v", s)
	}
	// The unit log holds the 12 training units and every evaluation unit.
	units := 12
	for _, sd := range s.Run.Actors.Stages {
		units += sd.EvalUnits
	}
	if n := countLines(t, cfg.UnitLogPath); n != units || units < 12+2*2 {
		t.Fatalf("%d units logged, want 12 training and %d evaluation units", n, units-12)
	}
}

// TestRunCluster runs a coordinator process and a rollout process in this
// process (two actor systems and two memberships on 127.0.0.1, one
// Redis): the rollout process serves the coordinator it finds in the
// membership, runs every unit, waits for the next coordinator when the
// run is over, and stops when its context ends.
func TestRunCluster(t *testing.T) {
	t.Parallel()
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	coordOut, rollOut := newOutLines(), newOutLines()
	coord := testConfig(t, "coordinator,learner,engineer", coordOut)
	coord.RedisURL = st.URL()
	roll := testConfig(t, "rollout", rollOut)
	roll.RedisURL, roll.HTTPAddr = st.URL(), "127.0.0.1:0"

	closed := false
	coordDone := make(chan error, 1)
	go func() { coordDone <- Run(context.Background(), coord, testRun("cl", &closed)) }()
	gossip := field(t, coordOut.line(t, "t2t node: joined ", 30*time.Second), "gossip")
	roll.Gossip.Seeds = []string{gossip}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	rollDone := make(chan error, 1)
	go func() { rollDone <- Run(ctx, roll, nil) }()
	httpAddr := field(t, rollOut.line(t, "t2t node: http=", 30*time.Second), "http")
	rollOut.line(t, "t2t node: serving coordinator ", 30*time.Second)
	if code := getStatus(t, "http://"+httpAddr+"/readyz"); code != 200 {
		t.Errorf("rollout /readyz while serving: %d", code)
	}
	select {
	case err := <-coordDone:
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coordOut)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the run did not end within 60s")
	}
	coordOut.line(t, "t2t node: rollout node joined id="+roll.ID, 0)
	// The run is done: the rollout node leaves on its own (no Keep).
	rollOut.line(t, "t2t node: coordinator "+coord.ID+" left and run cl is done; leaving", 30*time.Second)
	select {
	case err := <-rollDone:
		if err != nil {
			t.Fatalf("rollout process: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the rollout node did not leave within 60s after the run was done\n%s", rollOut)
	}
	// The rollout ran the 12 training units and every evaluation unit.
	cs := readSummary(t, coord.SummaryPath)
	if cs.Run == nil || cs.Rollout != nil {
		t.Fatalf("coordinator summary %+v", cs)
	}
	units := 12
	for _, sd := range cs.Run.Actors.Stages {
		if sd.EvalUnits < 2 { // the validation set and the benchmark, one unit at least each
			t.Errorf("stage %d: %d evaluation units", sd.Stage, sd.EvalUnits)
		}
		units += sd.EvalUnits
	}
	if got := cs.Run.Actors.Coordinator.Completed; got != uint64(units) {
		t.Fatalf("coordinator completed %d units, want 12 training + %d evaluation", got, units-12)
	}
	rollOut.line(t, fmt.Sprintf("t2t node: stopped: %d units run (0 failed), ", units), 0)
	rs := readSummary(t, roll.SummaryPath)
	if rs.Rollout == nil || rs.Rollout.Units != int64(units) || len(rs.Rollouts) != 2 || rs.Run != nil {
		t.Fatalf("rollout summary %+v", rs)
	}
	if n := countLines(t, roll.UnitLogPath); n != units {
		t.Fatalf("the rollout process logged %d units, want %d", n, units)
	}
}

func getStatus(t *testing.T, url string) int {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestRunInputErrors: settings Run cannot use are *fielderr.Errors naming the
// field; a coordinator without a RunSetup is ErrNoRunSetup.
func TestRunInputErrors(t *testing.T) {
	t.Parallel()
	closed := false
	for _, tc := range []struct {
		name  string
		roles string
		set   func(*Config)
		run   *RunSetup
		field string
	}{
		{"http", "coordinator,learner,engineer,rollout", func(c *Config) { c.HTTPAddr = "127.0.0.1:bad" }, testRun("x", &closed), "HTTPAddr"},
		{"listen", "coordinator,learner,engineer,rollout", func(c *Config) { c.Listen = "nohostport" }, testRun("x", &closed), "Listen"},
		{"tls", "coordinator,learner,engineer,rollout", func(c *Config) { c.TLS = cluster.TLSFiles{Cert: "/nonexistent/c.pem"} }, testRun("x", &closed), "TLS"},
		{"unit log", "coordinator,learner,engineer,rollout", func(c *Config) { c.UnitLogPath = filepath.Join(t.TempDir(), "no", "u.jsonl") }, testRun("x", &closed), "UnitLogPath"},
		{"no run setup", "coordinator,learner,engineer", nil, nil, ""},
	} {
		cfg := testConfig(t, tc.roles, io.Discard)
		if tc.set != nil {
			tc.set(&cfg)
		}
		err := Run(context.Background(), cfg, tc.run)
		var ie *fielderr.Error
		switch {
		case tc.field == "" && !errors.Is(err, ErrNoRunSetup):
			t.Errorf("%s: %v, want ErrNoRunSetup", tc.name, err)
		case tc.field != "" && (!errors.As(err, &ie) || ie.Field != tc.field || !errors.Is(err, ErrBadSetting)):
			t.Errorf("%s: %v, want a *fielderr.Error for %s", tc.name, err, tc.field)
		}
	}
}
