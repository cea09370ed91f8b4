package daemon

import (
	"net/http"
	"net/http/httptest"
	"testing"
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
