//go:build livepage

package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"regexp"
	"strconv"
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

// livePageDump renders page in headless Chromium (scripts on or off) and
// returns the DOM.
func livePageDump(t *testing.T, bin, page string, js bool) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--user-data-dir=" + t.TempDir(),
		"--virtual-time-budget=3000", "--dump-dom"}
	if !js {
		args = append(args, "--blink-settings=scriptEnabled=false")
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, append(args, page)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, stderr.String())
	}
	return stdout.String()
}

// redisPauseWrites holds every client's write commands at redisURL for
// ms milliseconds (CLIENT PAUSE ms WRITE): the run stands still while
// reads (the page's) go on.
func redisPauseWrites(t *testing.T, redisURL string, ms int) {
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
	n := strconv.Itoa(ms)
	fmt.Fprintf(c, "*4\r\n$6\r\nCLIENT\r\n$5\r\nPAUSE\r\n$%d\r\n%s\r\n$5\r\nWRITE\r\n", len(n), n)
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "+OK\r\n" {
		t.Fatalf("CLIENT PAUSE: %q %v", line, err)
	}
}

// livePageState is the part of /api/status the test reads.
type livePageState struct {
	State  *store.RunState `json:"state"`
	Stages []struct {
		Stage   int  `json:"stage"`
		Running bool `json:"running"`
		Config  struct {
			Sizes []struct {
				Size int `json:"size"`
			} `json:"sizes"`
		} `json:"config"`
	} `json:"stages"`
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

// TestLivePageRealRun (build tag livepage: it does not yet find a paused
// running stage reliably, see the branch report) runs `t2t train` (a process, real redis-server) and
// renders /ui in headless Chromium while a stage after the first runs
// (the run's Redis writes paused so it stands still): the running row says
// running and the curve has no point for it, the x axis names the finished
// stages, the heat maps have one cell per (size, stage), the failure
// table's counts equal the Redis aggregates and the Nodes table lists the
// process. With scripts off the page shows the server's snapshot.
func TestLivePageRealRun(t *testing.T) {
	bin := livePageChromium(t)
	redisURL := nodeRedis(t)
	p := startNode(t, "train", "train", "--redis", redisURL, "--http", "127.0.0.1:0", "--policy", "scripted", "--mistake-rate", "0.3",
		"--stages", "4", "--instances", "1024", "--instances-per-unit", "8", "--group", "4", "--val-per-size", "2", "--eval-per-size", "1",
		"--run-id", "live")
	base := "http://" + nodeField(t, p.line("t2t train: http=", 30*time.Second), "http")
	st, err := store.Open(context.Background(), store.Options{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for attempt := 0; ; attempt++ {
		if isClosed(p.exited) || attempt == 40 {
			t.Fatalf("no page showed a running stage after the first in %d attempts", attempt)
		}
		s, ok := livePageStatus(base)
		if !ok || s.State.Stage < 1 || !(s.State.Phase == train.PhaseTraining || s.State.Phase == train.PhaseEvaluating) {
			time.Sleep(20 * time.Millisecond) // poll interval, not a timing assertion
			continue
		}
		// The pause (shorter than the store's 5 s operation timeout)
		// holds the run's writes while both pages render; the attempt
		// counts only if the run's state did not move meanwhile.
		redisPauseWrites(t, redisURL, 4000)
		want := livePageFailures(t, st, s)
		dom := livePageDump(t, bin, base+"/ui", true)
		nojs := livePageDump(t, bin, base+"/ui", false)
		after, ok := livePageStatus(base)
		if !ok || after.State.Stage != s.State.Stage || after.State.Phase != s.State.Phase || !strings.Contains(dom, `data-running="1"`) {
			continue // the stage moved on while the page was read: try again
		}
		livePageCheck(t, dom, s, want, p.cmd.Process.Pid)
		if !strings.Contains(nojs, `<pre id="snap">run live`) || !strings.Contains(nojs, " (running)") {
			t.Errorf("without scripts the page shows no snapshot of the running stage:\n%.3000s", nojs)
		}
		break
	}
	if code := p.wait(120 * time.Second); code != 0 {
		t.Fatalf("t2t train exited with %d", code)
	}
}

// livePageFailures reads, for each finished stage of s, the Redis
// aggregates as the failure table's rows: "stage split agents" → the
// answers, invalid answers and counts per category.
func livePageFailures(t *testing.T, st *store.Store, s livePageState) map[string]store.Counts {
	t.Helper()
	out := map[string]store.Counts{}
	for _, sg := range s.Stages {
		if sg.Running {
			continue
		}
		for _, split := range []string{store.SplitTrain, store.SplitVal} {
			agg, err := st.Aggregates(context.Background(), "live", sg.Stage, split)
			if err != nil {
				t.Fatal(err)
			}
			for a, c := range store.SumSplit(agg).ByAgents {
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
)

// livePageCheck checks the DOM of the page rendered while s's running
// stage ran.
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
			if strings.Contains(dom, fmt.Sprintf(`class="pt" data-stage="%d"`, sg.Stage)) {
				t.Errorf("the curve has a point for running stage %d", sg.Stage)
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
			continue // the running stage's row: its counts move
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
	if !strings.Contains(dom, fmt.Sprintf("<td>%d</td><td>coordinator,learner,rollout,engineer</td><td>this process</td>", pid)) {
		t.Errorf("the Nodes table does not list the process (pid %d)", pid)
	}
}
