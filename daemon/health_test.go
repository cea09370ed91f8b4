package daemon

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/cluster"
)

func TestHealth(t *testing.T) {
	t.Parallel()
	h := &health{}
	get := func(path string) (int, string, string) {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		return w.Code, w.Body.String(), w.Header().Get("Content-Type")
	}
	for _, tc := range []struct {
		set         func()
		path        string
		code        int
		body, ctype string
	}{
		{nil, "/healthz", 200, "ok\n", "text/plain"},
		{nil, "/readyz", 503, `{"ready":false,"state":"starting"}` + "\n", "application/json"},
		{func() { h.set(true, "serving coordinator c1") }, "/readyz", 200, `{"ready":true,"state":"serving coordinator c1"}` + "\n", "application/json"},
		{func() { h.set(false, "stopping") }, "/readyz", 503, `{"ready":false,"state":"stopping"}` + "\n", "application/json"},
		{nil, "/healthz", 200, "ok\n", "text/plain"},
		{nil, "/other", 404, "404 page not found\n", "text/plain; charset=utf-8"},
	} {
		if tc.set != nil {
			tc.set()
		}
		code, body, ctype := get(tc.path)
		if code != tc.code || body != tc.body || ctype != tc.ctype {
			t.Errorf("GET %s: %d %q (%s), want %d %q (%s)", tc.path, code, body, ctype, tc.code, tc.body, tc.ctype)
		}
	}
}

// The node's endpoints only report: PUT, POST, TRACE and the like are 405.
func TestEndpointsAreReadOnly(t *testing.T) {
	h := ReadOnly(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }))
	for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodDelete, http.MethodPatch, "TRACE"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/healthz", nil))
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != "GET, HEAD" {
			t.Errorf("%s: %d, Allow %q", m, rec.Code, rec.Header().Get("Allow"))
		}
	}
	for _, m := range []string{http.MethodGet, http.MethodHead} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(m, "/healthz", nil))
		if rec.Code != http.StatusOK {
			t.Errorf("%s: %d", m, rec.Code)
		}
	}
}

func TestGossipWarning(t *testing.T) {
	for _, tc := range []struct {
		addr string
		key  []byte
		warn bool
	}{{"0.0.0.0", nil, true}, {"10.0.0.5", nil, true}, {"0.0.0.0", make([]byte, 32), false}, {"127.0.0.1", nil, false}, {"::1", nil, false}} {
		w := gossipWarning(cluster.Config{BindAddr: tc.addr, BindPort: 7946, SecretKey: tc.key})
		if (w != "") != tc.warn || (tc.warn && !strings.Contains(w, "--gossip-key")) {
			t.Errorf("%s key %d bytes: %q", tc.addr, len(tc.key), w)
		}
	}
}
