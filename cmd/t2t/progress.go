package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progress reports how far a long job has got. On a terminal it redraws
// one bar in place; otherwise it prints a plain line at most every 10% so
// logs stay readable.
type progress struct {
	w        io.Writer
	label    string
	total    int
	tty      bool
	start    time.Time
	lastPct  int
	lastDraw time.Time
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func newProgress(w io.Writer, label string, total int) *progress {
	return &progress{w: w, label: label, total: total, tty: isTerminal(w), start: time.Now(), lastPct: -1}
}

func (p *progress) set(done int) {
	if p.total <= 0 {
		return
	}
	pct := done * 100 / p.total
	if p.tty {
		if time.Since(p.lastDraw) < 100*time.Millisecond && done < p.total {
			return
		}
		p.lastDraw = time.Now()
		const width = 30
		fill := done * width / p.total
		fmt.Fprintf(p.w, "\r%s [%s%s] %d/%d %3d%% %s", p.label, strings.Repeat("=", fill), strings.Repeat(" ", width-fill), done, p.total, pct, time.Since(p.start).Round(time.Second))
		return
	}
	if pct/10 > p.lastPct/10 || (p.lastPct < 0 && done > 0) {
		p.lastPct = pct
		fmt.Fprintf(p.w, "%s: %d/%d (%d%%) %s\n", p.label, done, p.total, pct, time.Since(p.start).Round(time.Millisecond))
	}
}

func (p *progress) finish() {
	if p.tty && p.total > 0 {
		fmt.Fprintln(p.w)
	}
}
