package torch

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// fakeWorker writes a shell script that stands in for the Python interpreter: StartWorker runs
// it with the worker's arguments, which it ignores.
func fakeWorker(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fake-python")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// helloFile writes a framed msgpack hello with the given protocol version.
func helloFile(t *testing.T, protocol int) string {
	t.Helper()
	body, err := msgpack.Marshal(map[string]any{"type": "hello", "protocol": protocol, "worker": "fake", "torch": "0", "device": "cpu"})
	if err != nil {
		t.Fatal(err)
	}
	frame := append([]byte{0, 0, byte(len(body) >> 8), byte(len(body))}, body...)
	p := filepath.Join(t.TempDir(), "hello.bin")
	if err := os.WriteFile(p, frame, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func startFake(t *testing.T, script string) (*Worker, error) {
	t.Helper()
	wk, err := StartWorker(context.Background(), WorkerOptions{Python: fakeWorker(t, script), Dir: t.TempDir()})
	if wk != nil {
		t.Cleanup(func() { _ = wk.Close() })
	}
	return wk, err
}

func TestFindPythonMissingTorch(t *testing.T) {
	_, err := FindPython(context.Background(), "/nonexistent/python3")
	if !errors.Is(err, ErrNoTorch) {
		t.Fatalf("err = %v, want ErrNoTorch", err)
	}
	for _, want := range []string{"/nonexistent/python3", "apt-get install python3-torch", "--python"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// An interpreter that runs but has no torch.
	_, err = FindPython(context.Background(), fakeWorker(t, "exit 1"))
	if !errors.Is(err, ErrNoTorch) || !strings.Contains(err.Error(), "no torch") {
		t.Fatalf("err = %v, want ErrNoTorch naming the missing import", err)
	}
}

func TestWorkerWrongProtocolVersion(t *testing.T) {
	_, err := startFake(t, "cat "+helloFile(t, 99)+"; cat >/dev/null")
	if !errors.Is(err, ErrVersion) {
		t.Fatalf("err = %v, want ErrVersion", err)
	}
	if !strings.Contains(err.Error(), "speaks protocol 99, t2t speaks 3") {
		t.Errorf("error %q does not name both versions", err)
	}
}

func TestWorkerGarbageHello(t *testing.T) {
	_, err := startFake(t, `printf 'not a frame at all'; cat >/dev/null`)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol", err)
	}
}

func TestWorkerExitsBeforeHello(t *testing.T) {
	_, err := startFake(t, `echo "ModuleNotFoundError: No module named 'torch'" >&2; exit 3`)
	var de *DiedError
	if !errors.As(err, &de) || !errors.Is(err, ErrWorkerDied) {
		t.Fatalf("err = %v, want a *DiedError", err)
	}
	if !strings.Contains(de.Status, "exit status 3") || !strings.Contains(de.Stderr, "No module named 'torch'") {
		t.Errorf("died error %+v lacks the exit status or the stderr tail", de)
	}
}

func TestWorkerMalformedReply(t *testing.T) {
	// A valid hello, then a frame header announcing 4 GiB: the stream is desynchronised.
	wk, err := startFake(t, "cat "+helloFile(t, ProtocolVersion)+`; printf '\377\377\377\377'; cat >/dev/null`)
	if err != nil {
		t.Fatal(err)
	}
	err = wk.call("stats", map[string]any{}, nil, nil)
	if !errors.Is(err, ErrProtocol) {
		t.Fatalf("err = %v, want ErrProtocol", err)
	}
	<-wk.Exited() // a worker that broke the protocol is stopped
	if err := wk.call("stats", map[string]any{}, nil, nil); !errors.Is(err, ErrWorkerDied) {
		t.Fatalf("after a protocol error: %v, want ErrWorkerDied", err)
	}
}

func TestWorkerReplyForAnotherRequest(t *testing.T) {
	body, _ := msgpack.Marshal(map[string]any{"id": 42, "ok": true})
	frame := filepath.Join(t.TempDir(), "reply.bin")
	if err := os.WriteFile(frame, append([]byte{0, 0, 0, byte(len(body))}, body...), 0o644); err != nil {
		t.Fatal(err)
	}
	wk, err := startFake(t, "cat "+helloFile(t, ProtocolVersion)+"; cat "+frame+"; cat >/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	if err := wk.call("stats", map[string]any{}, nil, nil); !errors.Is(err, ErrProtocol) || !strings.Contains(err.Error(), "request 42, want 1") {
		t.Fatalf("err = %v, want ErrProtocol naming the ids", err)
	}
}
