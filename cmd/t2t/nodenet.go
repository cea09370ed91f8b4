package main

import (
	"encoding/base64"
	"errors"
	"net"
	"os"
	"strings"
)

// gossipKeyEnv names the environment variable that holds the gossip key
// when --gossip-key and --gossip-key-file are not given (a Kubernetes
// Secret as an environment variable, say).
const gossipKeyEnv = "T2T_GOSSIP_KEY"

// gossipKey returns the gossip encryption key of the flags: --gossip-key
// (base64), else the first line of --gossip-key-file (base64), else
// $T2T_GOSSIP_KEY (base64), else none. A key must decode to 16, 24 or 32
// bytes (AES-128/192/256-GCM).
func gossipKey(flagValue, file string) ([]byte, error) {
	src, text := "--gossip-key", flagValue
	switch {
	case flagValue != "" && file != "":
		return nil, badInput("--gossip-key and --gossip-key-file: give one")
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, badInput("--gossip-key-file: %v", err)
		}
		src, text = "--gossip-key-file "+file, string(b)
	case flagValue == "":
		src, text = "$"+gossipKeyEnv, os.Getenv(gossipKeyEnv)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, badInput("%s: not base64: %v", src, err)
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, badInput("%s: %d bytes, want 16, 24 or 32 (e.g. 'openssl rand -base64 32')", src, len(key))
}

// errNoRoutableIP: no interface has an address other nodes could reach.
var errNoRoutableIP = errors.New("no up, non-loopback interface with an IP address")

// routableHost turns an unspecified --listen host ("", 0.0.0.0, ::) into
// an address other nodes can reach: the IP of --advertise when it has one,
// else this host's first private IPv4 address (as memberlist picks its
// advertise address), else its first other non-loopback unicast address.
// Any other host is returned unchanged. The actor transport advertises the
// address it listens on, so a wildcard would tell other nodes "0.0.0.0".
func routableHost(host, advertise string) (string, error) {
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
		return "", errNoRoutableIP
	}
	return other.String(), nil
}
