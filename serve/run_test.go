package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

// t2t serve's loop (serve.Run): the API answers, a reload signal reloads the directory, and
// cancelling stops it.
func TestServeCommand(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	dir := lm.Dir
	_ = lm.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hup := make(chan os.Signal, 1)
	addrc := make(chan string, 1)
	reloads := make(chan error, 1)
	var out bytes.Buffer // read once Run has returned
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, serve.RunConfig{Dir: dir, Addr: "127.0.0.1:0", Engine: engine.Spec{Device: "cpu"},
			Options:  serve.Options{ModelName: "m", Seed: 1, DefaultMaxTokens: 4},
			Ready:    func(a string) { addrc <- a },
			Reloaded: func(_ int64, err error) { reloads <- err }}, hup, &out)
	}()
	var addr string
	select {
	case addr = <-addrc:
	case err := <-done:
		t.Fatalf("serve ended: %v", err)
	}
	revision := func() int {
		resp, err := http.Get("http://" + addr + "/v1/models")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var l struct {
			Data []struct {
				ID       string `json:"id"`
				Revision int    `json:"t2t_revision"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&l); err != nil || len(l.Data) != 1 || l.Data[0].ID != "m" {
			t.Fatalf("models: %v %+v", err, l)
		}
		return l.Data[0].Revision
	}
	if r := revision(); r != 0 {
		t.Fatalf("revision %d at start", r)
	}
	resp, err := http.Post("http://"+addr+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var cr struct {
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&cr); err != nil || resp.StatusCode != 200 || cr.Usage.CompletionTokens < 1 || cr.Usage.CompletionTokens > 4 {
		t.Fatalf("chat: %d %v %+v", resp.StatusCode, err, cr)
	}
	resp.Body.Close()
	hup <- syscall.SIGHUP
	if err := <-reloads; err != nil {
		t.Fatalf("reload: %v", err)
	}
	if r := revision(); r != 1 {
		t.Fatalf("revision %d after SIGHUP", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("serve: %v", err)
	}
	if s := out.String(); !strings.Contains(s, "serving m") || !strings.Contains(s, "reloaded") {
		t.Fatalf("output:\n%s", s)
	}

	// A directory without a checkpoint is a *LoadError wrapping the loader's error; bad options
	// are ErrOptions. Neither starts a listener.
	var le *serve.LoadError
	empty := t.TempDir()
	if err := serve.Run(context.Background(), serve.RunConfig{Dir: empty, Addr: "127.0.0.1:0"}, nil, &out); !errors.As(err, &le) || le.Dir != empty ||
		!errors.Is(err, textpolicy.ErrTokenizer) {
		t.Fatalf("empty directory: %v", err)
	}
	if err := serve.Run(context.Background(), serve.RunConfig{Dir: dir, Addr: "127.0.0.1:0", Options: serve.Options{MaxN: -1}}, nil, &out); !errors.Is(err, serve.ErrOptions) {
		t.Fatalf("MaxN -1: %v", err)
	}
}

// Serving off loopback without an API key warns; on loopback, or with a key, it does not.
func TestServeWarnsWithoutKeyOffLoopback(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	dir := lm.Dir
	_ = lm.Close()
	for _, tc := range []struct {
		addr, key string
		warn      bool
	}{{"0.0.0.0:0", "", true}, {"0.0.0.0:0", "k", false}, {"127.0.0.1:0", "", false}} {
		ctx, cancel := context.WithCancel(context.Background())
		var out bytes.Buffer
		err := serve.Run(ctx, serve.RunConfig{Dir: dir, Addr: tc.addr, Engine: engine.Spec{Device: "cpu"},
			Options: serve.Options{APIKey: tc.key}, Ready: func(string) { cancel() }}, nil, &out)
		cancel()
		if err != nil {
			t.Fatalf("%s key %q: %v", tc.addr, tc.key, err)
		}
		if got := bytes.Contains(out.Bytes(), []byte("WARNING")); got != tc.warn {
			t.Errorf("%s key %q: warning %v, want %v:\n%s", tc.addr, tc.key, got, tc.warn, out.String())
		}
	}
}
