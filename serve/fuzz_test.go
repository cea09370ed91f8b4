package serve_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/serve"
)

// fuzzServer serves the tiny checkpoint with small limits, so that each fuzzed request that
// passes validation generates a few tokens at most.
func fuzzServer(f *testing.F) *serve.Server {
	lm := srvCheckpoint(f, 8000)
	s, err := serve.New(lm, serve.Options{DefaultMaxTokens: 3, MaxTokens: 4, MaxN: 2, MaxRows: 4, MaxTopLogprobs: 3,
		MaxPromptTokens: 64, MaxMemory: 1 << 30, MaxQueue: 4, Seed: 1})
	if err != nil {
		f.Fatal(err)
	}
	return s
}

// fuzzCheck serves one request in process and fails on a status outside 2xx and 4xx, or on a
// JSON answer that is not valid JSON.
func fuzzCheck(t *testing.T, s *serve.Server, req *http.Request) {
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	if rec.Code < 200 || rec.Code >= 300 && rec.Code < 400 || rec.Code >= 500 {
		t.Fatalf("%s %s: status %d: %s", req.Method, req.URL, rec.Code, rec.Body.Bytes())
	}
	if strings.HasPrefix(rec.Header().Get("Content-Type"), "application/json") && !json.Valid(rec.Body.Bytes()) {
		t.Fatalf("%s %s: %d with invalid JSON %q", req.Method, req.URL, rec.Code, rec.Body.Bytes())
	}
}

func fuzzBody(f *testing.F, path string, seeds []string) {
	s := fuzzServer(f)
	for _, sd := range seeds {
		f.Add([]byte(sd))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Host = "localhost" // httptest's example.com is not served without an API key (origin.go)
		fuzzCheck(t, s, req)
	})
}

// FuzzChatCompletions: any body of POST /v1/chat/completions is answered 2xx or 4xx.
func FuzzChatCompletions(f *testing.F) {
	fuzzBody(f, "/v1/chat/completions", []string{
		`{"model":"tiny","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"tiny","n":2,"max_tokens":4,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"}]}]}`,
		`{"model":"tiny","logprobs":true,"top_logprobs":3,"seed":7,"temperature":0,"stop":["a","<|im_end|>"],"return_tokens_as_token_ids":true,"messages":[{"role":"user","content":"<|im_start|>x"}]}`,
		`{"model":"tiny","top_p":0.5,"top_k":2,"max_completion_tokens":2,"chat_template_kwargs":{"enable_thinking":false},"messages":[{"role":"assistant","content":null,"reasoning_content":"r"},{"role":"user","content":"q"}]}`,
		`{"model":"tiny","n":16,"max_tokens":40000,"messages":[{"role":"user","content":"x"}]}`,
		`{"model":"tiny","tools":[{}],"response_format":{"type":"json_object"},"messages":[{"role":"tool","content":"t"}]}`,
		`{"model":"other","messages":[]}`,
		`{"messages":[{"role":"dev","content":1}]}`,
		`{"model":"tiny","max_tokens":-1,"temperature":3,"n":0,"stop":"","messages":[{"role":"user","content":"a"}]}`,
		`[1,2]`, `{"model":`, ``, `null`,
	})
}

// FuzzCompletions: any body of POST /v1/completions is answered 2xx or 4xx.
func FuzzCompletions(f *testing.F) {
	fuzzBody(f, "/v1/completions", []string{
		`{"model":"tiny","prompt":"hi"}`,
		`{"model":"tiny","prompt":["a","b"],"n":2,"max_tokens":3,"echo":true,"logprobs":2,"stream":true,"stream_options":{"include_usage":true}}`,
		`{"model":"tiny","prompt":[1,2,3],"stop":"a","seed":3,"temperature":0}`,
		`{"model":"tiny","prompt":[[1,2],[3]],"return_tokens_as_token_ids":true,"logprobs":0}`,
		`{"model":"tiny","prompt":[99999999,-1]}`,
		`{"model":"tiny","prompt":[[]]}`,
		`{"model":"tiny","prompt":[],"max_tokens":1e9}`,
		`{"model":"tiny","prompt":[1,"a"],"n":1e3}`,
		`{"model":"tiny","prompt":null}`, `{"prompt":{}}`, `"x"`, ``,
	})
}

// FuzzRequest: any method, path and body on any route is answered 2xx or 4xx.
func FuzzRequest(f *testing.F) {
	s := fuzzServer(f)
	for _, c := range []struct{ method, path, body string }{
		{"GET", "/v1/models", ""}, {"GET", "/v1/models/tiny", ""}, {"GET", "/v1/models/a/b%2F..", ""}, {"GET", "/health", ""},
		{"DELETE", "/v1/models", ""}, {"POST", "/v1/chat/completions", `{"model":"tiny","messages":[{"role":"user","content":"hi"}]}`},
		{"PUT", "/v1/completions", `{}`}, {"GET", "/nope", ""}, {"TRACE", "/", ""},
	} {
		f.Add(c.method, c.path, []byte(c.body))
	}
	f.Fuzz(func(t *testing.T, method, path string, body []byte) {
		req, err := http.NewRequest(method, "http://t2t"+path, bytes.NewReader(body))
		if err != nil || req.URL.Path == "" || req.URL.Path[0] != '/' {
			return // not a request a client can send
		}
		fuzzCheck(t, s, req)
	})
}
