package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/daemon"
	"github.com/t2t-lab/t2t/serve"
)

// startServe starts `t2t serve` on a free loopback port with extra flags and returns the
// process and its base URL (http://host:port).
func startServe(t *testing.T, model string, extra ...string) (*nodeProc, string) {
	t.Helper()
	p := startNode(t, "serve", append([]string{"serve", "--model", model, "--addr", "127.0.0.1:0"}, extra...)...)
	l := p.line("serving ", 2*time.Minute)
	_, rest, ok := strings.Cut(l, " at http://")
	addr, _, _ := strings.Cut(rest, "/v1")
	if !ok || addr == "" {
		t.Fatalf("no address in %q", l)
	}
	return p, "http://" + addr
}

// tinyModel writes a tiny random checkpoint (t2t model init) and returns its folder.
func tinyModel(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if code, _, e := t2t(t, "model", "init", "--out", dir); code != 0 {
		t.Fatalf("model init: exit %d: %s", code, e)
	}
	return dir
}

// getStatus GETs url with an optional bearer key and returns the status code.
func getStatus(t *testing.T, url, key string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := (&http.Client{Timeout: time.Minute}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestServeAPIKeyFileAndEnv: `t2t serve --api-key-file FILE` and $T2T_API_KEY set the key a
// real server checks, and the key never stands on the command line (ps).
func TestServeAPIKeyFileAndEnv(t *testing.T) {
	model := tinyModel(t)
	keyFile := filepath.Join(t.TempDir(), "key")
	if err := os.WriteFile(keyFile, []byte("from-file-key\nsecond line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, base := startServe(t, model, "--api-key-file", keyFile)
	if c := getStatus(t, base+"/v1/models", ""); c != http.StatusUnauthorized {
		t.Fatalf("no key: %d, want 401", c)
	}
	if c := getStatus(t, base+"/v1/models", "from-file-key"); c != http.StatusOK {
		t.Fatalf("file key: %d, want 200", c)
	}
	if cl, err := os.ReadFile("/proc/" + strconv.Itoa(p.cmd.Process.Pid) + "/cmdline"); err == nil && bytes.Contains(cl, []byte("from-file-key")) {
		t.Fatal("the key shows in the process's command line")
	}

	t.Setenv(serve.APIKeyEnv, "from-env-key")
	_, base = startServe(t, model)
	if c := getStatus(t, base+"/v1/models", "from-file-key"); c != http.StatusUnauthorized {
		t.Fatalf("wrong key: %d, want 401", c)
	}
	if c := getStatus(t, base+"/v1/models", "from-env-key"); c != http.StatusOK {
		t.Fatalf("env key: %d, want 200", c)
	}

	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{empty, filepath.Join(t.TempDir(), "missing")} {
		if code, _, e := t2t(t, "serve", "--model", model, "--api-key-file", f); code != 2 || !strings.Contains(e, f) {
			t.Fatalf("--api-key-file %s: exit %d, %s", f, code, e)
		}
	}
}

// TestServeLogsRefusalsWithoutVerbose: a real `t2t serve` writes what went wrong to stderr
// (here a request over --max-memory, answered 422) without -v; only -v logs every request.
func TestServeLogsRefusalsWithoutVerbose(t *testing.T) {
	model := tinyModel(t)
	post := func(base string, maxTokens, want int) {
		body := fmt.Sprintf(`{"model":"tiny","messages":[{"role":"user","content":"hi"}],"max_tokens":%d}`, maxTokens)
		res, err := http.Post(base+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != want {
			t.Fatalf("max_tokens %d: status %d, want %d", maxTokens, res.StatusCode, want)
		}
	}
	for _, verbose := range []bool{false, true} {
		extra := []string{"--max-memory", "200K"} // 2 new tokens fit, 64 do not
		if verbose {
			extra = append(extra, "-v")
		}
		p, base := startServe(t, model, extra...)
		post(base, 2, http.StatusOK)
		post(base, 64, http.StatusUnprocessableEntity)
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(p.stderr.String(), "request over the memory budget") && time.Now().Before(deadline) {
			time.Sleep(20 * time.Millisecond)
		}
		log := p.stderr.String()
		if !strings.Contains(log, "level=WARN") || !strings.Contains(log, "request over the memory budget") {
			t.Errorf("-v %v: the refusal is not in stderr:\n%s", verbose, log)
		}
		if got := strings.Contains(log, "level=INFO"); got != verbose {
			t.Errorf("-v %v: info lines in stderr: %v, want %v:\n%s", verbose, got, verbose, log)
		}
	}
}

// TestRedisURLInputErrors: a malformed --redis URL (port 99999) is exit 2 at once (no 30 s of
// retries), and a password given as a query option is never printed.
func TestRedisURLInputErrors(t *testing.T) {
	bin := nodeBinary(t)
	for _, tc := range []struct{ url, secret string }{
		{"redis://127.0.0.1:99999/0", ""},
		{"redis://h:6379/0?password=sekret-q", "sekret-q"},
		{"redis://:sekret-u@127.0.0.1:99999/0", "sekret-u"},
	} {
		cmd := exec.Command(bin, "status", "--redis", tc.url)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		var err error
		select {
		case err = <-done:
		case <-time.After(25 * time.Second): // hang guard: the old behaviour retried for 30 s
			cmd.Process.Kill()
			t.Fatalf("%s: still running after 25 s (retrying a malformed URL?)", tc.url)
		}
		if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != 2 {
			t.Fatalf("%s: %v, want exit 2\n%s", tc.url, err, out.String())
		}
		if tc.secret != "" && strings.Contains(out.String(), tc.secret) {
			t.Fatalf("%s: the password is printed: %s", tc.url, out.String())
		}
		if strings.Contains(out.String(), "retrying") {
			t.Fatalf("%s: retried: %s", tc.url, out.String())
		}
	}
}

// TestNodeListenNeedsTLSOffLoopback: a real `t2t node` refuses a --listen other hosts can reach
// without TLS (exit 2, naming the way out); --insecure-listen lets it pass with a warning.
func TestNodeListenNeedsTLSOffLoopback(t *testing.T) {
	t.Setenv(cluster.GossipKeyEnv, "")
	// A malformed Redis port ends each run right after the flag checks (exit 2, no retries).
	base := []string{"node", "--roles", "rollout", "--redis", "redis://127.0.0.1:99999/0", "--gossip", "127.0.0.1:0", "--advertise", "127.0.0.1"}
	p := startNode(t, "exposed", append(base, "--listen", "0.0.0.0:0")...)
	if code := p.wait(time.Minute); code != 2 || !strings.Contains(p.stderr.String(), "--insecure-listen") {
		t.Fatalf("exit %d, stderr %q; want 2 naming --insecure-listen", code, p.stderr.String())
	}
	p = startNode(t, "insecure", append(base, "--listen", "0.0.0.0:0", "--insecure-listen")...)
	p.wait(time.Minute)
	if msg := p.stderr.String(); !strings.Contains(msg, "WARNING: the actor transport on 0.0.0.0:0 is plain gRPC") || strings.Contains(msg, "has no TLS") {
		t.Fatalf("--insecure-listen: stderr %q; want the warning and no refusal", msg)
	}
	p = startNode(t, "loopback", append(base, "--listen", "127.0.0.1:0")...)
	p.wait(time.Minute)
	if msg := p.stderr.String(); strings.Contains(msg, "actor transport") {
		t.Fatalf("loopback --listen: stderr %q; want no refusal or warning", msg)
	}
}

// TestEnvPickReadsUpToTheLineAsked: `env show|check|prompt --line 1` of a file whose line 2 is
// broken (or over the line limit) works; the broken line asked for is exit 2 naming it; by
// --id each bad line is reported and the search goes on. A real process reads a real file.
func TestEnvPickReadsUpToTheLineAsked(t *testing.T) {
	bin := nodeBinary(t)
	dir := t.TempDir()
	gen := filepath.Join(dir, "g.jsonl")
	if code, _, e := t2t(t, "env", "gen", "--n", "2", "--seed", "3", "--out", gen); code != 0 {
		t.Fatal(e)
	}
	b, err := os.ReadFile(gen)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitN(string(b), "\n", 3)
	var first struct{ ID string }
	if err := json.Unmarshal([]byte(lines[1]), &first); err != nil {
		t.Fatal(err)
	}
	mixed := filepath.Join(dir, "mixed.jsonl")
	// line 1 good, line 2 broken, line 3 the second instance, line 4 broken again.
	if err := os.WriteFile(mixed, []byte(lines[0]+"\n{\"width\":\n"+lines[1]+"\n[1,2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
			return ee.ExitCode(), out.String(), errb.String()
		} else if err != nil {
			t.Fatal(err)
		}
		return 0, out.String(), errb.String()
	}
	for _, args := range [][]string{
		{"env", "prompt", "--in", mixed, "--line", "1"},
		{"env", "prompt", "--in", mixed},
		{"env", "show", "--in", mixed, "--line", "1"},
		{"env", "check", "--instance", mixed, "--line", "1", "--plan", "/dev/null"},
	} {
		if code, out, e := run(args...); code != 0 || out == "" {
			t.Errorf("%v: exit %d, stderr %q; want 0 and output", args, code, e)
		}
	}
	if code, _, e := run("env", "prompt", "--in", mixed, "--line", "2"); code != 2 || !strings.Contains(e, "mixed.jsonl:2") {
		t.Errorf("--line 2 (broken): exit %d, stderr %q; want 2 naming mixed.jsonl:2", code, e)
	}
	code, out, e := run("env", "prompt", "--in", mixed, "--id", first.ID)
	if code != 0 || out == "" || !strings.Contains(e, "mixed.jsonl:2: skipped") || !strings.Contains(e, "mixed.jsonl:4: skipped") {
		t.Errorf("--id past bad lines: exit %d, stderr %q; want 0 and lines 2 and 4 reported", code, e)
	}
	// A whole-file command (export) reports each bad line, exports the rest, exits 3.
	exp := filepath.Join(dir, "exp")
	code, _, e = run("env", "export", "--in", mixed, "--out", exp)
	ents, _ := os.ReadDir(exp)
	if code != 3 || !strings.Contains(e, "mixed.jsonl:2: skipped") || !strings.Contains(e, "mixed.jsonl:4: skipped") || len(ents) == 0 {
		t.Errorf("export: exit %d, %d files, stderr %q; want 3, files, lines 2 and 4 reported", code, len(ents), e)
	}
}

// TestServeSIGHUPWithFIFOWeightsThenSIGTERM: a real `t2t serve` whose model.safetensors became
// a FIFO reports the failed reload at SIGHUP (the FIFO is not waited on) and still exits at
// SIGTERM.
func TestServeSIGHUPWithFIFOWeightsThenSIGTERM(t *testing.T) {
	model := tinyModel(t)
	p, base := startServe(t, model)
	weights := filepath.Join(model, "model.safetensors")
	if err := os.Remove(weights); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(weights, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if l := p.line("reload failed", 2*time.Minute); !strings.Contains(l, "FIFO") {
		t.Fatalf("reload line %q does not name the FIFO", l)
	}
	if c := getStatus(t, base+"/health", ""); c != http.StatusOK {
		t.Fatalf("/health after the failed reload: %d", c)
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(time.Minute); code != 0 {
		t.Fatalf("exit %d after SIGTERM, want 0", code)
	}
}

// TestGossipJunkIsCountedNotLogged: junk UDP packets at a real node's gossip port are counted
// in /metrics (t2t_gossip_log_lines_total) and rate-limited in its log (a few lines, not one
// per packet).
func TestGossipJunkIsCountedNotLogged(t *testing.T) {
	redisURL := nodeRedis(t)
	p := startNode(t, "junk", "node", "--roles", "rollout", "--name", "junk", "--gossip", "127.0.0.1:0", "--gossip-profile", "local",
		"--listen", "127.0.0.1:0", "--http", "127.0.0.1:0", "--redis", redisURL)
	httpAddr := nodeField(t, p.line("t2t node: http=", time.Minute), "http")
	gossip := nodeField(t, p.line("t2t node: joined ", time.Minute), "gossip")
	conn, err := net.Dial("udp", gossip)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const sent = 2500
	for i := range sent {
		if _, err := conn.Write(bytes.Repeat([]byte{byte(i), 0xfe}, 20)); err != nil {
			t.Fatal(err)
		}
	}
	metric := daemon.MetricGossipLogLines + `{level="error"}`
	var counted float64
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) { // polling a real process
		if counted = metricsScrape(t, "http://"+httpAddr+"/metrics", "junk")[metric]; counted >= sent/2 {
			break
		}
	}
	if counted < sent/2 {
		t.Fatalf("%s = %v after %d junk packets", metric, counted, sent)
	}
	if n := strings.Count(p.stderr.String(), "msg=memberlist"); n < 1 || n > 10 {
		t.Fatalf("%d memberlist log lines for %v junk packets, want a few:\n%s", n, counted, nodeTail(p.stderr.String(), 2000))
	}
}
