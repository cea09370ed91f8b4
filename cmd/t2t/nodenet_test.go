package main

import (
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/serve"
)

// TestNodeGossipKey: with --gossip-key, a node with another key cannot
// join the cluster, and one with the same key serves the run to its end.
func TestNodeGossipKey(t *testing.T) {
	redisURL := nodeRedis(t)
	key := base64.StdEncoding.EncodeToString([]byte("t2t-test-key-0123456789abcdef..."))
	other := base64.StdEncoding.EncodeToString([]byte("another-key-0123"))
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer", "--gossip-key", key,
		"--policy", "scripted", "--stages", "1", "--instances", "32", "--instances-per-unit", "8",
		"--val-per-size", "1", "--eval-per-size", "1", "--run-id", "keyed"}, common...)...)
	gossipA := nodeField(t, a.line("t2t node: joined ", 60*time.Second), "gossip")

	c := startNode(t, "C", append([]string{"node", "--roles", "rollout", "--join", gossipA, "--join-timeout", "2s",
		"--gossip-key", other}, common...)...)
	if code := c.wait(30 * time.Second); code != 1 {
		t.Fatalf("a node with another key: exit %d, want 1", code)
	}
	if msg := c.stderr.String(); !strings.Contains(msg, "join cluster via "+gossipA) {
		t.Fatalf("stderr %q", msg)
	}
	keyFile := filepath.Join(t.TempDir(), "gossip.key")
	if err := os.WriteFile(keyFile, []byte(key+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := startNode(t, "B", append([]string{"node", "--roles", "rollout", "--join", gossipA, "--gossip-key-file", keyFile}, common...)...)
	b.line("t2t node: serving coordinator ", 30*time.Second)
	if code := a.wait(60 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	// B, without --keep, leaves by itself once the run it served is done.
	if code := b.wait(60 * time.Second); code != 0 {
		t.Fatalf("B exited with %d", code)
	}
}

// TestNodeTLS runs a two-node cluster whose actor transport is under mutual
// TLS (certificates of one dev CA): the rollout node serves the run.
func TestNodeTLS(t *testing.T) {
	redisURL := nodeRedis(t)
	dir := t.TempDir()
	if err := cluster.GenerateDevCerts(dir, "a", "b"); err != nil {
		t.Fatal(err)
	}
	tlsArgs := func(name string) []string {
		return []string{"--tls-cert", filepath.Join(dir, name+".pem"), "--tls-key", filepath.Join(dir, name+"-key.pem"), "--tls-ca", filepath.Join(dir, "ca.pem")}
	}
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append(append([]string{"node", "--roles", "coordinator,learner,engineer",
		"--policy", "scripted", "--stages", "1", "--instances", "32", "--instances-per-unit", "8",
		"--val-per-size", "1", "--eval-per-size", "1", "--run-id", "tls"}, tlsArgs("a")...), common...)...)
	joined := a.line("t2t node: joined ", 60*time.Second)
	gossipA, actorsA := nodeField(t, joined, "gossip"), nodeField(t, joined, "actors")
	// A's actor transport speaks TLS and takes a node certificate of its CA.
	_, client, err := cluster.TLSConfigs(cluster.TLSFiles{Cert: filepath.Join(dir, "b.pem"), Key: filepath.Join(dir, "b-key.pem"), CA: filepath.Join(dir, "ca.pem")})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", actorsA, client)
	if err != nil {
		t.Fatalf("TLS handshake with A's actor transport %s: %v", actorsA, err)
	}
	conn.Close()
	b := startNode(t, "B", append(append([]string{"node", "--roles", "rollout", "--join", gossipA}, tlsArgs("b")...), common...)...)
	b.line("t2t node: serving coordinator ", 30*time.Second)
	if code := a.wait(60 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	// B, without --keep, leaves by itself once the run it served is done.
	if code := b.wait(60 * time.Second); code != 0 {
		t.Fatalf("B exited with %d", code)
	}
	// Half the TLS material is bad input.
	bad := startNode(t, "C", "node", "--roles", "rollout", "--join", gossipA, "--tls-cert", filepath.Join(dir, "b.pem"), "--redis", redisURL)
	if code := bad.wait(30 * time.Second); code != 2 {
		t.Fatalf("--tls-cert alone: exit %d, want 2", code)
	}
}

// TestNodeLLMThroughEndpoint trains the LLM policy (a tiny random Qwen3
// from t2t model init) on a coordinator node whose rollouts all run on
// another node: the rollout node samples through the coordinator's
// OpenAI-compatible endpoint (--serve-addr), which serves the very model the
// learner updates, and the run completes with every unit recorded once.
// The endpoint requires the API key of $T2T_API_KEY (401 without it), and
// the rollout node, with the same environment, sends it.
func TestNodeLLMThroughEndpoint(t *testing.T) {
	t.Setenv(serve.APIKeyEnv, "node-key") // the nodes inherit it
	redisURL := nodeRedis(t)
	model := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", model); code != 0 {
		t.Fatalf("model init: %s", e)
	}
	unitLog := filepath.Join(t.TempDir(), "units.jsonl")
	summary := filepath.Join(t.TempDir(), "a.json")
	common := []string{"--gossip", "127.0.0.1:0", "--gossip-profile", "local", "--listen", "127.0.0.1:0", "--redis", redisURL}
	a := startNode(t, "A", append([]string{"node", "--roles", "coordinator,learner,engineer", "--policy", "qwen3", "--model", model, "--summary", summary,
		"--max-new-tokens", "8", "--serve-addr", "127.0.0.1:0", "--stages", "2", "--instances", "8", "--instances-per-unit", "2",
		"--group", "2", "--learner-batch", "2", "--val-per-size", "1", "--eval-per-size", "1", "--strategy", "fixed", "--run-id", "llm"}, common...)...)
	url := strings.TrimPrefix(a.line("t2t node: serving the policy at ", 60*time.Second), "t2t node: serving the policy at ")
	for key, want := range map[string]int{"": http.StatusUnauthorized, "wrong": http.StatusUnauthorized, "node-key": http.StatusOK} {
		req, _ := http.NewRequest(http.MethodGet, url+"/models", nil)
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Fatalf("GET %s/models with key %q: %d, want %d", url, key, resp.StatusCode, want)
		}
	}
	gossipA := nodeField(t, a.line("t2t node: joined ", 60*time.Second), "gossip")
	b := startNode(t, "B", append([]string{"node", "--roles", "rollout", "--join", gossipA, "--unit-log", unitLog}, common...)...)
	if code := a.wait(120 * time.Second); code != 0 {
		t.Fatalf("A exited with %d", code)
	}
	// B, without --keep, leaves by itself once the run it served is done.
	b.wait(60 * time.Second)
	units := readUnitLog(t, unitLog)
	if len(units) < 8 { // 4 units per stage, 2 stages, all on B
		t.Fatalf("B logged %d units, want at least 8", len(units))
	}
	var sum daemon.Summary
	if b, err := os.ReadFile(summary); err != nil || json.Unmarshal(b, &sum) != nil || sum.Run == nil {
		t.Fatalf("A's summary: %v", err)
	}
	// The learner trained on the groups sampled through the endpoint.
	if l := sum.Run.Actors.Learner; l.Updates == 0 || l.Stale == l.Groups {
		t.Fatalf("learner: %+v", l)
	}
	st, err := store.Open(context.Background(), store.Options{URL: redisURL})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for stage := range 2 {
		if n, err := st.UnitsApplied(context.Background(), "llm", stage, "train"); err != nil || n != 4 {
			t.Fatalf("stage %d: %d units applied (%v), want 4", stage, n, err)
		}
	}
}
