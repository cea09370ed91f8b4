package textpolicy

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/env"
)

// tpFake is a scripted chat-completions endpoint.
type tpFake struct {
	srv      *httptest.Server
	calls    atomic.Int64
	mu       sync.Mutex
	reqs     []map[string]any
	auth     []string
	inflight int
	maxIn    int
}

func tpNewFake(t *testing.T, handle func(call int, req map[string]any, w http.ResponseWriter)) *tpFake {
	f := &tpFake{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		}
		var req map[string]any
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request: %v", err)
		}
		f.mu.Lock()
		f.reqs = append(f.reqs, req)
		f.auth = append(f.auth, r.Header.Get("Authorization"))
		f.mu.Unlock()
		handle(int(f.calls.Add(1)), req, w)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func tpReply(w http.ResponseWriter, n int, content string, logprobs bool, tokenForm string) {
	var choices []any
	for i := range n {
		ch := map[string]any{"index": i, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}
		if logprobs {
			ch["logprobs"] = map[string]any{"content": []any{
				map[string]any{"token": fmt.Sprintf(tokenForm, 5+i), "logprob": -0.5},
				map[string]any{"token": fmt.Sprintf(tokenForm, 7), "logprob": -0.25},
			}}
		}
		choices = append(choices, ch)
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"object": "chat.completion", "choices": choices,
		"usage": map[string]any{"prompt_tokens": 100, "completion_tokens": 2 * n, "total_tokens": 100 + 2*n}})
}

func tpClient(t *testing.T, f *tpFake, mod func(*ClientOptions)) *Client {
	t.Helper()
	o := ClientOptions{BaseURL: f.srv.URL + "/v1", Model: "m", Backoff: time.Millisecond, MaxTokens: 64}
	if mod != nil {
		mod(&o)
	}
	c, err := NewClient(o)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestClientPlayJudgesAndKeepsTokenIDs(t *testing.T) {
	seed := tpTestSeed(t)
	ins := tpInstances(t, seed, 2)
	answers := map[string]string{}
	for _, in := range ins {
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			t.Fatal(err)
		}
		moves, _ := env.PlanMoves(&sol.Plan)
		answers[env.RenderPrompt(in, env.PromptOptions{})] = "<think>easy</think>\n" + env.FormatMoves(moves)
	}
	f := tpNewFake(t, func(_ int, req map[string]any, w http.ResponseWriter) {
		msgs := req["messages"].([]any)
		content := msgs[0].(map[string]any)["content"].(string)
		tpReply(w, int(req["n"].(float64)), answers[content], true, "token_id:%d")
	})
	t.Setenv("T2T_TP_KEY", "sk-test")
	thinking := false
	c := tpClient(t, f, func(o *ClientOptions) {
		o.RequireLogProbs, o.APIKeyEnv, o.Thinking = true, "T2T_TP_KEY", &thinking
	})
	ro, err := c.Play(ins, 3, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	if len(ro.Episodes) != 6 || len(ro.Actions) != 12 {
		t.Fatalf("%d episodes, %d tokens; want 6 and 12", len(ro.Episodes), len(ro.Actions))
	}
	for e, ep := range ro.Episodes {
		if !ep.Report.Valid || !ep.Report.Optimal || ep.Reward != 0.5 || ep.Instance != ins[e/3] {
			t.Fatalf("episode %d: valid %v optimal %v reward %v", e, ep.Report.Valid, ep.Report.Optimal, ep.Reward)
		}
		if got := ro.Actions[ep.Lo:ep.Hi]; len(got) != 2 || got[0] != int32(5+e%3) || got[1] != 7 || ro.LogProbs[ep.Lo] != -0.5 {
			t.Fatalf("episode %d: tokens %v log-probs %v", e, got, ro.LogProbs[ep.Lo:ep.Hi])
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	seeds := map[float64]bool{}
	for i, req := range f.reqs {
		if req["n"] != 3.0 || req["logprobs"] != true || req["return_tokens_as_token_ids"] != true || req["max_tokens"] != 64.0 || req["model"] != "m" {
			t.Fatalf("request %d: %v", i, req)
		}
		if kw := req["chat_template_kwargs"].(map[string]any); kw["enable_thinking"] != false {
			t.Fatalf("request %d: chat_template_kwargs %v", i, kw)
		}
		seeds[req["seed"].(float64)] = true
		if f.auth[i] != "Bearer sk-test" {
			t.Fatalf("request %d: Authorization %q", i, f.auth[i])
		}
	}
	if len(seeds) != 2 {
		t.Fatalf("seeds %v: want one per instance", seeds)
	}
	if _, _, err := c.Update(nil); !errors.Is(err, ErrNotTrainable) {
		t.Fatalf("Update: %v, want ErrNotTrainable", err)
	}
}

func TestClientLogProbsRequired(t *testing.T) {
	seed := tpTestSeed(t)
	ins := tpInstances(t, seed, 1)
	for _, tc := range []struct {
		name     string
		logprobs bool
		form     string
	}{{"none", false, ""}, {"strings", true, "tok%d"}} {
		f := tpNewFake(t, func(_ int, req map[string]any, w http.ResponseWriter) {
			tpReply(w, int(req["n"].(float64)), "Agent 0: UP", tc.logprobs, tc.form)
		})
		_, err := tpClient(t, f, func(o *ClientOptions) { o.RequireLogProbs = true }).Play(ins, 2, 1, seed)
		var le *LogProbsError
		if !errors.As(err, &le) || !errors.Is(err, ErrNoLogProbs) || le.Instance != ins[0].ID {
			t.Fatalf("%s: %v, want a *LogProbsError", tc.name, err)
		}
		// Evaluation does not need them: the token count comes from usage.
		ro, err := tpClient(t, f, nil).Play(ins, 2, 1, seed)
		if err != nil || len(ro.Actions) != 0 || len(ro.Episodes) != 2 {
			t.Fatalf("%s without RequireLogProbs: %v, %d tokens", tc.name, err, len(ro.Actions))
		}
	}
}

func TestClientRetries(t *testing.T) {
	seed := tpTestSeed(t)
	ins := tpInstances(t, seed, 1)
	flaky := tpNewFake(t, func(call int, req map[string]any, w http.ResponseWriter) {
		if call <= 2 {
			http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
			return
		}
		tpReply(w, int(req["n"].(float64)), "x", false, "")
	})
	if _, err := tpClient(t, flaky, nil).Play(ins, 1, 0, seed); err != nil || flaky.calls.Load() != 3 {
		t.Fatalf("two 503s then success: %v after %d calls", err, flaky.calls.Load())
	}
	down := tpNewFake(t, func(_ int, _ map[string]any, w http.ResponseWriter) {
		http.Error(w, `{"error":{"message":"boom"}}`, http.StatusInternalServerError)
	})
	_, err := tpClient(t, down, func(o *ClientOptions) { o.MaxRetries = 1 }).Play(ins, 1, 0, seed)
	var ee *EndpointError
	if !errors.As(err, &ee) || ee.StatusCode != 500 || ee.Attempts != 2 || ee.Message != "boom" || down.calls.Load() != 2 {
		t.Fatalf("always 500 with one retry: %v (%d calls)", err, down.calls.Load())
	}
	bad := tpNewFake(t, func(_ int, _ map[string]any, w http.ResponseWriter) {
		http.Error(w, `{"error":{"message":"bad temperature"}}`, http.StatusBadRequest)
	})
	_, err = tpClient(t, bad, nil).Play(ins, 1, 0, seed)
	if !errors.As(err, &ee) || ee.StatusCode != 400 || ee.Attempts != 1 || bad.calls.Load() != 1 || !errors.Is(err, ErrEndpoint) {
		t.Fatalf("400: %v after %d calls; want no retry", err, bad.calls.Load())
	}
}

// At most Concurrency requests are in flight, and that many do run at once.
func TestClientConcurrencyLimit(t *testing.T) {
	seed := tpTestSeed(t)
	ins := tpInstances(t, seed, 6)
	const limit = 2
	full := make(chan struct{})
	var once sync.Once
	var f *tpFake
	f = tpNewFake(t, func(_ int, req map[string]any, w http.ResponseWriter) {
		f.mu.Lock()
		f.inflight++
		f.maxIn = max(f.maxIn, f.inflight)
		if f.inflight == limit {
			once.Do(func() { close(full) })
		}
		f.mu.Unlock()
		<-full // the first request waits for a second one: proof that they overlap
		tpReply(w, int(req["n"].(float64)), "x", false, "")
		f.mu.Lock()
		f.inflight--
		f.mu.Unlock()
	})
	if _, err := tpClient(t, f, func(o *ClientOptions) { o.Concurrency = limit }).Play(ins, 1, 0, seed); err != nil {
		t.Fatal(err)
	}
	if f.maxIn != limit || f.calls.Load() != 6 {
		t.Fatalf("max %d in flight over %d calls; want %d over 6", f.maxIn, f.calls.Load(), limit)
	}
	if _, err := NewClient(ClientOptions{BaseURL: "ftp://x", Model: "m"}); !errors.Is(err, ErrOptions) {
		t.Fatalf("ftp URL: %v", err)
	}
}
