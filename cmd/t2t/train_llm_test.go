package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// TestTrainLLMEngineerFlags runs a scripted training run whose engineer is
// the llm strategy pointed at a real HTTP server speaking the OpenAI chat
// format: the proposal it returns is applied to the next stage. Then a run
// with --engineer-retry resample, whose first answer is not JSON: the retry
// sends the first prompt again at --engineer-retry-temperature.
func TestTrainLLMEngineerFlags(t *testing.T) {
	var calls, garbage atomic.Int32
	var mu sync.Mutex
	var seen []string // per request: its temperature and number of messages
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		calls.Add(1)
		var req struct {
			Temperature float64           `json:"temperature"`
			Messages    []json.RawMessage `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("request body: %v", err)
		}
		mu.Lock()
		seen = append(seen, fmt.Sprintf("%g/%d", req.Temperature, len(req.Messages)))
		mu.Unlock()
		if garbage.Add(-1) >= 0 {
			json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": "Agent 0: DOWN"}, "finish_reason": "stop"}}})
			return
		}
		var sizes []string
		for s := 3; s <= 10; s++ {
			sizes = append(sizes, fmt.Sprintf(`{"size":%d,"data_ratio":0.125,"hole_ratio":0.1,"wait_ratio":0.2}`, s))
		}
		answer := `<think>make it easier</think>{"rationale":"lower holes","config":{"sizes":[` + strings.Join(sizes, ",") + `],"agents":2,"instances":32}}`
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": answer}, "finish_reason": "stop"}}})
	}))
	defer srv.Close()
	code, out, e := t2t(t, "train", "--policy", "scripted", "--stages", "2", "--instances", "32", "--val-per-size", "1", "--eval-per-size", "1",
		"--strategy", "llm", "--engineer-url", srv.URL+"/v1", "--engineer-model", "m")
	if code != 0 {
		t.Fatalf("exit %d: %s\n%s", code, e, out)
	}
	if calls.Load() == 0 {
		t.Fatal("the engineer never called the endpoint")
	}
	if !strings.Contains(out, "hole 0.20→0.10") {
		t.Fatalf("the proposal was not applied:\n%s", out)
	}
	if code, _, e := t2t(t, "train", "--strategy", "llm"); code != 2 || !strings.Contains(e, "--engineer URL") {
		t.Fatalf("llm without an endpoint: exit %d, %q", code, e)
	}

	mu.Lock()
	seen = nil
	mu.Unlock()
	garbage.Store(1)
	code, out, e = t2t(t, "train", "--policy", "scripted", "--stages", "2", "--instances", "32", "--val-per-size", "1", "--eval-per-size", "1",
		"--strategy", "llm", "--engineer-url", srv.URL+"/v1", "--engineer-model", "m",
		"--engineer-temperature", "0", "--engineer-retry", "resample", "--engineer-retry-temperature", "0.9")
	if code != 0 || !strings.Contains(out, "hole 0.20→0.10") {
		t.Fatalf("resampled retry: exit %d: %s\n%s", code, e, out)
	}
	mu.Lock()
	got := strings.Join(seen, " ")
	mu.Unlock()
	if got != "0/2 0.9/2" { // the first prompt greedy, then the same two messages at 0.9
		t.Fatalf("requests (temperature/messages): %s, want 0/2 0.9/2", got)
	}
	for _, bad := range [][]string{{"--engineer-retry", "again"}, {"--engineer-retry", "resample", "--engineer-retry-temperature", "0"}} {
		args := append([]string{"train", "--policy", "scripted", "--strategy", "llm", "--engineer-url", srv.URL + "/v1", "--engineer-model", "m"}, bad...)
		if code, _, e := t2t(t, args...); code != 2 || !strings.Contains(e, strings.TrimPrefix(bad[len(bad)-2], "--")) {
			t.Errorf("%v: exit %d, %q", bad, code, e)
		}
	}
}
