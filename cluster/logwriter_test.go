package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// countHandler counts the records at each level and keeps their attributes.
type countHandler struct {
	mu      sync.Mutex
	byLevel map[slog.Level]int
	lines   []string
}

func (h *countHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countHandler) Handle(_ context.Context, r slog.Record) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.byLevel[r.Level]++
	var b strings.Builder
	r.Attrs(func(a slog.Attr) bool { b.WriteString(a.String() + " "); return true })
	h.lines = append(h.lines, b.String())
	return nil
}
func (h *countHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countHandler) WithGroup(string) slog.Handler      { return h }

func (h *countHandler) count(l slog.Level) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.byLevel[l]
}

// Repeated errors of one kind: the first is logged, then one per interval with the count of
// those left out; another kind is logged at once; every one is counted; INFO passes.
func TestLogWriterRateLimitsRepeatedErrors(t *testing.T) {
	h := &countHandler{byLevel: map[slog.Level]int{}}
	now := time.Unix(1000, 0)
	var counted atomic.Int64
	w := newMLLogWriter(slog.New(h), 10*time.Second, func(level string) {
		if level == "error" {
			counted.Add(1)
		}
	}, func() time.Time { return now })
	junk := func(i int) {
		w.Write([]byte("[ERR] memberlist: failed to decode packet: msgpack [pos " + string(rune('0'+i%10)) + "] from=10.0.0." + string(rune('0'+i%10)) + ":7946\n"))
	}
	for i := range 100 {
		junk(i)
	}
	if got := h.count(slog.LevelError); got != 1 {
		t.Fatalf("%d ERROR lines for 100 of one kind within the interval, want 1", got)
	}
	w.Write([]byte("[ERR] memberlist: another kind of failure\n"))
	w.Write([]byte("[INFO] memberlist: hello\n"))
	now = now.Add(10 * time.Second)
	junk(0)
	if got := h.count(slog.LevelError); got != 3 {
		t.Fatalf("%d ERROR lines, want 3 (first, other kind, the count)", got)
	}
	if last := h.lines[len(h.lines)-1]; !strings.Contains(last, "repeated=99") {
		t.Fatalf("the line after the interval %q lacks repeated=99", last)
	}
	if counted.Load() != 102 || h.count(slog.LevelInfo) != 1 {
		t.Fatalf("counted %d errors (want 102), %d INFO lines (want 1)", counted.Load(), h.count(slog.LevelInfo))
	}
}

// Junk UDP packets at a real node's gossip port: thousands of memberlist errors, a few log
// lines, every error counted by the hook.
func TestJunkGossipPacketsDoNotFloodTheLog(t *testing.T) {
	memLeakCheck(t)
	h := &countHandler{byLevel: map[slog.Level]int{}}
	var counted atomic.Int64
	cfg := memConfig()
	cfg.LogEvery = time.Hour // one line per kind for the whole test: no clock in the assertion
	cfg.OnLogLine = func(string) { counted.Add(1) }
	m, err := Join(t.Context(), cfg, memMeta("target"), slog.New(h))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Shutdown()
	conn, err := net.Dial("udp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	const sent = 2500
	for i := range sent {
		if _, err := conn.Write(bytes.Repeat([]byte{byte(i), 0xff}, 16)); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(time.Minute) // hang guard: UDP on loopback may drop a few
	for counted.Load() < sent/2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling a real socket's effect
	}
	n := counted.Load()
	if n < sent/2 {
		t.Fatalf("the hook counted %d of %d junk packets", n, sent)
	}
	if lines := h.count(slog.LevelError) + h.count(slog.LevelWarn); lines > 4 {
		t.Fatalf("%d WARN/ERROR lines for %d junk packets, want a few", lines, n)
	}
	t.Logf("%d junk packets counted, %d WARN/ERROR lines: %v", n, h.count(slog.LevelError)+h.count(slog.LevelWarn), h.lines)
}
