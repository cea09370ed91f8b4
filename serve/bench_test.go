package serve_test

import (
	"context"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/t2t-lab/t2t/serve"
)

// BenchmarkChatCompletion: one request (n = 2, 16 tokens) over HTTP to the tiny model.
func BenchmarkChatCompletion(b *testing.B) {
	lm := srvCheckpoint(b, 1)
	_, _, c := srvStart(b, lm, serve.Options{})
	p := srvChatParams("tiny", 1)
	p.MaxTokens = openai.Int(16)
	ctx := context.Background()
	for b.Loop() {
		if _, err := c.Chat.Completions.New(ctx, p); err != nil {
			b.Fatal(err)
		}
	}
}
