package store

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// storeProxy is a TCP proxy in front of a Redis server that can swallow
// the next reply and cut the connection: the command ran on the server,
// the client never hears of it (an ambiguous failure).
type storeProxy struct {
	ln       net.Listener
	target   string
	dropNext atomic.Bool
	dropped  chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	conns    []net.Conn
}

func newStoreProxy(t *testing.T, target string) *storeProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &storeProxy{ln: ln, target: target, dropped: make(chan struct{}, 1)}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		for _, c := range p.conns {
			_ = c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *storeProxy) url() string { return "redis://" + p.ln.Addr().String() }

func (p *storeProxy) track(c net.Conn) {
	p.mu.Lock()
	p.conns = append(p.conns, c)
	p.mu.Unlock()
}

func (p *storeProxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = client.Close()
			continue
		}
		p.track(client)
		p.track(server)
		p.wg.Add(2)
		go func() { // client → server
			defer p.wg.Done()
			_, _ = io.Copy(server, client)
			_ = server.Close()
		}()
		go func() { // server → client, unless told to drop
			defer p.wg.Done()
			defer client.Close()
			defer server.Close()
			buf := make([]byte, 64<<10)
			for {
				n, err := server.Read(buf)
				if n > 0 && p.dropNext.CompareAndSwap(true, false) {
					p.dropped <- struct{}{}
					return
				}
				if n > 0 {
					if _, werr := client.Write(buf[:n]); werr != nil {
						return
					}
				}
				if err != nil {
					return
				}
			}
		}()
	}
}

// storeTestAmbiguous loses the reply of a RecordUnit that the server
// applied: the retry must not count the unit again and must report
// applied=true; a later delivery of the same unit reports false.
func storeTestAmbiguous(t *testing.T, open storeOpener) {
	base := open(t, Options{})
	ctx := context.Background()
	p := newStoreProxy(t, base.rdb.Options().Addr)
	logs := newStoreLogs(t)
	s, err := Open(ctx, Options{URL: p.url(), Prefix: base.opt.Prefix, MaxRetryElapsed: 10 * time.Second,
		InitialBackoff: time.Millisecond, MaxBackoff: 10 * time.Millisecond, Logger: storeSlog(logs)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rng, _ := storeRNG(t)
	sum := map[Key]*storeSum{}
	for i := range 3 {
		u := storeRandUnit(rng, "run-amb", 0, "val", fmt.Sprintf("u%d", i))
		// Unit 0 loads the script; the replies of units 1 and 2 are lost.
		if i > 0 {
			p.dropNext.Store(true)
		}
		ok, err := s.RecordUnit(ctx, u)
		if err != nil || !ok {
			t.Fatalf("RecordUnit %d: applied=%v err=%v", i, ok, err)
		}
		if i > 0 {
			select {
			case <-p.dropped:
			default:
				t.Fatalf("unit %d: no reply was dropped", i)
			}
		}
		storeAdd(sum, u)
		if ok, err := base.RecordUnit(ctx, u); ok || err != nil {
			t.Fatalf("redelivery of unit %d: applied=%v err=%v", i, ok, err)
		}
	}
	if w := logs.warnings(); len(w) < 2 {
		t.Fatalf("%d retries logged, want one per lost reply", len(w))
	}
	storeCheckAgg(t, base, "run-amb", 0, "val", storeExpected(sum), 3)
	// Losing the reply of a write that failed validation cannot happen: it
	// never reaches the server.
	if _, err := s.RecordUnit(ctx, UnitResult{RunID: "run-amb", Split: "val"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("invalid unit: %v", err)
	}
}
