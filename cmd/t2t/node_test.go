package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/internal/testutil"
)

// Cluster tests of t2t node: real processes of the t2t binary and a real
// redis-server on 127.0.0.1. Waits are polls with deadlines on what the
// processes print, write or serve; nothing sleeps.

var nodeSeed = flag.Uint64("nodeseed", 0, "run seed of the node cluster test (0: a fixed default)")

// nodeTestSeed is -nodeseed, or def when it is unset, and logs it with how
// to replay the test.
func nodeTestSeed(t *testing.T, def uint64) uint64 {
	t.Helper()
	seed := cmp.Or(*nodeSeed, def)
	t.Logf("seed %d (replay with -nodeseed %d)", seed, seed)
	return seed
}

var (
	nodeBinOnce sync.Once
	nodeBinDir  string
	nodeBinPath string
	nodeBinErr  error
)

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if nodeBinDir != "" {
		os.RemoveAll(nodeBinDir)
	}
	os.Exit(code)
}

// nodeBinary builds the t2t binary once per test process (with -race when
// the tests run with it, so the build reuses the test's compiled packages).
func nodeBinary(t *testing.T) string {
	t.Helper()
	nodeBinOnce.Do(func() {
		nodeBinDir, nodeBinErr = os.MkdirTemp("", "t2t-node-test-")
		if nodeBinErr != nil {
			return
		}
		nodeBinPath = filepath.Join(nodeBinDir, "t2t")
		args := []string{"build", "-o", nodeBinPath}
		if nodeRace {
			args = append(args, "-race")
		}
		out, err := exec.Command("go", append(args, ".")...).CombinedOutput()
		if err != nil {
			nodeBinErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if nodeBinErr != nil {
		t.Fatal(nodeBinErr)
	}
	return nodeBinPath
}

// nodeFreePort returns a port nothing listens on right now (TCP and UDP).
func nodeFreePort(t *testing.T) int {
	t.Helper()
	for range 20 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		u, err := net.ListenPacket("udp", fmt.Sprintf("127.0.0.1:%d", port))
		l.Close()
		if err == nil {
			u.Close()
			return port
		}
	}
	t.Fatal("no free port")
	return 0
}

// nodeRedis starts a redis-server on a free port and returns its URL. It
// skips the test when redis-server is not installed, unless
// T2T_REQUIRE_REDIS=1.
func nodeRedis(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("T2T_REQUIRE_REDIS") == "1" {
			t.Fatalf("redis-server not found on PATH and T2T_REQUIRE_REDIS=1: %v", err)
		}
		t.Skip("redis-server not found on PATH (apt-get install -y redis-server); set T2T_REQUIRE_REDIS=1 to fail instead")
	}
	dir := t.TempDir()
	for range 5 {
		port := nodeFreePort(t)
		cmd := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		url := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-exited:
				t.Logf("redis-server on %d exited: %s", port, out.String())
			default:
			}
			if isClosed(exited) {
				break
			}
			if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", port), time.Second); err == nil {
				c.Write([]byte("PING\r\n"))
				c.SetReadDeadline(time.Now().Add(time.Second))
				b := make([]byte, 7)
				n, _ := io.ReadFull(c, b)
				c.Close()
				if string(b[:n]) == "+PONG\r\n" {
					t.Cleanup(func() { cmd.Process.Kill(); <-exited })
					return url
				}
			}
			waitABit(exited, 20*time.Millisecond)
		}
		cmd.Process.Kill()
		<-exited
	}
	t.Fatal("redis-server did not start")
	return ""
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitABit blocks until ch closes or d passes: the poll interval of a
// deadline poll at a process or network edge.
func waitABit(ch <-chan struct{}, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ch:
	case <-t.C:
	}
}

// nodeProc is one t2t process.
type nodeProc struct {
	t      *testing.T
	name   string
	cmd    *exec.Cmd
	mu     sync.Mutex
	lines  []string
	stderr testutil.SyncBuffer
	change chan struct{} // poked on each stdout line and on exit
	exited chan struct{}
	err    error
}

func startNode(t *testing.T, name string, args ...string) *nodeProc {
	t.Helper()
	p := &nodeProc{t: t, name: name, change: make(chan struct{}, 1), exited: make(chan struct{})}
	p.cmd = exec.Command(nodeBinary(t), args...)
	p.cmd.Stderr = &p.stderr
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("started %s (pid %d): t2t %s", name, p.cmd.Process.Pid, strings.Join(args, " "))
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.lines = append(p.lines, sc.Text())
			p.mu.Unlock()
			p.poke()
		}
		p.err = p.cmd.Wait()
		close(p.exited)
		p.poke()
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.exited
		if t.Failed() {
			p.mu.Lock()
			t.Logf("%s stdout:\n%s\n%s stderr (tail):\n%s", name, strings.Join(p.lines, "\n"), name, nodeTail(p.stderr.String(), 3000))
			p.mu.Unlock()
		}
	})
	return p
}

func nodeTail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}

func (p *nodeProc) poke() {
	select {
	case p.change <- struct{}{}:
	default:
	}
}

// line waits for a stdout line starting with prefix and returns it.
func (p *nodeProc) line(prefix string, timeout time.Duration) string {
	p.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		p.mu.Lock()
		for _, l := range p.lines {
			if strings.HasPrefix(l, prefix) {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		if isClosed(p.exited) {
			p.t.Fatalf("%s exited (%v) before printing %q", p.name, p.err, prefix)
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s printed no %q within %v", p.name, prefix, timeout)
		}
		waitABit(p.change, time.Until(deadline))
	}
}

// wait waits for the process to exit and returns its exit code.
func (p *nodeProc) wait(timeout time.Duration) int {
	p.t.Helper()
	select {
	case <-p.exited:
	case <-time.After(timeout):
		p.t.Fatalf("%s did not exit within %v", p.name, timeout)
	}
	var ee *exec.ExitError
	if errors.As(p.err, &ee) {
		return ee.ExitCode()
	}
	if p.err != nil {
		p.t.Fatalf("%s: %v", p.name, p.err)
	}
	return 0
}

// field returns key's value in a "k=v k=v" line.
func nodeField(t *testing.T, line, key string) string {
	t.Helper()
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	t.Fatalf("no %s= in %q", key, line)
	return ""
}

// readUnitLog reads a --unit-log file; a torn last line (a killed writer)
// is ignored.
func readUnitLog(t *testing.T, path string) []daemon.UnitLine {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []daemon.UnitLine
	for _, l := range strings.Split(string(b), "\n") {
		var u daemon.UnitLine
		if l == "" || json.Unmarshal([]byte(l), &u) != nil {
			continue
		}
		out = append(out, u)
	}
	return out
}

// pollUnits waits until the unit log at path has at least n lines.
func pollUnits(t *testing.T, path string, n int, timeout time.Duration, what string) []daemon.UnitLine {
	t.Helper()
	deadline := time.Now().Add(timeout)
	never := make(chan struct{})
	for {
		if us := readUnitLog(t, path); len(us) >= n {
			return us
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: fewer than %d units in %s after %v", what, n, path, timeout)
		}
		waitABit(never, 20*time.Millisecond)
	}
}

func httpStatus(t *testing.T, url string) (int, string) {
	t.Helper()
	c := &http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// pollReady waits until url answers want.
func pollReady(t *testing.T, url string, want int, timeout time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	never := make(chan struct{})
	for {
		code, body := httpStatus(t, url)
		if code == want {
			return body
		}
		if time.Now().After(deadline) {
			t.Fatalf("GET %s: %d %s, want %d within %v", url, code, body, want, timeout)
		}
		waitABit(never, 20*time.Millisecond)
	}
}

// startRolloutNode starts rollout node name (capacity 2) joining gossip
// seed join, with its unit log and summary in dir, and returns it, its unit
// log's path and "http|id" (its HTTP address and node id).
func startRolloutNode(t *testing.T, dir, name, join string, common []string) (*nodeProc, string, string) {
	t.Helper()
	log := filepath.Join(dir, name+".jsonl")
	p := startNode(t, name, append([]string{"node", "--roles", "rollout", "--keep", "--join", join, "--capacity", "2",
		"--unit-log", log, "--summary", filepath.Join(dir, name+".json")}, common...)...)
	h := nodeField(t, p.line("t2t node: http=", 30*time.Second), "http")
	id := nodeField(t, p.line("t2t node: joined ", 30*time.Second), "id")
	return p, log, h + "|" + id
}

// TestNodeClusterKillAndJoin runs a scripted-policy run of three stages on
// three t2t node processes (a coordinator+learner+engineer node and two
// rollout nodes), kills one rollout node with SIGKILL while it holds
// units, starts a fresh rollout node mid-run, and checks that the run
// completes with every unit counted exactly once, that the killed node's
// units were re-issued, that the fresh node got work within 5s of joining,
// and that the Redis aggregates equal the sum of the units' results.
func TestNodeClusterKillAndJoin(t *testing.T) {
	seed := nodeTestSeed(t, 11)
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	const stages, perUnit = 3, 16
	instances := 3840
	if nodeRace {
		instances = 1280 // the race-built children are several times slower
	}
	unitsPerStage := (instances + perUnit - 1) / perUnit
	runID := fmt.Sprintf("nodetest-%d", seed)
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0",
		"--http", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer",
		"--policy", "scripted", "--stages", strconv.Itoa(stages), "--instances", strconv.Itoa(instances),
		"--instances-per-unit", strconv.Itoa(perUnit), "--val-per-size", "2", "--eval-per-size", "1",
		"--run-id", runID, "--seed", strconv.FormatUint(seed, 10),
		"--summary", filepath.Join(dir, "a.json")}, common...)...)
	aHTTP := nodeField(t, a.line("t2t node: http=", 30*time.Second), "http")
	if code, _ := httpStatus(t, "http://"+aHTTP+"/healthz"); code != 200 {
		t.Fatalf("A /healthz: %d", code)
	}
	joined := a.line("t2t node: joined ", 60*time.Second)
	gossipA := nodeField(t, joined, "gossip")
	pollReady(t, "http://"+aHTTP+"/readyz", 200, 10*time.Second)

	rollout := func(name string) (*nodeProc, string, string) {
		return startRolloutNode(t, dir, name, gossipA, common)
	}
	b, bLog, bInfo := rollout("B")
	c, cLog, cInfo := rollout("C")
	bHTTP, _, _ := strings.Cut(bInfo, "|")
	_, cID, _ := strings.Cut(cInfo, "|")
	b.line("t2t node: serving coordinator ", 30*time.Second)
	c.line("t2t node: serving coordinator ", 30*time.Second)
	if body := pollReady(t, "http://"+bHTTP+"/readyz", 200, 10*time.Second); !strings.Contains(body, "serving") {
		t.Fatalf("B /readyz: %s", body)
	}
	// A's live page data lists the cluster's nodes (A, B, C).
	deadline := time.Now().Add(15 * time.Second)
	for {
		var st struct {
			Nodes []struct{ ID string } `json:"nodes"`
		}
		code, body := httpStatus(t, "http://"+aHTTP+"/api/status")
		if code == 200 && json.Unmarshal([]byte(body), &st) == nil && len(st.Nodes) >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("A /api/status never listed 3 nodes: %d %s", code, body)
		}
		time.Sleep(100 * time.Millisecond) // polling a real HTTP endpoint with a deadline
	}

	// Mid-stage: C has finished a unit and stage 0 is not done in Redis.
	st, err := store.Open(context.Background(), store.Options{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	cUnits := pollUnits(t, cLog, 1, 60*time.Second, "C")
	applied, err := st.UnitsApplied(ctx, runID, cUnits[0].Stage, "train")
	if err != nil {
		t.Fatal(err)
	}
	if applied >= int64(unitsPerStage) {
		t.Fatalf("stage %d was done (%d units applied) before C was killed; raise --instances", cUnits[0].Stage, applied)
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed C (%s) in stage %d with %d/%d units applied", cID, cUnits[0].Stage, applied, unitsPerStage)

	// A fresh node D gets work within 5s of joining.
	d, dLog, _ := rollout("D")
	a.line("t2t node: rollout node left id="+cID, 30*time.Second)
	d.line("t2t node: serving coordinator ", 30*time.Second)
	var dStage int
	var dApplied int64 = -1
	for s := range stages {
		n, err := st.UnitsApplied(ctx, runID, s, "train")
		if err != nil {
			t.Fatal(err)
		}
		if n < int64(unitsPerStage) {
			dStage, dApplied = s, n
			break
		}
	}
	t.Logf("D serving while stage %d had %d/%d units applied", dStage, dApplied, unitsPerStage)
	dUnits := pollUnits(t, dLog, 1, 5*time.Second, "D's first unit")
	t.Logf("D's first unit: %s (stage %d)", dUnits[0].Unit, dUnits[0].Stage)

	if code := a.wait(90 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	// After the run the rollout nodes wait for the next coordinator.
	pollReady(t, "http://"+bHTTP+"/readyz", 503, 15*time.Second)
	for _, p := range []*nodeProc{b, d} {
		if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []*nodeProc{b, d} {
		if code := p.wait(30 * time.Second); code != 0 {
			t.Fatalf("%s exited with %d after SIGTERM", p.name, code)
		}
		p.line("t2t node: stopped: ", time.Second)
	}

	var sum daemon.Summary
	raw, err := os.ReadFile(filepath.Join(dir, "a.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	if sum.Error != "" || sum.Run == nil {
		t.Fatalf("A summary: error %q", sum.Error)
	}
	rep := sum.Run.Actors
	if sum.UnitsPerStage != unitsPerStage || len(rep.Stages) != stages {
		t.Fatalf("A summary: %d units per stage, %d stages; want %d, %d", sum.UnitsPerStage, len(rep.Stages), unitsPerStage, stages)
	}
	reissued, evalUnits := 0, 0
	for _, sd := range rep.Stages {
		evalUnits += sd.EvalUnits
		if sd.Units != unitsPerStage || sd.Completed != unitsPerStage {
			t.Errorf("stage %d: %d units, %d completed; want %d", sd.Stage, sd.Units, sd.Completed, unitsPerStage)
		}
		reissued += sd.Reissued
	}
	t.Logf("coordinator: %+v; learner: %+v", rep.Coordinator, rep.Learner)
	if reissued < 1 {
		t.Errorf("no unit re-issued after C was killed: stages %+v", rep.Stages)
	}
	if evalUnits < stages || rep.Coordinator.Completed != uint64(stages*unitsPerStage+evalUnits) {
		t.Errorf("coordinator completed %d units, want %d training and %d (>= %d) evaluation units", rep.Coordinator.Completed, stages*unitsPerStage, evalUnits, stages)
	}

	// Every unit applied exactly once in Redis, and the aggregates are the
	// sum of the units' results as the nodes logged them.
	logs := map[string]daemon.UnitLine{}
	for _, path := range []string{bLog, cLog, dLog} {
		for _, u := range readUnitLog(t, path) {
			if prev, dup := logs[u.Unit]; dup {
				if !reflect.DeepEqual(prev.Buckets, u.Buckets) {
					t.Errorf("unit %s ran twice with different results: %+v vs %+v", u.Unit, prev.Buckets, u.Buckets)
				}
				continue
			}
			logs[u.Unit] = u
		}
	}
	for s := range stages {
		n, err := st.UnitsApplied(ctx, runID, s, "train")
		if err != nil {
			t.Fatal(err)
		}
		if n != int64(unitsPerStage) {
			t.Errorf("stage %d: %d units applied in Redis, want %d", s, n, unitsPerStage)
		}
		want := map[store.Key]store.Counts{}
		ids := 0
		for _, u := range logs {
			if u.Stage != s || u.Run != runID || u.Split != "train" {
				continue
			}
			ids++
			for _, bk := range u.Buckets {
				k := store.Key{Size: bk.Size, Agents: bk.Agents}
				c := want[k]
				c.Episodes += bk.Episodes
				c.Valid += bk.Valid
				c.Optimal += bk.Optimal
				c.RewardSum += bk.RewardSum
				for name, v := range bk.Categories {
					if c.Categories == nil {
						c.Categories = map[string]int64{}
					}
					c.Categories[name] += v
				}
				want[k] = c
			}
		}
		if ids != unitsPerStage {
			t.Errorf("stage %d: the nodes logged %d distinct units, want %d", s, ids, unitsPerStage)
		}
		got, err := st.Aggregates(ctx, runID, s, "train")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("stage %d: %d aggregate buckets, units sum to %d", s, len(got), len(want))
		}
		for k, w := range want {
			g := got[k]
			if g.Episodes != w.Episodes || g.Valid != w.Valid || g.Optimal != w.Optimal ||
				!reflect.DeepEqual(g.Categories, w.Categories) || math.Abs(g.RewardSum-w.RewardSum) > 1e-6 {
				t.Errorf("stage %d bucket %v: Redis %+v, units sum to %+v", s, k, g, w)
			}
		}
	}
	var bSum daemon.Summary
	if raw, err := os.ReadFile(filepath.Join(dir, "B.json")); err != nil {
		t.Fatal(err)
	} else if err := json.Unmarshal(raw, &bSum); err != nil || bSum.Rollout == nil || bSum.Rollout.Units == 0 {
		t.Fatalf("B summary: %v %s", err, raw)
	}
	t.Logf("B: %+v", *bSum.Rollout)
}

// TestNodeBadInput: a bad role set, a missing Redis or gossip other hosts
// can reach without a key (and without --insecure) is refused with exit
// code 2 before anything starts; an unreachable --join fails with a clear
// error once --join-timeout has passed.
func TestNodeBadInput(t *testing.T) {
	t.Setenv(cluster.GossipKeyEnv, "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"node"}, "--roles: required (coordinator,learner,engineer and/or rollout)"},
		{[]string{"node", "--roles", "rollout,pilot"}, `unknown role "pilot"`},
		{[]string{"node", "--roles", "coordinator"}, "coordinator, learner and engineer run together"},
		{[]string{"node", "--roles", "rollout"}, "needs --redis"},
		{[]string{"node", "--roles", "coordinator,learner,engineer"}, "needs --redis"},
		{[]string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:1", "--join", "nohost"}, "Seeds[0]"},
		{[]string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:1", "--capacity", "0"}, "--capacity"},
		{[]string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:1", "--gossip", "0.0.0.0:0"}, "--gossip 0.0.0.0:0: other hosts can reach"},
		// --insecure lets the exposed gossip address pass: the next check (--listen) speaks.
		{[]string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:1", "--gossip", "0.0.0.0:0", "--insecure", "--listen", "nohost"}, "--listen"},
		// The actor port follows the gossip rule: off loopback it needs TLS or --insecure-listen.
		{[]string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:1", "--listen", "0.0.0.0:0"}, "--listen 0.0.0.0:0: other hosts can reach"},
		{[]string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:1", "--listen", "10.1.2.3:0"}, "--insecure-listen"},
	} {
		code, _, stderr := t2t(t, tc.args...)
		if code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("t2t %s: exit %d, stderr %q; want 2 and %q", strings.Join(tc.args, " "), code, stderr, tc.want)
		}
	}

	// An unreachable seed: a reachable Redis (embedded, served by this test
	// process) and a gossip port nothing listens on.
	st, err := store.Open(context.Background(), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	seed := fmt.Sprintf("127.0.0.1:%d", nodeFreePort(t))
	p := startNode(t, "bad-join", "node", "--roles", "rollout", "--redis", st.URL(), "--join", seed,
		"--join-timeout", "1s", "--gossip", "127.0.0.1:0", "--gossip-profile", "local")
	if code := p.wait(30 * time.Second); code != 1 {
		t.Fatalf("exit %d, want 1", code)
	}
	if msg := p.stderr.String(); !strings.Contains(msg, "join cluster via "+seed) {
		t.Fatalf("stderr %q does not name the seed", msg)
	}
}

// TestNodeGridnetPolicyTravels runs a small gridnet run on a coordinator
// node and one rollout node: the rollout node builds the policy from the
// run's spec, loads each newer version's weights from Redis, and plays
// stage 1 with weights the learner trained.
func TestNodeGridnetPolicyTravels(t *testing.T) {
	seed := nodeTestSeed(t, 12)
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	runID := fmt.Sprintf("gridtest-%d", seed)
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer",
		"--policy", "gridnet", "--hidden", "16", "--stages", "2", "--instances", "48", "--instances-per-unit", "8",
		"--group", "4", "--learner-batch", "8", "--val-per-size", "1", "--eval-per-size", "1",
		"--run-id", runID, "--seed", strconv.FormatUint(seed, 10), "--summary", filepath.Join(dir, "a.json")}, common...)...)
	gossipA := nodeField(t, a.line("t2t node: joined ", 120*time.Second), "gossip")
	bLog := filepath.Join(dir, "b.jsonl")
	b := startNode(t, "B", append([]string{"node", "--roles", "rollout", "--keep", "--join", gossipA, "--capacity", "2",
		"--unit-log", bLog, "--summary", filepath.Join(dir, "b.json")}, common...)...)
	if code := a.wait(120 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil { // --keep: it must still run
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("B exited with %d", code)
	}
	var as, bs daemon.Summary
	for _, f := range []struct {
		path string
		v    *daemon.Summary
	}{{"a.json", &as}, {"b.json", &bs}} {
		raw, err := os.ReadFile(filepath.Join(dir, f.path))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(raw, f.v); err != nil {
			t.Fatal(err)
		}
	}
	if as.Run == nil || as.Error != "" || len(as.Run.Actors.Stages) != 2 || as.Run.Actors.Learner.Updates == 0 {
		t.Fatalf("A summary: %+v", as)
	}
	evalUnits := 0
	for _, sd := range as.Run.Actors.Stages {
		evalUnits += sd.EvalUnits
	}
	if bs.Rollout == nil || bs.Rollout.PolicyLoads < 2 || bs.Rollout.Units != int64(12+evalUnits) {
		t.Fatalf("B summary: %+v, want 12 training and %d evaluation units", bs.Rollout, evalUnits)
	}
	var stage1 []int64
	for _, u := range readUnitLog(t, bLog) {
		if u.Split != store.SplitTrain {
			// An evaluation unit plays the weights the stage's training made.
			if want := as.Run.Stages[u.Stage].Policy; u.PolicyVersion != want {
				t.Errorf("evaluation unit %s played policy version %d, want the stage's %d", u.Unit, u.PolicyVersion, want)
			}
			continue
		}
		if u.Stage == 1 {
			stage1 = append(stage1, u.PolicyVersion)
		}
	}
	if len(stage1) != 6 || slices.Max(stage1) < 1 {
		t.Fatalf("stage 1 units played policy versions %v, want 6 units and trained weights", stage1)
	}
	t.Logf("learner %+v; rollout node %+v; stage-1 versions %v", as.Run.Actors.Learner, *bs.Rollout, stage1)
}

// TestNodeOneNodeWithoutRedis: a node with every role runs a whole run on
// the embedded Redis (a one-node cluster), logging the units its own
// rollouts ran.
func TestNodeOneNodeWithoutRedis(t *testing.T) {
	dir := t.TempDir()
	code, out, stderr := t2t(t, "node", "--roles", "coordinator,learner,engineer,rollout", "--gossip", "127.0.0.1:0",
		"--gossip-profile", "local", "--policy", "scripted", "--stages", "2", "--instances", "48", "--instances-per-unit", "8",
		"--val-per-size", "1", "--eval-per-size", "1", "--unit-log", filepath.Join(dir, "u.jsonl"), "--summary", filepath.Join(dir, "s.json"))
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, stderr, out)
	}
	if !strings.Contains(out, "actors= ") {
		t.Fatalf("a node without a shared Redis advertised an actor address:\n%s", out)
	}
	train := 0
	us := readUnitLog(t, filepath.Join(dir, "u.jsonl"))
	for _, u := range us {
		if u.Split == store.SplitTrain {
			train++
		}
	}
	if train != 12 || len(us) < 12+2*2 { // and the validation and benchmark units of 2 stages
		t.Fatalf("%d units logged, %d of them training units; want 12 and evaluation units", len(us), train)
	}
	var sum daemon.Summary
	raw, err := os.ReadFile(filepath.Join(dir, "s.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &sum); err != nil || sum.Run == nil || len(sum.Run.Stages) != 2 || sum.UnitsPerStage != 6 {
		t.Fatalf("summary %v %s", err, raw)
	}
}

// TestNodeScalingPaced runs a small gridnet run on a coordinator node and
// 1, 2 and 3 rollout nodes (real processes, the default flow control:
// dispatch paced by the learner, --max-lag 2, K 4). With more rollout
// slots than the learner can keep up with, the learner must still discard
// at most 5% of the groups, and make as many updates as the groups make
// batches (within 10%), at every N: adding rollout nodes feeds the learner,
// not the bin. The full-size measurement (the default stage shape) is run
// by hand: README, "Scaling out".
func TestNodeScalingPaced(t *testing.T) {
	seed := nodeTestSeed(t, 13)
	redisURL := nodeRedis(t)
	const stages, instances, perUnit, batch = 2, 96, 8, 8
	for _, n := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("rollout-nodes-%d", n), func(t *testing.T) {
			dir := t.TempDir()
			runID := fmt.Sprintf("scale-%d-%d", seed, n)
			common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0", "--redis", redisURL}
			a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer",
				"--policy", "gridnet", "--hidden", "16", "--stages", strconv.Itoa(stages), "--instances", strconv.Itoa(instances),
				"--instances-per-unit", strconv.Itoa(perUnit), "--group", "4", "--learner-batch", strconv.Itoa(batch),
				"--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed",
				"--run-id", runID, "--seed", strconv.FormatUint(seed, 10), "--summary", filepath.Join(dir, "a.json")}, common...)...)
			gossipA := nodeField(t, a.line("t2t node: joined ", 120*time.Second), "gossip")
			var rollouts []*nodeProc
			for i := range n {
				rollouts = append(rollouts, startNode(t, fmt.Sprintf("R%d", i), append([]string{"node", "--roles", "rollout",
					"--keep", "--join", gossipA, "--capacity", "2", "--summary", filepath.Join(dir, fmt.Sprintf("r%d.json", i))}, common...)...))
			}
			if code := a.wait(180 * time.Second); code != 0 {
				t.Fatalf("A exited with %d", code)
			}
			last := a.line("t2t node: run "+runID+": ", time.Second)
			for _, p := range rollouts {
				if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
					t.Fatal(err)
				}
			}
			for _, p := range rollouts {
				if code := p.wait(30 * time.Second); code != 0 {
					t.Fatalf("%s exited with %d", p.name, code)
				}
			}
			var sum daemon.Summary
			raw, err := os.ReadFile(filepath.Join(dir, "a.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(raw, &sum); err != nil {
				t.Fatal(err)
			}
			if sum.Error != "" || sum.Run == nil || sum.Flow == nil || len(sum.Run.Stages) != stages {
				t.Fatalf("A summary: %s", raw)
			}
			f, l := *sum.Flow, sum.Run.Actors.Learner
			t.Logf("N=%d: %s; learner %+v; coordinator %+v", n, f, l, sum.Run.Actors.Coordinator)
			if f.Arrived < stages*instances {
				t.Errorf("%d groups reached the learner, want at least %d", f.Arrived, stages*instances)
			}
			if share := f.DiscardShare(); share > 0.05 {
				t.Errorf("discarded %.1f%% of the groups (%s), want at most 5%%", 100*share, f)
			}
			if f.Warn() != strings.Contains(last, "WARNING") {
				t.Errorf("last line %q and a discard share of %.1f%%", last, 100*f.DiscardShare())
			}
			ideal := float64(stages * instances / batch)
			if got := float64(l.Updates); math.Abs(got-ideal) > 0.1*ideal {
				t.Errorf("%v updates, want %v ± 10%% (every group in a batch)", got, ideal)
			}
			for _, st := range sum.Run.Stages {
				if st.Flow.Arrived == 0 {
					t.Errorf("stage %d: no flow recorded: %+v", st.Stage, st.Flow)
				}
			}
		})
	}
}
