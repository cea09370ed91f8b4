package daemon

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/testutil"
	"github.com/t2t-lab/t2t/train"
)

// TestServeRun: the run's endpoints are served on the address it prints,
// the hooks are in the options, and stop ends the server.
func TestServeRun(t *testing.T) {
	var opt train.Options
	st := testStatusStore(t)
	var out testutil.SyncBuffer
	stop, err := ServeRun("127.0.0.1:0", "n1", &opt, st, NewDashboard(st, nil, "r7", nil), &out, "t2t train: ")
	if err != nil {
		t.Fatal(err)
	}
	line := strings.TrimSpace(out.String())
	addr, ok := strings.CutPrefix(line, "t2t train: http=")
	if !ok || opt.OnState == nil {
		t.Fatalf("line %q, hooks set %v", line, opt.OnState != nil)
	}
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	stop()
	if resp, err := http.Get("http://" + addr + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("still served after stop")
	}
}

// TestServeUntil: h is served on the address printed until ctx ends; a bad
// address is ListenAndServe's error.
func TestServeUntil(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	lines := lineChan(make(chan string, 1))
	done := make(chan error, 1)
	h := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
	go func() { done <- ServeUntil(ctx, "127.0.0.1:0", h, lines, "p: ") }()
	addr, _ := strings.CutPrefix(strings.TrimSpace(<-lines), "p: http=")
	resp, err := http.Get("http://" + addr + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Fatalf("status %d", resp.StatusCode)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := ServeUntil(context.Background(), "127.0.0.1:x", h, io.Discard, "p: "); err == nil {
		t.Fatal("bad address served")
	}
}

// lineChan is a writer that sends each write on the channel.
type lineChan chan string

func (c lineChan) Write(p []byte) (int, error) {
	c <- string(p)
	return len(p), nil
}
