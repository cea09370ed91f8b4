package cluster

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"time"
	"unicode"
)

// maxLogKinds bounds the kinds of repeated lines mlLogWriter tracks; further kinds share one.
const maxLogKinds = 64

// mlLogWriter turns memberlist's "[LEVEL] memberlist: text" log lines into slog records, and
// rate-limits its warnings and errors: per kind (the text without numbers, addresses and
// quoted parts), the first is logged, then at most one per every, carrying the count of the
// lines left out since. onLine (may be nil) counts every warning and error.
type mlLogWriter struct {
	logger *slog.Logger
	every  time.Duration
	onLine func(level string)
	now    func() time.Time

	mu    sync.Mutex
	kinds map[string]*logKind
}

type logKind struct {
	last       time.Time
	suppressed int
}

func newMLLogWriter(logger *slog.Logger, every time.Duration, onLine func(string), now func() time.Time) *mlLogWriter {
	if every <= 0 {
		every = 10 * time.Second
	}
	return &mlLogWriter{logger: logger, every: every, onLine: onLine, now: now, kinds: map[string]*logKind{}}
}

func (w *mlLogWriter) Write(p []byte) (int, error) {
	line := string(bytes.TrimSpace(p))
	level := slog.LevelInfo
	for _, l := range []struct {
		prefix string
		level  slog.Level
	}{
		{"[DEBUG] ", slog.LevelDebug},
		{"[INFO] ", slog.LevelInfo},
		{"[WARN] ", slog.LevelWarn},
		{"[ERR] ", slog.LevelError},
		{"[ERROR] ", slog.LevelError},
	} {
		if rest, ok := strings.CutPrefix(line, l.prefix); ok {
			line, level = rest, l.level
			break
		}
	}
	if level < slog.LevelWarn {
		w.logger.Log(context.Background(), level, "memberlist", slog.String("detail", line))
		return len(p), nil
	}
	if w.onLine != nil {
		w.onLine(strings.ToLower(level.String()))
	}
	if n, ok := w.admit(logKindOf(line)); ok {
		attrs := []any{slog.String("detail", line)}
		if n > 0 {
			attrs = append(attrs, slog.Int("repeated", n), slog.Duration("within", w.every))
		}
		w.logger.Log(context.Background(), level, "memberlist", attrs...)
	}
	return len(p), nil
}

// admit reports whether a line of kind k is logged now, and how many of its kind were left
// out since the last one logged.
func (w *mlLogWriter) admit(k string) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.kinds[k]
	if !ok {
		if len(w.kinds) >= maxLogKinds {
			k = "other"
			st, ok = w.kinds[k]
		}
		if !ok {
			st = &logKind{}
			w.kinds[k] = st
			st.last = w.now()
			return 0, true
		}
	}
	now := w.now()
	if now.Sub(st.last) < w.every {
		st.suppressed++
		return 0, false
	}
	n := st.suppressed
	st.last, st.suppressed = now, 0
	return n, true
}

// logKindOf is line without what varies between lines of one kind: digits, addresses and
// quoted parts, cut at 80 runes.
func logKindOf(line string) string {
	line = strings.TrimPrefix(line, "memberlist: ")
	var b strings.Builder
	quoted := false
	for _, r := range line {
		switch {
		case r == '"' || r == '\'':
			quoted = !quoted
		case quoted, unicode.IsDigit(r), r == '.', r == ':', r == '[', r == ']':
		default:
			b.WriteRune(r)
		}
		if b.Len() >= 80 {
			break
		}
	}
	if i := strings.Index(b.String(), " from="); i >= 0 {
		return b.String()[:i]
	}
	return b.String()
}
