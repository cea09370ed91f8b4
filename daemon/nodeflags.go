package daemon

import (
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// CheckRanges checks the fields of c that t2t node's flags set as they
// are, and joinTimeout (--join-timeout): each out of its range is a
// *fielderr.Error naming the flag and the range, the first found.
func (c *Config) CheckRanges(joinTimeout time.Duration) error {
	switch {
	case c.Capacity < 1 || c.Capacity > 256:
		return &fielderr.Error{Flag: "capacity", Value: c.Capacity, Reason: "want 1..256"}
	case c.MaxInFlight < 1 || c.MaxInFlight > 64:
		return &fielderr.Error{Flag: "max-in-flight", Value: c.MaxInFlight, Reason: "want 1..64"}
	case joinTimeout <= 0 || c.Lease <= 0:
		return &fielderr.Error{Reason: "--join-timeout and --lease must be > 0"}
	case c.StalenessK < 1:
		return &fielderr.Error{Flag: "staleness", Value: c.StalenessK, Reason: "want >= 1"}
	case c.MaxLag == 0 || c.MaxLag < -1 || c.MaxLag > c.StalenessK:
		return &fielderr.Error{Flag: "max-lag", Value: c.MaxLag, Reason: fmt.Sprintf("want 1..--staleness (%d), or -1 for no pacing", c.StalenessK)}
	case c.KeepLateK < 0:
		return &fielderr.Error{Flag: "keep-late", Value: c.KeepLateK, Reason: "want >= 0"}
	case c.Chunk < 0:
		return &fielderr.Error{Flag: "chunk", Value: c.Chunk, Reason: "want >= 0"}
	}
	return nil
}

// ListenAddr is the actor transport's address of listen (t2t node
// --listen, host:port), its host made routable by RoutableHost with
// advertise. An address other hosts can reach (not a loopback IP or
// "localhost") without tls is refused, the same rule as gossip without a
// key, unless insecure: then warn is called and the address is used. Bad
// addresses are *fielderr.Error about --listen.
func ListenAddr(listen, advertise string, tls, insecure bool, warn func()) (string, error) {
	host, port, err := cluster.SplitHostPort("--listen", listen)
	if err != nil {
		return "", err
	}
	if err := exposedListen(listen, host, tls); err != nil {
		if !insecure {
			return "", err
		}
		warn()
	}
	if host, err = RoutableHost(host, advertise); err != nil {
		return "", &fielderr.Error{Flag: "listen", Value: listen, Err: err}
	}
	return net.JoinHostPort(host, strconv.Itoa(port)), nil
}

// exposedListen refuses an actor address other hosts can reach without TLS.
func exposedListen(listen, host string, tls bool) error {
	ip := net.ParseIP(host)
	if tls || host == "localhost" || (ip != nil && ip.IsLoopback()) {
		return nil
	}
	return &fielderr.Error{Flag: "listen", Value: listen, Reason: "other hosts can reach this address and the actor transport has no TLS: " +
		"anyone who reaches it could send actor messages. Set --tls-cert, --tls-key and --tls-ca, " +
		"listen on 127.0.0.1 for one host, or pass --insecure-listen (a private network you trust)"}
}
