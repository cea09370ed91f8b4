package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/train"
)

// TestNodeLivePageNodes runs a coordinator node (coordinator, learner,
// engineer; --http) and a rollout node as processes on a real
// redis-server, and reads the coordinator's /api/status over HTTP until it
// lists both nodes with their roles and the rollout node with units done.
// After the run, plain `t2t status` (Redis only) lists both as the run
// recorded them, the rollout node with as many units done as it ran.
func TestNodeLivePageNodes(t *testing.T) {
	seed := nodeTestSeed(t, 13)
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	runID := fmt.Sprintf("pagetest-%d", seed)
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0",
		"--http", "127.0.0.1:0", "--redis", redisURL}
	// 64 units of 8 instances: the rollout node, the only one, is still at
	// work when its first unit shows on the page.
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer",
		"--policy", "scripted", "--stages", "1", "--instances", "512", "--instances-per-unit", "8",
		"--val-per-size", "1", "--eval-per-size", "1", "--run-id", runID, "--seed", strconv.FormatUint(seed, 10),
		"--summary", filepath.Join(dir, "a.json")}, common...)...)
	aHTTP := nodeField(t, a.line("t2t node: http=", 30*time.Second), "http")
	joined := a.line("t2t node: joined ", 60*time.Second)
	aID := nodeField(t, joined, "id")
	b, _, bInfo := startRolloutNode(t, dir, "B", nodeField(t, joined, "gossip"), common)
	_, bID, _ := strings.Cut(bInfo, "|")

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var last string
	for {
		code, body, errText := metricsGet("http://" + aHTTP + "/api/status")
		var st train.Status
		if code == 200 && json.Unmarshal([]byte(body), &st) == nil {
			if aNode, bNode, ok := pageNodes(st.Nodes, aID, bID); ok {
				if !sameRoles(aNode.Roles, "coordinator", "learner", "engineer") || !sameRoles(bNode.Roles, "rollout") {
					t.Fatalf("/api/status roles: A %v, B %v", aNode.Roles, bNode.Roles)
				}
				if bNode.Load != nil && bNode.Load.UnitsDone > 0 {
					if aNode.Load != nil {
						t.Errorf("A runs no rollout but has a load: %+v", *aNode.Load)
					}
					t.Logf("A's /api/status: B %s, %d units done, %d in flight, mean unit %s", bNode.Address,
						bNode.Load.UnitsDone, bNode.Load.UnitsInFlight, bNode.Load.MeanUnitTime)
					break
				}
			}
		}
		last = fmt.Sprintf("%d %s%s", code, nodeTail(body, 2000), errText)
		select {
		case <-ctx.Done():
			t.Fatalf("A's /api/status never listed A and B with units done by B: %s", last)
		case <-a.exited:
			t.Fatalf("A exited before its /api/status listed B with units done: %s", last)
		case <-time.After(50 * time.Millisecond): // polling a real HTTP endpoint until ctx ends
		}
	}

	if code := a.wait(120 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil { // --keep: it must still run
		t.Fatal(err)
	}
	if code := b.wait(30 * time.Second); code != 0 {
		t.Fatalf("B exited with %d", code)
	}
	var bs daemon.Summary
	raw, err := os.ReadFile(filepath.Join(dir, "B.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &bs); err != nil || bs.Rollout == nil {
		t.Fatalf("B summary: %v %s", err, raw)
	}
	code, out, errOut := t2t(t, "status", "--redis", redisURL, "--run", runID, "--json")
	if code != 0 {
		t.Fatalf("status --json: exit %d: %s", code, errOut)
	}
	var rep train.Status
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatal(err)
	}
	aNode, bNode, ok := pageNodes(rep.Nodes, aID, bID)
	if !ok || bNode.Load == nil || bNode.Load.UnitsDone != uint64(bs.Rollout.Units) || bNode.Load.UnitsInFlight != 0 ||
		!sameRoles(aNode.Roles, "coordinator", "learner", "engineer") || !sameRoles(bNode.Roles, "rollout") {
		t.Fatalf("t2t status nodes %+v; want A and B, B with the %d units it ran", rep.Nodes, bs.Rollout.Units)
	}
	code, out, errOut = t2t(t, "status", "--redis", redisURL, "--run", runID)
	if want := fmt.Sprintf(" (id %s) rollout at %s, capacity 2: %d units done, 0 in flight, mean unit ", bID, bNode.Address, bs.Rollout.Units); code != 0 || !strings.Contains(out, want) {
		t.Fatalf("t2t status: exit %d, lacks %q:\n%s%s", code, want, out, errOut)
	}
}

// pageNodes finds nodes a and b in ns.
func pageNodes(ns []train.StatusNode, a, b string) (an, bn train.StatusNode, ok bool) {
	ia := slices.IndexFunc(ns, func(n train.StatusNode) bool { return n.ID == a })
	ib := slices.IndexFunc(ns, func(n train.StatusNode) bool { return n.ID == b })
	if ia < 0 || ib < 0 {
		return an, bn, false
	}
	return ns[ia], ns[ib], true
}

// sameRoles reports whether roles are want, in any order.
func sameRoles(roles []string, want ...string) bool {
	return len(roles) == len(want) && !slices.ContainsFunc(want, func(r string) bool { return !slices.Contains(roles, r) })
}
