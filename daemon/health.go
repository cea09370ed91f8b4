package daemon

import (
	"encoding/json"
	"io"
	"net/http"
	"sync/atomic"
)

// health backs /healthz (the process is up) and /readyz (it does its
// work: 200 with {"ready":true,"state":...}, else 503).
type health struct {
	ready atomic.Bool
	state atomic.Pointer[string]
}

func (h *health) set(ready bool, state string) {
	h.state.Store(&state)
	h.ready.Store(ready)
}

func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/healthz":
		w.Header().Set("Content-Type", "text/plain")
		io.WriteString(w, "ok\n")
	case "/readyz":
		state := "starting"
		if p := h.state.Load(); p != nil {
			state = *p
		}
		ready := h.ready.Load()
		w.Header().Set("Content-Type", "application/json")
		if !ready {
			w.WriteHeader(http.StatusServiceUnavailable)
		}
		json.NewEncoder(w).Encode(map[string]any{"ready": ready, "state": state})
	default:
		http.NotFound(w, r)
	}
}
