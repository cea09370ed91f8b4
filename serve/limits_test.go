package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

// srvPost posts body to url and returns the status, the headers and the error body's code
// ("" when the answer is not an error).
func srvPost(t testing.TB, url string, body []byte) (int, http.Header, string) {
	t.Helper()
	resp, err := http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatalf("POST %s: %d, body not JSON: %v", url, resp.StatusCode, err)
	}
	return resp.StatusCode, resp.Header, e.Error.Code
}

// srvHealth reads /health.
func srvHealth(t testing.TB, base string) (queued, running int) {
	t.Helper()
	resp, err := http.Get(base + "/health")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h struct {
		Status          string
		Queued, Running int
	}
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Status != "ok" {
		t.Fatalf("/health: %v %+v", err, h)
	}
	return h.Queued, h.Running
}

// srvAwaitHealth polls /health (a network edge) until it reports queued and running.
func srvAwaitHealth(t testing.TB, base string, queued, running int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		q, r := srvHealth(t, base)
		if q == queued && r == running {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("/health: %d queued, %d running; want %d, %d", q, r, queued, running)
		}
		<-tick.C
	}
}

// Requests wait for the model in a bounded queue: while one generates (held here by a
// training step, LM.Exclusive) and one waits in a queue of one, a third is answered 429 with
// Retry-After at once; a waiting request whose client goes away leaves the queue and makes
// room; once the model is free the admitted requests complete.
func TestQueueBoundedAndGoneClientsLeave(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	_, hs, c := srvStart(t, lm, serve.Options{MaxQueue: 1})
	held, hold, stepped := make(chan struct{}), make(chan struct{}), make(chan error, 1)
	go func() {
		stepped <- lm.Exclusive(func() error {
			close(held)
			<-hold
			return nil
		})
	}()
	<-held
	done := make(chan error, 3)
	ask := func(ctx context.Context) {
		p := srvChatParams("tiny", 1)
		p.MaxTokens = openai.Int(2)
		_, err := c.Chat.Completions.New(ctx, p)
		done <- err
	}
	go ask(context.Background())
	srvAwaitHealth(t, hs.URL, 0, 1)
	gone, leave := context.WithCancel(context.Background())
	defer leave()
	go ask(gone)
	srvAwaitHealth(t, hs.URL, 1, 1)
	body := []byte(`{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":"hi"}]}`)
	status, h, code := srvPost(t, hs.URL+"/v1/chat/completions", body)
	if status != http.StatusTooManyRequests || code != "queue_full" || h.Get("Retry-After") == "" {
		t.Fatalf("a request with the queue full: %d %q Retry-After %q; want 429 queue_full with Retry-After", status, code, h.Get("Retry-After"))
	}
	leave()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the gone client: %v, want context.Canceled", err)
	}
	srvAwaitHealth(t, hs.URL, 0, 1)
	go ask(context.Background())
	srvAwaitHealth(t, hs.URL, 1, 1)
	close(hold)
	for range 2 {
		if err := <-done; err != nil {
			t.Fatalf("an admitted request: %v", err)
		}
	}
	if err := <-stepped; err != nil {
		t.Fatal(err)
	}
	srvAwaitHealth(t, hs.URL, 0, 0)
}

// A request whose memory estimate exceeds the budget is 422 before anything is allocated; a
// small one on the same server is served.
func TestMemoryBudget(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	_, hs, c := srvStart(t, lm, serve.Options{MaxMemory: 64 << 20})
	big := []byte(`{"model":"tiny","n":16,"max_tokens":8000,"messages":[{"role":"user","content":"hi"}]}`)
	if status, _, code := srvPost(t, hs.URL+"/v1/chat/completions", big); status != http.StatusUnprocessableEntity || code != "memory_limit_exceeded" {
		t.Fatalf("chat n 16 × 8000 tokens on a 64 MiB budget: %d %q, want 422 memory_limit_exceeded", status, code)
	}
	bigc := []byte(`{"model":"tiny","n":16,"max_tokens":8000,"prompt":"hi","stream":true}`)
	if status, _, code := srvPost(t, hs.URL+"/v1/completions", bigc); status != http.StatusUnprocessableEntity || code != "memory_limit_exceeded" {
		t.Fatalf("streamed completion n 16 × 8000 tokens on a 64 MiB budget: %d %q, want 422 memory_limit_exceeded", status, code)
	}
	p := srvChatParams("tiny", 1)
	p.MaxTokens = openai.Int(4)
	if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatalf("a small request: %v", err)
	}
}

// A prompt over --max-prompt-tokens is 422 without being tokenized whole: a 7 MiB prompt
// allocates a small part of what tokenizing it takes (about 240 MB), in both endpoints, as
// text or as token ids.
func TestPromptTokenCap(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, hs, _ := srvStart(t, lm, serve.Options{MaxPromptTokens: 1000})
	rng := rand.New(rand.NewPCG(seed, 14))
	words := []string{"agent", "moves", "left", "grid", "Frozen", "lake", "12", "#", "\n"}
	var sb strings.Builder
	for sb.Len() < 7<<20 {
		sb.WriteString(words[rng.IntN(len(words))])
		sb.WriteByte(' ')
	}
	huge, err := json.Marshal(sb.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ path, body string }{
		{"/v1/chat/completions", `{"model":"tiny","max_tokens":2,"messages":[{"role":"user","content":` + string(huge) + `}]}`},
		{"/v1/completions", `{"model":"tiny","max_tokens":2,"prompt":` + string(huge) + `}`},
	} {
		body := []byte(c.body)
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		status, _, code := srvPost(t, hs.URL+c.path, body)
		runtime.ReadMemStats(&m1)
		alloc := m1.TotalAlloc - m0.TotalAlloc
		t.Logf("%s: a %d-byte prompt allocated %.0f MB", c.path, sb.Len(), float64(alloc)/1e6)
		if status != http.StatusUnprocessableEntity || code != "prompt_too_long" {
			t.Fatalf("%s with a 7 MiB prompt: %d %q, want 422 prompt_too_long", c.path, status, code)
		}
		if alloc > 160e6 {
			t.Errorf("%s: the rejected prompt allocated %.0f MB: it was tokenized whole", c.path, float64(alloc)/1e6)
		}
	}
	ids := make([]string, 1001)
	for i := range ids {
		ids[i] = "7"
	}
	body := []byte(`{"model":"tiny","max_tokens":2,"prompt":[` + strings.Join(ids, ",") + `]}`)
	if status, _, code := srvPost(t, hs.URL+"/v1/completions", body); status != http.StatusUnprocessableEntity || code != "prompt_too_long" {
		t.Fatalf("1001 token ids with a cap of 1000: %d %q, want 422 prompt_too_long", status, code)
	}
	body = []byte(`{"model":"tiny","max_tokens":2,"prompt":[` + strings.Join(ids[:1000], ",") + `]}`)
	if status, _, code := srvPost(t, hs.URL+"/v1/completions", body); status != http.StatusOK {
		t.Fatalf("1000 token ids with a cap of 1000: %d %q, want 200", status, code)
	}
}

// oomChildEnv marks the child process of TestOOMRequestsAnswered4xx.
const oomChildEnv = "T2T_SERVE_OOM_CHILD"

// The requests that OOM-killed the server (issue 14) are answered 4xx while the process's peak
// RSS stays under 500 MB: n 16 × max_tokens 40000 on the tiny checkpoint, and max_tokens 1e9
// on a checkpoint claiming a context of 2^40 — with the default max_tokens limit, and with that
// limit lifted so that only the memory budget stands in the way. The server is still serving
// afterwards. It runs in a child process so that the peak (VmHWM) is this test's alone.
func TestOOMRequestsAnswered4xx(t *testing.T) {
	seed := srvTestSeed(t)
	if os.Getenv(oomChildEnv) == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestOOMRequestsAnswered4xx$", "-test.count=1", "-test.v", fmt.Sprintf("-srvseed=%d", seed))
		cmd.Env = append(os.Environ(), oomChildEnv+"=1")
		out, err := cmd.CombinedOutput()
		t.Logf("child:\n%s", out)
		if err != nil {
			t.Fatalf("child: %v", err)
		}
		return
	}
	tiny := srvCheckpoint(t, seed)
	huge := srvCheckpointOf(t, seed, func(c *hfmodel.Config) { c.MaxPositionEmbeddings = 1 << 40 })
	const oom = `{"model":"tiny","n":16,"max_tokens":40000,"messages":[{"role":"user","content":"Agent 0 starts at (0, 0)."}]}`
	const oomHuge = `{"model":"tiny","max_tokens":1000000000,"messages":[{"role":"user","content":"hi"}]}`
	for _, lifted := range []bool{false, true} {
		opt := serve.Options{MaxMemory: 256 << 20}
		if lifted {
			opt.MaxTokens = 1 << 40
		}
		for _, lm := range []struct {
			name string
			lm   *textpolicy.LM
		}{{"tiny", tiny}, {"2^40 context", huge}} {
			_, hs, c := srvStart(t, lm.lm, opt)
			for _, body := range []string{oom, oomHuge} {
				status, _, code := srvPost(t, hs.URL+"/v1/chat/completions", []byte(body))
				t.Logf("%s, max_tokens lifted %v: %s → %d %s", lm.name, lifted, body[:50], status, code)
				if status < 400 || status > 499 {
					t.Fatalf("%s: %s answered %d, want 4xx", lm.name, body, status)
				}
			}
			p := srvChatParams("tiny", 1)
			p.MaxTokens = openai.Int(4)
			if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
				t.Fatalf("%s: a small request afterwards: %v", lm.name, err)
			}
		}
	}
	peak := sysmem.PeakRSS()
	t.Logf("peak RSS (VmHWM) %.0f MB", float64(peak)/1e6)
	if peak == 0 {
		t.Fatal("no /proc/self/status VmHWM on this system")
	}
	if peak > 500e6 {
		t.Fatalf("peak RSS %.0f MB, want < 500 MB", float64(peak)/1e6)
	}
}
