package serve_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"

	"github.com/t2t-lab/t2t/serve"
)

// stuckClient is a ResponseWriter whose writes from the second on (the first token: the first
// is the role chunk sent before generation) block until released: a client that has stopped
// reading its stream.
type stuckClient struct {
	h       http.Header
	writes  int
	once    sync.Once
	blocked chan struct{} // closed at the blocking write
	release chan struct{}
}

func (c *stuckClient) Header() http.Header { return c.h }
func (c *stuckClient) WriteHeader(int)     {}
func (c *stuckClient) Flush()              {}
func (c *stuckClient) Write(b []byte) (int, error) {
	if c.writes++; c.writes < 2 {
		return len(b), nil
	}
	c.once.Do(func() { close(c.blocked) })
	<-c.release
	return len(b), nil
}

// A streaming client that stops reading must not hold the model: another request is served
// while the first one's writes are stuck, and the stuck one ends once its client reads again.
func TestStuckStreamDoesNotBlockOthers(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	s, _, c := srvStart(t, lm, serve.Options{})
	stuck := &stuckClient{h: http.Header{}, blocked: make(chan struct{}), release: make(chan struct{})}
	req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions",
		strings.NewReader(`{"model":"tiny","stream":true,"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`))
	req.Host = "localhost" // httptest's example.com is not served without an API key (origin.go)
	first := make(chan struct{})
	go func() {
		s.ServeHTTP(stuck, req)
		close(first)
	}()
	select {
	case <-stuck.blocked:
	case <-first:
		t.Fatal("the streaming request ended without writing")
	}
	// Liveness, not speed: before the writes left the model lock this waited forever.
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := srvChatParams("tiny", 1)
	p.MaxTokens = openai.Int(4)
	_, err := c.Chat.Completions.New(ctx, p)
	close(stuck.release)
	<-first
	if err != nil {
		t.Fatalf("a second request while a stream's client is stuck: %v", err)
	}
}
