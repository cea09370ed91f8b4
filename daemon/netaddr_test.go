package daemon

import (
	"errors"
	"net"
	"testing"
)

func TestRoutableHost(t *testing.T) {
	for _, tc := range []struct{ host, advertise, want string }{
		{"127.0.0.1", "", "127.0.0.1"},
		{"10.1.2.3", "10.9.9.9", "10.1.2.3"},
		{"rollout-7.t2t", "", "rollout-7.t2t"},
		{"0.0.0.0", "10.9.8.7:7946", "10.9.8.7"},
		{"::", "10.9.8.7", "10.9.8.7"},
		{"", "10.9.8.7", "10.9.8.7"},
	} {
		if got, err := RoutableHost(tc.host, tc.advertise); err != nil || got != tc.want {
			t.Errorf("RoutableHost(%q, %q) = %q, %v; want %q", tc.host, tc.advertise, got, err, tc.want)
		}
	}
	// Without --advertise: an address of this host that can be listened
	// on and is neither a wildcard nor loopback.
	got, err := RoutableHost("0.0.0.0", "")
	if errors.Is(err, ErrNoRoutableIP) {
		t.Skipf("this machine has no non-loopback address: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	ip := net.ParseIP(got)
	if ip == nil || ip.IsUnspecified() || ip.IsLoopback() {
		t.Fatalf("RoutableHost(0.0.0.0) = %q", got)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(got, "0"))
	if err != nil {
		t.Fatalf("%s is not an address of this host: %v", got, err)
	}
	ln.Close()
}
