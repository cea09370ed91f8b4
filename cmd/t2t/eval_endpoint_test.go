package main

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/gridnet"
)

// TestEvalEndpointDirectSolver evaluates an OpenAI-compatible endpoint as a
// direct solver over real HTTP. The test server knows every instance of the
// suite and answers each prompt with that instance's optimal plan, so every
// answer must come back valid and optimal — which checks the prompt, the
// request, the answer parsing and the tables end to end. A second run
// answers from the cache without calling the server.
func TestEvalEndpointDirectSolver(t *testing.T) {
	spec := env.QuickSpec(2026, 1)
	ins, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		t.Fatal(err)
	}
	answers, compact := map[string]string{}, map[string]bool{}
	compactOpts, err := env.PromptStyle(env.PromptCompact)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range ins {
		acts, err := gridnet.OptimalActions(in)
		if err != nil {
			t.Fatal(err)
		}
		moves := make([][]env.Move, len(in.Agents))
		for i, a := range acts {
			moves[i%len(in.Agents)] = append(moves[i%len(in.Agents)], env.Move(a))
		}
		answers[env.RenderPrompt(in, env.PromptOptions{})] = env.FormatMoves(moves) // the client's default prompt
		// --prompt compact's prompt, answered alike:
		c := env.RenderPrompt(in, compactOpts)
		answers[c], compact[c] = env.FormatMoves(moves), true
	}
	var (
		mu                  sync.Mutex
		calls, compactCalls int
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role, Content string
			} `json:"messages"`
		}
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model != "solver" {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		mu.Lock()
		calls++
		mu.Unlock()
		answer := "I do not know."
		for _, m := range req.Messages {
			for prompt, a := range answers {
				if m.Role == "user" && strings.Contains(m.Content, prompt) {
					answer = a
					if compact[prompt] {
						mu.Lock()
						compactCalls++
						mu.Unlock()
					}
				}
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": answer}}}})
	}))
	defer srv.Close()
	dir := t.TempDir()
	args := []string{"eval", "--policy", "endpoint", "--policy-url", srv.URL + "/v1", "--policy-model", "solver", "--suite", "quick", "--per-size", "1", "--out", dir}
	if code, _, e := t2t(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, e)
	}
	ev := readEvalJSON(t, dir)
	if n := int64(len(ins)); ev.Total.Episodes != n || ev.Total.Valid != n || ev.Total.Optimal != n {
		t.Fatalf("total %+v, want all %d valid and optimal", ev.Total, n)
	}
	if calls != len(ins) {
		t.Fatalf("%d calls for %d instances", calls, len(ins))
	}
	if code, _, e := t2t(t, args...); code != 0 || calls != len(ins) {
		t.Fatalf("rerun: exit %d (%s), %d calls: the cache was not used", code, e, calls)
	}
	// --prompt compact sends t2t sft's compact prompt: another policy, played afresh.
	dir2 := t.TempDir()
	args = append(args[:len(args)-1], dir2, "--prompt", "compact")
	if code, _, e := t2t(t, args...); code != 0 {
		t.Fatalf("--prompt compact: exit %d: %s", code, e)
	}
	if ev := readEvalJSON(t, dir2); calls != 2*len(ins) || compactCalls != len(ins) || ev.Total.Valid != int64(len(ins)) {
		t.Fatalf("--prompt compact: %d calls, %d with the compact prompt, %d valid; want %d of each", calls-len(ins), compactCalls, ev.Total.Valid, len(ins))
	}
	if code, _, _ := t2t(t, "eval", "--policy", "endpoint", "--out", dir); code != 2 {
		t.Fatalf("endpoint without a URL: exit %d, want 2", code)
	}
}
