package serve_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/t2t-lab/t2t/serve"
)

// With an API key, a request without it or with another is 401 before any work; /health needs
// none; the right key is served. A max_tokens above the server's limit is 422 even where the
// model's context would allow it.
func TestAPIKeyAndMaxTokensLimit(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, hs, wrong := srvStart(t, lm, serve.Options{APIKey: "s3cret", MaxTokens: 16})
	ctx := context.Background()
	_, err := wrong.Chat.Completions.New(ctx, srvChatParams("tiny", 1))
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnauthorized || ae.Code != "invalid_api_key" {
		t.Fatalf("wrong key: %v, want 401 invalid_api_key", err)
	}
	resp, err := http.Get(hs.URL + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no key: %d, want 401", resp.StatusCode)
	}
	if resp, err = http.Get(hs.URL + "/health"); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/health without a key: %v %v", resp, err)
	}
	resp.Body.Close()
	right := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("s3cret"), option.WithMaxRetries(0))
	p := srvChatParams("tiny", 1)
	p.MaxTokens = openai.Int(8)
	if _, err := right.Chat.Completions.New(ctx, p); err != nil {
		t.Fatalf("right key: %v", err)
	}
	p.MaxTokens = openai.Int(17)
	_, err = right.Chat.Completions.New(ctx, p)
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusUnprocessableEntity || ae.Code != "max_tokens_exceeded" || ae.Param != "max_tokens" {
		t.Fatalf("max_tokens over the limit: %v, want 422 max_tokens_exceeded", err)
	}
}
