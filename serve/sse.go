package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// sseWriteTimeout bounds one write of a stream to its client.
const sseWriteTimeout = 30 * time.Second

// errStreamFinished is what a send after finish returns.
var errStreamFinished = errors.New("serve: stream already finished")

// sse writes server-sent events: "data: <json>\n\n" per event, "data: [DONE]" at the end.
//
// Events are queued and written by a goroutine of their own, each write with a deadline
// (sseWriteTimeout), so that generation (which holds the model) never waits for a client: a
// client that stops reading delays only its own request, and once a write fails the stream's
// next send reports it, which ends that request's generation. finish ends the stream and waits
// for the writer; the handler calls it before returning.
type sse struct {
	w  http.ResponseWriter
	rc *http.ResponseController

	mu       sync.Mutex
	wake     *sync.Cond
	queue    [][]byte
	closed   bool
	err      error // the first failed write
	finished chan struct{}
	once     sync.Once
}

func newSSE(w http.ResponseWriter) (*sse, error) {
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	h.Set("Connection", "keep-alive")
	s := &sse{w: w, rc: http.NewResponseController(w), finished: make(chan struct{})}
	s.wake = sync.NewCond(&s.mu)
	_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout)) // unsupported by some writers: no deadline then
	w.WriteHeader(http.StatusOK)
	if err := s.rc.Flush(); err != nil {
		close(s.finished)
		s.closed = true
		return s, err
	}
	go s.writer()
	return s, nil
}

// writer writes the queued events in order until the stream is closed and drained; after a
// failed write it drops the rest.
func (s *sse) writer() {
	defer close(s.finished)
	for {
		s.mu.Lock()
		for len(s.queue) == 0 && !s.closed {
			s.wake.Wait()
		}
		if len(s.queue) == 0 {
			s.mu.Unlock()
			return
		}
		b := s.queue[0]
		s.queue = s.queue[1:]
		failed := s.err != nil
		s.mu.Unlock()
		if failed {
			continue
		}
		_ = s.rc.SetWriteDeadline(time.Now().Add(sseWriteTimeout))
		_, err := s.w.Write(b)
		if err == nil {
			err = s.rc.Flush()
		}
		if err != nil {
			s.mu.Lock()
			s.err = err
			s.mu.Unlock()
		}
	}
}

// enqueue queues one event's bytes; it returns the first write error, if any.
func (s *sse) enqueue(b []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.err != nil {
		return s.err
	}
	if s.closed {
		return errStreamFinished
	}
	s.queue = append(s.queue, b)
	s.wake.Signal()
	return nil
}

func (s *sse) send(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.enqueue(fmt.Appendf(nil, "data: %s\n\n", b))
}

// done sends the final "[DONE]" and ends the stream.
func (s *sse) done() {
	_ = s.enqueue([]byte("data: [DONE]\n\n"))
	s.finish()
}

// finish ends the stream and waits until the writer has written (or dropped) what is queued.
func (s *sse) finish() {
	s.once.Do(func() {
		s.mu.Lock()
		s.closed = true
		s.wake.Signal()
		s.mu.Unlock()
		<-s.finished
	})
}
