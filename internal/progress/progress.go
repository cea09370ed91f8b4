// Package progress draws the progress of long jobs on a terminal or in a log.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// Bar reports how far a long job has got. On a terminal it redraws one bar
// in place; otherwise it prints a plain line at most every 10 % so logs stay
// readable.
type Bar struct {
	w        io.Writer
	label    string
	total    int
	tty      bool
	start    time.Time
	lastPct  int
	lastDraw time.Time
}

// IsTerminal reports whether w is a character device (a terminal).
func IsTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// New starts a bar of total items labelled label on w.
func New(w io.Writer, label string, total int) *Bar {
	return &Bar{w: w, label: label, total: total, tty: IsTerminal(w), start: time.Now(), lastPct: -1}
}

// Set reports done items of the total.
func (p *Bar) Set(done int) {
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

// Finish ends the bar (a newline after a terminal's bar).
func (p *Bar) Finish() {
	if p.tty && p.total > 0 {
		fmt.Fprintln(p.w)
	}
}

// To returns a function that starts bars on w and hands back their Set
// and Finish: the shape of evaluate.Progress and of env.ParallelRange's
// callback.
func To(w io.Writer) func(label string, total int) (set func(done int), finish func()) {
	return func(label string, total int) (func(int), func()) {
		p := New(w, label, total)
		return p.Set, p.Finish
	}
}
