package main

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cdpBrowser is a headless Chromium driven over the DevTools protocol on
// a pipe (--remote-debugging-pipe: JSON messages ended by NUL on fds 3
// and 4): the browser starts once, and a page is read the moment the test
// chooses, with no fixed render budget.
type cdpBrowser struct {
	t      *testing.T
	cmd    *exec.Cmd
	w      *os.File
	r      *bufio.Reader
	next   int
	events []cdpMessage // read while waiting for a reply, not yet waited for
}

type cdpMessage struct {
	ID        int             `json:"id"`
	SessionID string          `json:"sessionId"`
	Method    string          `json:"method"`
	Params    json.RawMessage `json:"params"`
	Result    json.RawMessage `json:"result"`
	Error     *struct {
		Code    int    `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// cdpStart starts Chromium bin headless with a window of w×h pixels; the
// test's cleanup ends it.
func cdpStart(t *testing.T, bin string, w, h int) *cdpBrowser {
	t.Helper()
	toR, toW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	fromR, fromW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
		"--user-data-dir="+t.TempDir(), fmt.Sprintf("--window-size=%d,%d", w, h), "--remote-debugging-pipe", "about:blank")
	cmd.ExtraFiles = []*os.File{toR, fromW} // fd 3: Chromium reads; fd 4: it writes
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	toR.Close()
	fromW.Close()
	b := &cdpBrowser{t: t, cmd: cmd, w: toW, r: bufio.NewReader(fromR)}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		// Browser.close ends Chromium and its helper processes (which
		// write into the profile folder until they are gone); the group
		// is killed only when that does not end it in time.
		msg, _ := json.Marshal(map[string]any{"id": -1, "method": "Browser.close"})
		toW.Write(append(msg, 0))
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-exited
		}
		toW.Close()
		fromR.Close()
	})
	return b
}

// call sends method (on session; "" the browser) and returns its result.
// A browser that does not answer within a minute is killed: the read then
// fails the test.
func (b *cdpBrowser) call(session, method string, params any) json.RawMessage {
	b.t.Helper()
	b.next++
	id := b.next
	msg, err := json.Marshal(map[string]any{"id": id, "sessionId": session, "method": method, "params": params})
	if err != nil {
		b.t.Fatal(err)
	}
	if _, err := b.w.Write(append(msg, 0)); err != nil {
		b.t.Fatalf("cdp %s: %v", method, err)
	}
	for {
		m := b.read(method)
		if m.ID == id {
			if m.Error != nil {
				b.t.Fatalf("cdp %s: %d %s", method, m.Error.Code, m.Error.Message)
			}
			return m.Result
		}
		if m.Method != "" {
			b.events = append(b.events, m)
		}
	}
}

// read reads the next message (for the call or event what).
func (b *cdpBrowser) read(what string) cdpMessage {
	b.t.Helper()
	stop := time.AfterFunc(time.Minute, func() { b.cmd.Process.Kill() })
	line, err := b.r.ReadBytes(0)
	stop.Stop()
	if err != nil {
		b.t.Fatalf("cdp %s: no answer from chromium: %v", what, err)
	}
	var m cdpMessage
	if err := json.Unmarshal(line[:len(line)-1], &m); err != nil {
		b.t.Fatalf("cdp %s: %v: %s", what, err, line)
	}
	return m
}

// wait returns once session had event method.
func (b *cdpBrowser) wait(session, method string) {
	b.t.Helper()
	for {
		if i := slices.IndexFunc(b.events, func(m cdpMessage) bool { return m.SessionID == session && m.Method == method }); i >= 0 {
			b.events = slices.Delete(b.events, 0, i+1)
			return
		}
		b.events = append(b.events, b.read(method))
	}
}

// open opens url in a new tab (scripts off unless js) once it has loaded,
// and returns the tab's session.
func (b *cdpBrowser) open(url string, js bool) string {
	b.t.Helper()
	var target struct {
		TargetID string `json:"targetId"`
	}
	var attached struct {
		SessionID string `json:"sessionId"`
	}
	cdpDecode(b.t, b.call("", "Target.createTarget", map[string]any{"url": "about:blank"}), &target)
	cdpDecode(b.t, b.call("", "Target.attachToTarget", map[string]any{"targetId": target.TargetID, "flatten": true}), &attached)
	s := attached.SessionID
	b.call(s, "Page.enable", struct{}{})
	if !js {
		b.call(s, "Emulation.setScriptExecutionDisabled", map[string]any{"value": true})
	}
	b.call(s, "Page.navigate", map[string]any{"url": url})
	b.wait(s, "Page.loadEventFired")
	return s
}

// eval evaluates a JavaScript expression in session's page, awaiting a
// promise, and returns its value as JSON.
func (b *cdpBrowser) eval(session, expr string) json.RawMessage {
	b.t.Helper()
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		Exception *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	cdpDecode(b.t, b.call(session, "Runtime.evaluate", map[string]any{"expression": expr, "awaitPromise": true, "returnByValue": true}), &r)
	if r.Exception != nil {
		b.t.Fatalf("%s: %s %s", expr, r.Exception.Text, r.Exception.Exception.Description)
	}
	return r.Result.Value
}

// html is session's DOM as HTML (scripts on or off).
func (b *cdpBrowser) html(session string) string {
	b.t.Helper()
	var doc struct {
		Root struct {
			NodeID int `json:"nodeId"`
		} `json:"root"`
	}
	var out struct {
		OuterHTML string `json:"outerHTML"`
	}
	cdpDecode(b.t, b.call(session, "DOM.getDocument", map[string]any{"depth": 0}), &doc)
	cdpDecode(b.t, b.call(session, "DOM.getOuterHTML", map[string]any{"nodeId": doc.Root.NodeID}), &out)
	return out.OuterHTML
}

// screenshot is session's page as PNG, the whole page (not only the window).
func (b *cdpBrowser) screenshot(session string) []byte {
	b.t.Helper()
	var r struct {
		Data string `json:"data"`
	}
	cdpDecode(b.t, b.call(session, "Page.captureScreenshot", map[string]any{"format": "png", "captureBeyondViewport": true}), &r)
	png, err := base64.StdEncoding.DecodeString(r.Data)
	if err != nil {
		b.t.Fatal(err)
	}
	return png
}

func cdpDecode(t *testing.T, raw json.RawMessage, v any) {
	t.Helper()
	if err := json.Unmarshal(raw, v); err != nil {
		t.Fatalf("cdp: %v: %s", err, raw)
	}
}

// TestCDPBrowser: the pipe-driven browser loads a page, runs its script,
// reads the DOM with scripts on and off, and takes a screenshot.
func TestCDPBrowser(t *testing.T) {
	bin := livePageChromium(t)
	page := "data:text/html,<p id=x>static</p><script>document.getElementById('x').textContent='scripted'; function later(){return new Promise(function(r){setTimeout(function(){r(6*7)},10)})}</script>"
	b := cdpStart(t, bin, 400, 300)
	on := b.open(page, true)
	if got := string(b.eval(on, "later()")); got != "42" {
		t.Errorf("awaited promise: %s, want 42", got)
	}
	if h := b.html(on); !strings.Contains(h, ">scripted<") {
		t.Errorf("scripts on: %s", h)
	}
	off := b.open(page, false)
	if h := b.html(off); !strings.Contains(h, ">static<") {
		t.Errorf("scripts off: %s", h)
	}
	if png := b.screenshot(on); len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Errorf("screenshot is not a PNG: %q", png[:min(8, len(png))])
	}
}
