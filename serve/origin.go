package serve

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
)

// Cross-site requests. A browser on any page can send a "simple" request (a form or a
// text/plain body, no preflight) to a server on the user's machine, and a DNS name an attacker
// controls can be made to resolve to it (DNS rebinding). So:
//
//   - the routes that change the server's state (load and unload adapters, update weights)
//     take only Content-Type application/json, which a browser sends cross-site only after a
//     CORS preflight this server never answers (415 otherwise);
//   - a request whose Origin is not the server's own (scheme://Host) is refused (403) unless
//     Options.AllowOrigins names it;
//   - without an API key, a Host that is not a loopback name or address, nor the address the
//     connection reached, nor a host of Options.AllowOrigins, is refused (403); /health is
//     exempt (probes).

// stateChanging lists the routes that change what the server serves.
var stateChanging = []string{"/v1/load_lora_adapter", "/v1/unload_lora_adapter", "/update_weights_from_disk"}

// crossSite returns the answer refusing r (nil: r may pass).
func (s *Server) crossSite(r *http.Request) *reqError {
	if o := r.Header.Get("Origin"); o != "" && !s.originAllowed(o, r.Host) {
		return &reqError{http.StatusForbidden, "invalid_request_error", "", "origin_not_allowed",
			fmt.Sprintf("cross-origin request from %q refused (allow it with --allow-origin)", o)}
	}
	if s.opt.APIKey == "" && r.URL.Path != "/health" && !s.hostAllowed(r) {
		return &reqError{http.StatusForbidden, "invalid_request_error", "", "host_not_allowed",
			fmt.Sprintf("Host %q is not this server's address: without an API key only loopback names and the listen address are served (set --api-key, or --allow-origin for the name)", r.Host)}
	}
	if r.Method == http.MethodPost && slices.Contains(stateChanging, r.URL.Path) {
		if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
			return &reqError{http.StatusUnsupportedMediaType, "invalid_request_error", "", "unsupported_media_type",
				fmt.Sprintf("%s takes Content-Type application/json only", r.URL.Path)}
		}
	}
	return nil
}

// originAllowed: origin is scheme://host where host is the request's Host, or is named in
// Options.AllowOrigins ("*" allows every origin).
func (s *Server) originAllowed(origin, host string) bool {
	if slices.Contains(s.opt.AllowOrigins, origin) || slices.Contains(s.opt.AllowOrigins, "*") {
		return true
	}
	u, err := url.Parse(origin)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != "" && strings.EqualFold(u.Host, host)
}

// hostAllowed: r's Host names a loopback address or "localhost", the local address the
// connection reached, or a host of an allowed origin.
func (s *Server) hostAllowed(r *http.Request) bool {
	h := r.Host
	if hh, _, err := net.SplitHostPort(h); err == nil {
		h = hh
	}
	h = strings.Trim(strings.ToLower(h), "[]")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") {
		return true
	}
	if ip := net.ParseIP(h); ip != nil {
		if ip.IsLoopback() {
			return true
		}
		if la, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
			if ta, ok := la.(*net.TCPAddr); ok && ta.IP.Equal(ip) {
				return true
			}
		}
	}
	for _, o := range s.opt.AllowOrigins {
		if u, err := url.Parse(o); err == nil && strings.EqualFold(u.Hostname(), h) {
			return true
		}
	}
	return false
}
