package daemon

import "net"

// RoutableHost turns an unspecified listen host ("", 0.0.0.0, ::) into an
// address other nodes can reach: the IP of advertise (ip or ip:port) when
// it has one, else this host's first private IPv4 address (as memberlist
// picks its advertise address), else its first other non-loopback unicast
// address (ErrNoRoutableIP when there is none). Any other host is returned
// unchanged. The actor transport advertises the address it listens on, so
// a wildcard would tell other nodes "0.0.0.0".
func RoutableHost(host, advertise string) (string, error) {
	if host != "" {
		ip := net.ParseIP(host)
		if ip == nil || !ip.IsUnspecified() {
			return host, nil
		}
	}
	if advertise != "" {
		h, _, err := net.SplitHostPort(advertise)
		if err != nil {
			h = advertise
		}
		if ip := net.ParseIP(h); ip != nil && !ip.IsUnspecified() {
			return ip.String(), nil
		}
	}
	ifaces, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	var other net.IP
	for _, ifc := range ifaces {
		if ifc.Flags&net.FlagUp == 0 || ifc.Flags&net.FlagLoopback != 0 {
			continue
		}
		addrs, err := ifc.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok || n.IP.IsLoopback() || n.IP.IsLinkLocalUnicast() || !n.IP.IsGlobalUnicast() {
				continue
			}
			if ip4 := n.IP.To4(); ip4 != nil && ip4.IsPrivate() {
				return ip4.String(), nil
			}
			if other == nil {
				other = n.IP
			}
		}
	}
	if other == nil {
		return "", ErrNoRoutableIP
	}
	return other.String(), nil
}
