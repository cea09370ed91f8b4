package engineer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/env"
)

// engStep answers one request of the scripted server; req is what it got
// (already recorded).
type engStep func(t *testing.T, w http.ResponseWriter, r *http.Request, req chatRequest)

// engServer is an OpenAI-compatible test endpoint that plays a script:
// request i gets step i (the last step repeats).
type engServer struct {
	t     *testing.T
	srv   *httptest.Server
	mu    sync.Mutex
	steps []engStep
	reqs  []chatRequest
	auth  []string
}

func newEngServer(t *testing.T, steps ...engStep) *engServer {
	s := &engServer{t: t, steps: steps}
	s.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
			t.Errorf("unexpected request %s %s", r.Method, r.URL.Path)
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		s.auth = append(s.auth, r.Header.Get("Authorization"))
		step := s.steps[min(len(s.reqs), len(s.steps))-1]
		s.mu.Unlock()
		step(t, w, r, req)
	}))
	t.Cleanup(s.srv.Close)
	return s
}

func (s *engServer) requests() []chatRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]chatRequest(nil), s.reqs...)
}

// engReply answers with content and a usage block of 1000 tokens.
func engReply(content string) engStep {
	return func(t *testing.T, w http.ResponseWriter, _ *http.Request, _ chatRequest) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "x", "object": "chat.completion",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 900, "completion_tokens": 100, "total_tokens": 1000},
		})
	}
}

func engStatus(code int) engStep {
	return func(t *testing.T, w http.ResponseWriter, _ *http.Request, _ chatRequest) {
		http.Error(w, `{"error":{"message":"boom"}}`, code)
	}
}

// engAnswerText renders a model answer holding c.
func engAnswerText(rationale string, c env.Config) string {
	b, err := json.Marshal(map[string]any{"rationale": rationale, "config": c})
	if err != nil {
		panic(err)
	}
	return string(b)
}

// engGoodConfig is a valid, feasible edit of the hand history's last config.
func engGoodConfig() env.Config {
	c := engHandHistory().Stages[2].Config.Clone()
	c.Sizes[6].DataRatio += 0.05
	c.Sizes[7].DataRatio -= 0.05
	c.Sizes[4].WaitRatio = 0.4
	return c
}

func engLLM(t *testing.T, s *engServer, mod func(*Options)) *LLM {
	t.Helper()
	o := Options{LLM: LLMOptions{BaseURL: s.srv.URL + "/v1", Model: "policy-ckpt", APIKey: "sk-test", Temperature: 0.6, MaxTokens: 2048,
		Modules: Modules{F: true, G: true, H: true, HistoryNoRound0: true, T: true}, Backoff: -1, Timeout: 10 * time.Second}}
	if mod != nil {
		mod(&o)
	}
	l, err := NewLLM(o)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func engPropose(t *testing.T, l *LLM, h *History) Proposal {
	t.Helper()
	p, err := l.Propose(context.Background(), h)
	if err != nil {
		t.Fatalf("Propose returned an error: %v", err)
	}
	if err := p.Config.Validate(); err != nil {
		t.Fatalf("proposal invalid: %v", err)
	}
	return p
}

// (1) A valid proposal, wrapped in thinking and a fence, is accepted as is.
func TestLLMValid(t *testing.T) {
	good := engGoodConfig()
	s := newEngServer(t, engReply("<think>size 9 is in the band, so {more} data</think>\nHere:\n```json\n"+engAnswerText("more data at 9", good)+"\n```"))
	l := engLLM(t, s, nil)
	h := engHandHistory()
	p := engPropose(t, l, h)
	if p.Fallback || p.Config.Hash() != good.Hash() || p.Rationale != "more data at 9" {
		t.Fatalf("got %+v", p)
	}
	if len(p.Attempts) != 1 || !p.Attempts[0].Accepted || p.Attempts[0].Reason != "accepted" {
		t.Fatalf("attempts %+v", p.Attempts)
	}
	want, _ := BuildPrompt(h, Modules{F: true, G: true, H: true, HistoryNoRound0: true, T: true}, 0)
	if p.Attempts[0].PromptHash != want.Hash || p.Attempts[0].Parsed == "" || p.Attempts[0].Projected == "" {
		t.Errorf("attempt record %+v", p.Attempts[0])
	}
	reqs := s.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	r := reqs[0]
	if r.Model != "policy-ckpt" || r.Temperature != 0.6 || r.MaxTokens != 2048 || len(r.Messages) != 2 ||
		r.Messages[0].Role != "system" || r.Messages[0].Content != want.System || r.Messages[1].Content != want.User {
		t.Errorf("request %+v", r)
	}
	if s.auth[0] != "Bearer sk-test" {
		t.Errorf("auth header %q", s.auth[0])
	}
	if calls, tokens := l.Usage(h.RunID); calls != 1 || tokens != 1000 {
		t.Errorf("usage %d calls %d tokens", calls, tokens)
	}
}

// (2) Invalid JSON is retried with the parse error fed back.
func TestLLMInvalidJSONThenValid(t *testing.T) {
	good := engGoodConfig()
	bad := `{"rationale": "x", "config": {"sizes": [}]}`
	s := newEngServer(t, engReply(bad), func(t *testing.T, w http.ResponseWriter, r *http.Request, req chatRequest) {
		n := len(req.Messages)
		if n != 4 || req.Messages[2].Role != "assistant" || req.Messages[2].Content != bad ||
			req.Messages[3].Role != "user" || !strings.Contains(req.Messages[3].Content, "Your answer was rejected: "+ErrNoJSON.Error()) {
			t.Errorf("follow-up not as expected: %+v", req.Messages[min(2, n):])
		}
		engReply(engAnswerText("fixed", good))(t, w, r, req)
	})
	p := engPropose(t, engLLM(t, s, nil), engHandHistory())
	if p.Fallback || p.Config.Hash() != good.Hash() || len(p.Attempts) != 2 || p.Attempts[0].Accepted || !strings.Contains(p.Attempts[0].Reason, "not valid JSON") {
		t.Fatalf("got %+v", p)
	}
	if p.Attempts[0].Raw != bad || p.Attempts[0].Parsed != "" {
		t.Errorf("rejected attempt record %+v", p.Attempts[0])
	}
}

// RetryResample asks the first prompt again at RetryTemperature after each rejected answer
// (the first attempt keeps Temperature), and the attempts are recorded as in a conversation.
func TestLLMResampleRetry(t *testing.T) {
	good := engGoodConfig()
	s := newEngServer(t, engReply(`{"rationale": "x", "config": {`), engReply("no json here"), engReply(engAnswerText("fresh", good)))
	l := engLLM(t, s, func(o *Options) {
		o.LLM.Temperature, o.LLM.Retry, o.LLM.RetryTemperature = 0, RetryResample, 0.9
	})
	p := engPropose(t, l, engHandHistory())
	if p.Fallback || p.Config.Hash() != good.Hash() || len(p.Attempts) != 3 || p.Attempts[0].Accepted || p.Attempts[1].Accepted {
		t.Fatalf("got %+v", p)
	}
	reqs := s.requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	for i, want := range []float64{0, 0.9, 0.9} {
		if reqs[i].Temperature != want {
			t.Errorf("request %d at temperature %g, want %g", i, reqs[i].Temperature, want)
		}
		if len(reqs[i].Messages) != 2 || reqs[i].Messages[0] != reqs[0].Messages[0] || reqs[i].Messages[1] != reqs[0].Messages[1] {
			t.Errorf("request %d is not the first prompt again: %+v", i, reqs[i].Messages)
		}
	}
	// Bad retry settings are refused before any call.
	for _, o := range []LLMOptions{{Retry: "again"}, {Retry: RetryResample}, {Retry: RetryResample, RetryTemperature: 2.5}} {
		o.BaseURL, o.Model = s.srv.URL+"/v1", "m"
		if _, err := NewLLM(Options{LLM: o}); !errors.Is(err, ErrOptions) {
			t.Errorf("retry %q at %g: err %v, want ErrOptions", o.Retry, o.RetryTemperature, err)
		}
	}
}

// (3) Out-of-range values are projected (as in the paper) and accepted
// without a retry; the attempt says what the projection changed.
func TestLLMOutOfRangeProjected(t *testing.T) {
	c := engGoodConfig()
	c.Sizes[0].HoleRatio = 1.4
	c.Sizes[1].WaitRatio = -0.2
	for i := range c.Sizes {
		c.Sizes[i].DataRatio *= 2 // sums to 2
	}
	s := newEngServer(t, engReply(engAnswerText("bold", c)))
	p := engPropose(t, engLLM(t, s, nil), engHandHistory())
	if len(s.requests()) != 1 || p.Fallback || len(p.Attempts) != 1 || !p.Attempts[0].Accepted {
		t.Fatalf("got %+v", p)
	}
	if p.Config.Hash() != c.Project().Hash() || p.Config.Sizes[0].HoleRatio != 1 || p.Config.Sizes[1].WaitRatio != 0 {
		t.Errorf("not the projection: %+v", p.Config)
	}
	a := p.Attempts[0]
	if !strings.HasPrefix(a.Reason, "accepted after projection") || !strings.Contains(a.Reason, "size 3: hole_ratio 1.40 → 1.00") || !strings.Contains(a.Parsed, `"hole_ratio":1.4`) {
		t.Errorf("attempt %+v", a)
	}
}

// (4) An infeasible config is retried with the feasibility error in the
// follow-up message; the server checks it got it.
func TestLLMInfeasibleRetried(t *testing.T) {
	hard := engGoodConfig()
	hard.Sizes[0].HoleRatio = 0.45
	good := engGoodConfig()
	var seen []env.Config
	feasible := func(c env.Config) error {
		seen = append(seen, c)
		if c.Sizes[0].HoleRatio > 0.4 {
			return fmt.Errorf("%w: size 3 cannot hold 2 agents with hole ratio %.2f", env.ErrInfeasible, c.Sizes[0].HoleRatio)
		}
		return nil
	}
	wantMsg := "the projected config is infeasible: env: infeasible request: size 3 cannot hold 2 agents with hole ratio 0.45"
	got := false
	s := newEngServer(t, engReply(engAnswerText("harder", hard)), func(t *testing.T, w http.ResponseWriter, r *http.Request, req chatRequest) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "user" && strings.Contains(last.Content, wantMsg) {
			got = true
			engReply(engAnswerText("softer", good))(t, w, r, req)
			return
		}
		t.Errorf("follow-up lacks the feasibility error: %q", last.Content)
		engReply("no")(t, w, r, req)
	})
	p := engPropose(t, engLLM(t, s, func(o *Options) { o.Feasible = feasible }), engHandHistory())
	if !got || p.Fallback || p.Config.Hash() != good.Hash() || p.Rationale != "softer" || len(p.Attempts) != 2 {
		t.Fatalf("got %+v", p)
	}
	if p.Attempts[0].Accepted || p.Attempts[0].Reason != wantMsg || p.Attempts[0].Projected == "" {
		t.Errorf("first attempt %+v", p.Attempts[0])
	}
	if len(seen) != 2 || seen[0].Hash() != hard.Hash() {
		t.Errorf("feasibility saw %d configs", len(seen))
	}
}

// (5) An HTTP 500 is retried after a backoff, with the same messages.
func TestLLMHTTP500ThenSuccess(t *testing.T) {
	good := engGoodConfig()
	s := newEngServer(t, engStatus(500), engReply(engAnswerText("ok", good)))
	p := engPropose(t, engLLM(t, s, func(o *Options) { o.LLM.Backoff = time.Millisecond }), engHandHistory())
	reqs := s.requests()
	if p.Fallback || p.Config.Hash() != good.Hash() || len(p.Attempts) != 2 || len(reqs) != 2 {
		t.Fatalf("got %+v", p)
	}
	if !strings.Contains(p.Attempts[0].Reason, "call failed: engineer: chat endpoint status 500") || p.Attempts[0].Raw != "" {
		t.Errorf("first attempt %+v", p.Attempts[0])
	}
	if len(reqs[1].Messages) != 2 || reqs[1].Messages[1].Content != reqs[0].Messages[1].Content {
		t.Error("the retry after an HTTP error changed the conversation")
	}
}

// (6) Garbage every time: the previous config is kept, with the reason.
func TestLLMAlwaysGarbage(t *testing.T) {
	s := newEngServer(t, engReply("I would rather not say."))
	h := engHandHistory()
	l := engLLM(t, s, nil)
	p := engPropose(t, l, h)
	if !p.Fallback || p.Config.Hash() != h.Stages[2].Config.Hash() {
		t.Fatalf("not the previous config: %+v", p)
	}
	if len(s.requests()) != 4 || len(p.Attempts) != 4 {
		t.Fatalf("%d requests, %d attempts; want 1+MaxRetries = 4", len(s.requests()), len(p.Attempts))
	}
	for _, a := range p.Attempts {
		if a.Accepted || !strings.Contains(a.Reason, "no JSON object") {
			t.Errorf("attempt %+v", a)
		}
	}
	if !strings.HasPrefix(p.Rationale, "kept the previous config: llm: no acceptable proposal in 4 attempt(s); last: ") {
		t.Errorf("rationale %q", p.Rationale)
	}
	// The conversation grew by an echo and a feedback per rejection.
	if n := len(s.requests()[3].Messages); n != 8 {
		t.Errorf("fourth request has %d messages", n)
	}
}

func TestLLMSchemaRules(t *testing.T) {
	h := engHandHistory()
	missing := engGoodConfig()
	missing.Sizes = missing.Sizes[:7]
	extra := engGoodConfig()
	extra.Sizes = append(extra.Sizes, env.SizeConfig{Size: 11, DataRatio: 0.1})
	dup := engGoodConfig()
	dup.Sizes[7].Size = 9
	zero := engGoodConfig()
	zero.Instances = 0
	for name, c := range map[string]env.Config{"missing": missing, "extra": extra, "duplicate": dup, "no instances": zero} {
		s := newEngServer(t, engReply(engAnswerText("x", c)), engReply(engAnswerText("y", engGoodConfig())))
		p := engPropose(t, engLLM(t, s, nil), h)
		if p.Fallback || len(p.Attempts) != 2 || !strings.Contains(p.Attempts[0].Reason, ErrSchema.Error()) || p.Attempts[0].Parsed == "" {
			t.Errorf("%s: %+v", name, p.Attempts)
		}
	}
	// Unknown field.
	s := newEngServer(t, engReply(`{"rationale": "x", "config": {}, "confidence": 0.9}`), engReply(engAnswerText("y", engGoodConfig())))
	p := engPropose(t, engLLM(t, s, nil), h)
	if len(p.Attempts) != 2 || !strings.Contains(p.Attempts[0].Reason, "confidence") {
		t.Errorf("unknown field: %+v", p.Attempts)
	}
}

func TestLLMTimeoutsAndErrors(t *testing.T) {
	hang := func(t *testing.T, w http.ResponseWriter, r *http.Request, _ chatRequest) { <-r.Context().Done() }
	noChoices := func(t *testing.T, w http.ResponseWriter, r *http.Request, _ chatRequest) {
		_, _ = w.Write([]byte(`{"error": {"message": "model overloaded"}}`))
	}
	notJSON := func(t *testing.T, w http.ResponseWriter, r *http.Request, _ chatRequest) {
		_, _ = w.Write([]byte("<html>"))
	}
	s := newEngServer(t, hang, noChoices, notJSON, engReply(engAnswerText("finally", engGoodConfig())))
	// One second: long enough for the replies that do come, on a loaded machine.
	p := engPropose(t, engLLM(t, s, func(o *Options) { o.LLM.Timeout = time.Second }), engHandHistory())
	if p.Fallback || len(p.Attempts) != 4 {
		t.Fatalf("got %+v", p)
	}
	for i, want := range []string{"deadline exceeded", "model overloaded", "decode response"} {
		if !strings.Contains(p.Attempts[i].Reason, want) {
			t.Errorf("attempt %d: %q lacks %q", i, p.Attempts[i].Reason, want)
		}
	}
	// Only timeouts: fallback after 1+MaxRetries calls. The timeout leaves a loaded machine
	// time to deliver each request to the server (20 ms did not, under a CI run's load).
	s = newEngServer(t, hang)
	p = engPropose(t, engLLM(t, s, func(o *Options) { o.LLM.Timeout = 500 * time.Millisecond; o.LLM.MaxRetries = 1 }), engHandHistory())
	if !p.Fallback || len(p.Attempts) != 2 || len(s.requests()) != 2 {
		t.Errorf("timeouts: %+v", p)
	}
}

func TestLLMCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	s := newEngServer(t, func(t *testing.T, w http.ResponseWriter, r *http.Request, _ chatRequest) {
		cancel()
		<-r.Context().Done()
	})
	l := engLLM(t, s, nil)
	_, err := l.Propose(ctx, engHandHistory())
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err %v", err)
	}
	// Cancelled during the backoff.
	ctx2, cancel2 := context.WithCancel(context.Background())
	s = newEngServer(t, func(t *testing.T, w http.ResponseWriter, r *http.Request, _ chatRequest) {
		cancel2()
		http.Error(w, "down", http.StatusServiceUnavailable)
	})
	l = engLLM(t, s, func(o *Options) { o.LLM.Backoff = time.Hour })
	if _, err := l.Propose(ctx2, engHandHistory()); !errors.Is(err, context.Canceled) {
		t.Errorf("backoff: err %v", err)
	}
}

func TestLLMCallBudget(t *testing.T) {
	s := newEngServer(t, engReply("garbage"))
	l := engLLM(t, s, func(o *Options) { o.LLM.CallBudget = 2 })
	h := engHandHistory()
	p := engPropose(t, l, h)
	if !p.Fallback || len(p.Attempts) != 3 || !strings.Contains(p.Rationale, "call budget of 2 calls per run spent") || !strings.HasPrefix(p.Attempts[2].Reason, "no call: ") {
		t.Fatalf("got %q, %d attempts", p.Rationale, len(p.Attempts))
	}
	p = engPropose(t, l, h)
	if !p.Fallback || len(p.Attempts) != 1 || len(s.requests()) != 2 {
		t.Fatalf("second proposal made calls: %+v", p)
	}
	if calls, _ := l.Usage(h.RunID); calls != 2 {
		t.Errorf("usage %d", calls)
	}
	// Another run has its own budget.
	h2 := engHandHistory()
	h2.RunID = "other"
	engPropose(t, l, h2)
	if calls, _ := l.Usage("other"); calls != 2 || len(s.requests()) != 4 {
		t.Errorf("other run: %d calls, %d requests", calls, len(s.requests()))
	}
}

func TestLLMTokenBudget(t *testing.T) {
	h := engHandHistory()
	m := Modules{T: true}
	pr, err := BuildPrompt(h, m, 0)
	if err != nil {
		t.Fatal(err)
	}
	need := ApproxTokens(pr.System) + ApproxTokens(pr.User)
	s := newEngServer(t, engReply(engAnswerText("ok", engGoodConfig())))
	l := engLLM(t, s, func(o *Options) { o.LLM.Modules = m; o.LLM.RunTokenBudget = 1000 + need - 1 })
	if p := engPropose(t, l, h); p.Fallback {
		t.Fatalf("first proposal: %q", p.Rationale)
	}
	p := engPropose(t, l, h)
	if !p.Fallback || !strings.Contains(p.Rationale, "token budget") || len(s.requests()) != 1 {
		t.Fatalf("second proposal: %q", p.Rationale)
	}
	// A prompt over the prompt budget falls back without a call.
	l = engLLM(t, s, func(o *Options) { o.LLM.TokenBudget = 10 })
	p = engPropose(t, l, h)
	if !p.Fallback || !strings.Contains(p.Rationale, ErrTokenBudget.Error()) || len(s.requests()) != 1 {
		t.Fatalf("prompt budget: %q", p.Rationale)
	}
	// Without a usage block, tokens are approximated.
	s2 := newEngServer(t, func(t *testing.T, w http.ResponseWriter, r *http.Request, _ chatRequest) {
		_, _ = w.Write([]byte(`{"choices": [{"message": {"role": "assistant", "content": ` + strconvQuote(engAnswerText("ok", engGoodConfig())) + `}}]}`))
	})
	l = engLLM(t, s2, func(o *Options) { o.LLM.Modules = m })
	engPropose(t, l, h)
	if _, tok := l.Usage(h.RunID); tok <= need {
		t.Errorf("approximate usage %d, prompt alone %d", tok, need)
	}
}

func strconvQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func TestLLMEmptyHistoryAndConcurrency(t *testing.T) {
	base := env.DefaultLocalConfig()
	c := base.Clone()
	c.Sizes[0].HoleRatio = 0.1
	s := newEngServer(t, engReply(engAnswerText("round 0", c)))
	l := engLLM(t, s, func(o *Options) { o.Base = &base })
	p := engPropose(t, l, nil)
	if p.Fallback || p.Config.Hash() != c.Hash() {
		t.Errorf("nil history: %+v", p)
	}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			p, err := l.Propose(context.Background(), engHandHistory())
			if err != nil || p.Config.Validate() != nil {
				t.Errorf("concurrent: %v", err)
			}
		})
	}
	wg.Wait()
	if calls, _ := l.Usage("run-golden"); calls != 4 {
		t.Errorf("concurrent usage %d", calls)
	}
}
