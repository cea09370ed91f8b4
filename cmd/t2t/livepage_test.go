package main

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"reflect"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/train"
)

// livePageChromium returns the headless browser, skipping the test when
// none is installed (unless T2T_REQUIRE_CHROMIUM=1).
func livePageChromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("T2T_REQUIRE_CHROMIUM") == "1" {
		t.Fatal("chromium not found and T2T_REQUIRE_CHROMIUM=1 (apt-get install -y chromium)")
	}
	t.Skip("chromium not found: skipping the live page check (apt-get install -y chromium)")
	return ""
}

// redisCommand sends one command to the Redis at redisURL and fails the
// test unless it answers +OK.
func redisCommand(t *testing.T, redisURL string, args ...string) {
	t.Helper()
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.DialTimeout("tcp", u.Host, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprintf(c, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c, "$%d\r\n%s\r\n", len(a), a)
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("redis %v: %q %v", args, line, err)
	}
}

// livePageState is the part of /api/status the test reads.
type livePageState struct {
	State  *store.RunState `json:"state"`
	Stages []livePageStage `json:"stages"`
	Nodes  []struct {
		ID string `json:"id"`
	} `json:"nodes"`
}

type livePageStage struct {
	Stage   int   `json:"stage"`
	Running bool  `json:"running"`
	Units   int64 `json:"units"`
	Config  struct {
		Sizes []struct {
			Size int `json:"size"`
		} `json:"sizes"`
	} `json:"config"`
}

// livePageStatus reads /api/status (false: no answer, or no state yet).
func livePageStatus(base string) (livePageState, bool) {
	code, body, _ := metricsGet(base + "/api/status")
	var s livePageState
	if code != 200 || json.Unmarshal([]byte(body), &s) != nil || s.State == nil {
		return s, false
	}
	return s, true
}

var livePageSeed = flag.Uint64("livepageseed", 0, "run seed of the live page test (0: a fixed default)")

// livePageHold is how long the test holds the run's Redis writes (CLIENT
// PAUSE … WRITE) while it reads the page: under the store's 5 s
// operation timeout, so no write of the run times out and is retried.
const livePageHold = 4 * time.Second

// livePageMidStage reports whether s shows a stage after the first in
// training with at least one unit applied.
func livePageMidStage(s livePageState) bool {
	if s.State == nil || s.State.Stage < 1 || s.State.Phase != train.PhaseTraining {
		return false
	}
	for _, sg := range s.Stages {
		if sg.Running && sg.Stage == s.State.Stage && sg.Units >= 1 {
			return true
		}
	}
	return false
}

// TestLivePageRealRun runs `t2t train` (a process, real redis-server) with
// /ui open in headless Chromium (driven over the DevTools pipe). It polls
// /api/status until a stage after the first is training with a unit
// applied, then holds the run's Redis writes (CLIENT PAUSE WRITE: reads go
// on, the run's state and aggregates stand still) and has the open page
// refresh: the running row says running and the curve has no point for
// it, the x axis names the finished stages, the heat maps have one cell
// per (size, stage), the failure table's counts equal the Redis
// aggregates (the running stage's too) and the Nodes table lists the
// process. With scripts off the page shows the server's snapshot, the
// running stage marked. After the run, t2t status --http serves the page
// with every stage done and the process as the run recorded it in Redis.
func TestLivePageRealRun(t *testing.T) {
	bin := livePageChromium(t)
	seed := cmp.Or(*livePageSeed, 27)
	t.Logf("seed %d (-livepageseed to replay)", seed)
	redisURL := nodeRedis(t)
	browser := cdpStart(t, bin, 1200, 900)
	p := startNode(t, "train", "train", "--redis", redisURL, "--http", "127.0.0.1:0", "--policy", "scripted", "--mistake-rate", "0.3",
		"--seed", fmt.Sprint(seed), "--stages", "3", "--instances", "2048", "--instances-per-unit", "8", "--group", "4",
		"--val-per-size", "2", "--eval-per-size", "1", "--run-id", "live")
	base := "http://" + nodeField(t, p.line("t2t train: http=", 30*time.Second), "http")
	var liveID string // the process's node id on its live page
	st, err := store.Open(context.Background(), store.Options{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	page := browser.open(base+"/ui", true)
	for held := 0; ; {
		if isClosed(p.exited) || held == 5 {
			t.Fatalf("no stage after the first was caught training (held the run %d times)", held)
		}
		if s, ok := livePageStatus(base); !ok || !livePageMidStage(s) {
			time.Sleep(10 * time.Millisecond) // poll interval, not a timing assertion
			continue
		}
		held++
		redisCommand(t, redisURL, "CLIENT", "PAUSE", fmt.Sprint(livePageHold.Milliseconds()), "WRITE")
		t0 := time.Now()
		s, ok := livePageStatus(base)
		if !ok || !livePageMidStage(s) {
			redisCommand(t, redisURL, "CLIENT", "UNPAUSE")
			continue // the stage ended between the poll and the hold
		}
		want := livePageFailures(t, st, s)
		var dom string
		cdpDecode(t, browser.eval(page, "poll().then(function(){return document.documentElement.outerHTML})"), &dom)
		nojs := browser.html(browser.open(base+"/ui", false))
		after := livePageFailures(t, st, s)
		redisCommand(t, redisURL, "CLIENT", "UNPAUSE")
		if d := time.Since(t0); d >= livePageHold || !reflect.DeepEqual(want, after) {
			t.Logf("the hold ran out (%s) before the page was read: again", d.Round(time.Millisecond))
			continue
		}
		t.Logf("read the page with stage %d training (%d units applied)", s.State.Stage, livePageRunning(s).Units)
		livePageCheck(t, dom, s, want, p.cmd.Process.Pid)
		if len(s.Nodes) == 1 {
			liveID = s.Nodes[0].ID
		}
		if !strings.Contains(nojs, `<pre id="snap">run live`) || !strings.Contains(nojs, fmt.Sprintf("%d (running)", s.State.Stage)) ||
			!strings.Contains(nojs, fmt.Sprintf("running: stage %d (training): ", s.State.Stage)) || !strings.Contains(nojs, "config over stages") ||
			!strings.Contains(nojs, fmt.Sprintf(", pid %d) coordinator,learner,rollout,engineer at this process", p.cmd.Process.Pid)) {
			t.Errorf("without scripts the page shows no snapshot of the running stage:\n%.3000s", nojs)
		}
		if m := livePageNodeText.FindStringSubmatch(nojs); m == nil || m[1] == "0" {
			t.Errorf("without scripts the page's snapshot shows no load of the process (units done > 0, in flight, mean unit time):\n%.5000s", nojs)
		}
		break
	}
	if code := p.wait(120 * time.Second); code != 0 {
		t.Fatalf("t2t train exited with %d", code)
	}

	// The finished run's page, served by t2t status --http from Redis:
	// every stage done and plotted, the failure table still Redis's.
	sp := startNode(t, "status", "status", "--redis", redisURL, "--run", "live", "--http", "127.0.0.1:0")
	base = "http://" + nodeField(t, sp.line("t2t status: run=live http=", 30*time.Second), "http")
	s, ok := livePageStatus(base)
	if !ok || s.State.Phase != train.PhaseDone || len(s.Stages) != 3 || livePageRunning(s).Stage != 0 || livePageRunning(s).Running {
		t.Fatalf("t2t status --http after the run: %+v", s)
	}
	var dom string
	cdpDecode(t, browser.eval(browser.open(base+"/ui", true), "poll().then(function(){return document.documentElement.outerHTML})"), &dom)
	if strings.Contains(dom, `data-running="1"`) || !strings.Contains(dom, "phase done") {
		t.Errorf("the finished run's page shows a running stage, or not the phase done:\n%.3000s", dom)
	}
	livePageCheck(t, dom, s, livePageFailures(t, st, s), p.cmd.Process.Pid) // the nodes as the run recorded them
	if len(s.Nodes) != 1 || s.Nodes[0].ID != liveID || liveID == "" {
		t.Errorf("the run recorded its node as %+v, its live page named it %q: want one node, the same id", s.Nodes, liveID)
	}
	sp.cmd.Process.Signal(os.Interrupt)
	if code := sp.wait(30 * time.Second); code != 0 {
		t.Fatalf("t2t status --http exited with %d after an interrupt", code)
	}
}

// livePageRunning is s's running stage.
func livePageRunning(s livePageState) livePageStage {
	for _, sg := range s.Stages {
		if sg.Running {
			return sg
		}
	}
	return livePageStage{}
}

// livePageFailures reads, for each stage of s, the Redis
// aggregates as the failure table's rows: "stage split agents" → the
// answers, invalid answers and counts per category.
func livePageFailures(t *testing.T, st *store.Store, s livePageState) map[string]store.Counts {
	t.Helper()
	out := map[string]store.Counts{}
	for _, sg := range s.Stages {
		for _, split := range []string{store.SplitTrain, store.SplitVal} {
			agg, err := st.Aggregates(context.Background(), "live", sg.Stage, split)
			if err != nil {
				t.Fatal(err)
			}
			for a, c := range store.SumSplit(agg).ByAgents {
				c.RewardSum = 0 // a float sum in map order: not shown, and not the same twice
				out[fmt.Sprintf("%d %s %d", sg.Stage, split, a)] = c
			}
		}
	}
	return out
}

var (
	livePageFailRow = regexp.MustCompile(`<tr data-stage="(\d+)" data-split="(\w+)" data-agents="(\d+)"><td>[^<]*</td><td>\w+</td><td>\d+</td><td>(\d+)</td><td>(\d+) [^<]*</td>((?:<td data-cat="\w+" data-n="\d+">[^<]*</td>)+)</tr>`)
	livePageFailCat = regexp.MustCompile(`data-cat="(\w+)" data-n="(\d+)"`)
	livePageCell    = regexp.MustCompile(`class="cell" data-size="(\d+)" data-stage="(\d+)"`)
	// livePageNode is the process's row of the Nodes table: pid, units
	// done, units in flight, mean unit time.
	// The serving process is "this process", the one the run recorded in
	// Redis (t2t status --http) "the run's process".
	livePageNode = regexp.MustCompile(`<td>(\d+)</td><td>coordinator,learner,rollout,engineer</td><td>(?:this process|the run's process)</td><td>-</td>` +
		`<td data-col="units_done">(\d+)</td><td data-col="in_flight">(\d+)</td><td data-col="mean_unit">(\d+(?:\.\d)? m?s)</td>`)
	livePageNodeText = regexp.MustCompile(`coordinator,learner,rollout,engineer at this process: (\d+) units done, (\d+) in flight, mean unit [0-9.]+[mµn]?s, 0 leases lost, last heartbeat `)
)

// livePageCheck checks the DOM of the page rendered from s (pid: the
// process the Nodes table lists; 0: none).
func livePageCheck(t *testing.T, dom string, s livePageState, want map[string]store.Counts, pid int) {
	t.Helper()
	cells := map[string]int{}
	for _, m := range livePageCell.FindAllStringSubmatch(dom, -1) {
		cells[m[1]+"/"+m[2]]++
	}
	nCells := 0
	for _, sg := range s.Stages {
		if sg.Running {
			if !strings.Contains(dom, fmt.Sprintf(`<tr class="run" data-running="1"><td>%d</td><td>running</td>`, sg.Stage)) {
				t.Errorf("stage %d runs but its row does not say so:\n%s", sg.Stage, dom)
			}
			if strings.Contains(dom, fmt.Sprintf(`class="pt" data-stage="%d"`, sg.Stage)) || strings.Contains(dom, fmt.Sprintf(`class="xlabel">stage %d<`, sg.Stage)) {
				t.Errorf("the curve has a point or an x label for running stage %d", sg.Stage)
			}
		} else if !strings.Contains(dom, fmt.Sprintf(`class="xlabel">stage %d<`, sg.Stage)) || !strings.Contains(dom, fmt.Sprintf(`class="pt" data-stage="%d"`, sg.Stage)) {
			t.Errorf("finished stage %d has no x label or no point on the curve", sg.Stage)
		}
		for _, z := range sg.Config.Sizes {
			nCells++
			if c := cells[fmt.Sprintf("%d/%d", z.Size, sg.Stage)]; c != 3 {
				t.Errorf("heat maps: %d cells for size %d stage %d, want one per panel (3)", c, z.Size, sg.Stage)
			}
		}
	}
	if len(livePageCell.FindAllString(dom, -1)) != 3*nCells || nCells == 0 {
		t.Errorf("heat maps: %d cells, want 3×%d", len(livePageCell.FindAllString(dom, -1)), nCells)
	}
	got := map[string]bool{}
	for _, m := range livePageFailRow.FindAllStringSubmatch(dom, -1) {
		key := m[1] + " " + m[2] + " " + m[3]
		w, ok := want[key]
		if !ok {
			t.Errorf("failure row %s: no such Redis aggregate", key)
			continue
		}
		got[key] = true
		if m[4] != fmt.Sprint(w.Episodes) || m[5] != fmt.Sprint(w.Episodes-w.Valid) {
			t.Errorf("failure row %s: %s answers %s invalid; Redis has %d, %d", key, m[4], m[5], w.Episodes, w.Episodes-w.Valid)
		}
		for _, c := range livePageFailCat.FindAllStringSubmatch(m[6], -1) {
			if c[2] != fmt.Sprint(w.Categories[c[1]]) {
				t.Errorf("failure row %s: %s %s, Redis has %d", key, c[1], c[2], w.Categories[c[1]])
			}
		}
	}
	if len(got) != len(want) || len(want) == 0 {
		t.Errorf("failure table: rows %v, want one per Redis aggregate %v", got, want)
	}
	if pid == 0 {
		return
	}
	if !strings.Contains(dom, "<th>units in flight</th><th>mean unit time</th>") {
		t.Errorf("the Nodes table has no units in flight and mean unit time columns")
	}
	m := livePageNode.FindStringSubmatch(dom)
	if m == nil || m[1] != fmt.Sprint(pid) || m[2] == "0" {
		t.Errorf("the Nodes table does not list the process (pid %d) with its units done (> 0), in flight and mean unit time: %v", pid, m)
	} else {
		t.Logf("Nodes table: pid %s, %s units done, %s in flight, mean unit time %s", m[1], m[2], m[3], m[4])
	}
}
