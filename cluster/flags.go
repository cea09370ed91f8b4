package cluster

import (
	"encoding/base64"
	"flag"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// GossipKeyEnv names the environment variable that holds the gossip key
// when no flag gives one (a Kubernetes Secret as an environment variable,
// say).
const GossipKeyEnv = "T2T_GOSSIP_KEY"

// SplitHostPort splits addr, the value of flag, into a host and a port in
// 0..65535; a bad address is a *fielderr.Error naming flag.
func SplitHostPort(flag, addr string) (string, int, error) {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, &fielderr.Error{Kind: ErrInvalidConfig, Flag: flag, Value: strconv.Quote(addr), Reason: err.Error()}
	}
	port, err := strconv.Atoi(p)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, &fielderr.Error{Kind: ErrInvalidConfig, Flag: flag, Value: strconv.Quote(addr), Reason: "port must be 0..65535"}
	}
	return host, port, nil
}

// GossipFlags are a node's gossip settings as a command line gives them.
type GossipFlags struct {
	// Bind is the gossip host:port (--gossip); Advertise the address other
	// nodes reach it at (--advertise, host[:port]); Join comma-separated
	// seeds (--join); Profile ProfileLocal or another (--gossip-profile).
	Bind, Advertise, Join, Profile string
	JoinTimeout                    time.Duration
	// Key (base64, --gossip-key) or KeyFile (its first line,
	// --gossip-key-file) is the encryption key; neither: $GossipKeyEnv.
	Key, KeyFile string
	// Insecure (--insecure) allows gossip on an address other hosts can
	// reach without a key; Config refuses that otherwise.
	Insecure bool
}

// Register binds g to the gossip flags of fs, with DefaultConfig's
// defaults: --gossip on loopback, so that a node is reachable from other
// hosts only when its command line says so.
func (g *GossipFlags) Register(fs *flag.FlagSet) {
	d := DefaultConfig()
	fs.StringVar(&g.Join, "join", "", "gossip addresses host:port,... of cluster members to join (empty: start a new cluster)")
	fs.StringVar(&g.Bind, "gossip", net.JoinHostPort(d.BindAddr, strconv.Itoa(d.BindPort)),
		"gossip (memberlist) bind address ip:port; port 0 picks one. An address other hosts can reach needs a gossip key (or --insecure)")
	fs.StringVar(&g.Advertise, "advertise", "", "gossip address other nodes use to reach this one, ip[:port] (default: chosen by memberlist)")
	fs.StringVar(&g.Profile, "gossip-profile", d.Profile, "failure detection timers: lan (dead node seen in ~6s) or local (one host, ~1.3s)")
	fs.StringVar(&g.Key, "gossip-key", "", "gossip encryption key: base64 of 16, 24 or 32 bytes, the same on every node (default: $"+GossipKeyEnv+", else no encryption)")
	fs.StringVar(&g.KeyFile, "gossip-key-file", "", "read the gossip encryption key (base64) from this file instead")
	fs.DurationVar(&g.JoinTimeout, "join-timeout", d.JoinTimeout, "give up joining the cluster after this long")
	fs.BoolVar(&g.Insecure, "insecure", false, "allow unencrypted gossip on an address other hosts can reach (anyone who reaches it can join the cluster)")
}

// Config is the membership Config of g, validated, with its secret key.
// Bad settings are *fielderr.Error naming the flag; so is a bind address other
// hosts can reach without a key, unless g.Insecure.
func (g GossipFlags) Config() (Config, error) {
	c := DefaultConfig()
	if g.Profile == ProfileLocal {
		c = LocalConfig()
	}
	c.Profile = g.Profile
	host, port, err := SplitHostPort("--gossip", g.Bind)
	if err != nil {
		return c, err
	}
	c.BindAddr, c.BindPort = host, port
	if g.Advertise != "" {
		h, p, err := net.SplitHostPort(g.Advertise)
		if err != nil {
			h, p = g.Advertise, "0"
		}
		ap, perr := strconv.Atoi(p)
		if perr != nil {
			return c, &fielderr.Error{Kind: ErrInvalidConfig, Flag: "advertise", Value: strconv.Quote(g.Advertise), Reason: "bad port"}
		}
		c.AdvertiseAddr, c.AdvertisePort = h, ap
	}
	for _, s := range strings.Split(g.Join, ",") {
		if s = strings.TrimSpace(s); s != "" {
			c.Seeds = append(c.Seeds, s)
		}
	}
	c.JoinTimeout = g.JoinTimeout
	if err := c.Validate(); err != nil {
		return c, &fielderr.Error{Kind: ErrInvalidConfig, Reason: "gossip flags: " + err.Error(), Err: err}
	}
	if c.SecretKey, err = ReadGossipKey(g.Key, g.KeyFile); err != nil {
		return c, err
	}
	if c.Exposed() && !g.Insecure {
		return c, &fielderr.Error{Kind: ErrInvalidConfig, Flag: "gossip", Value: g.Bind, Reason: "other hosts can reach this address and gossip has no key: " +
			"anyone who reaches it could join the cluster. Set --gossip-key, --gossip-key-file or $" + GossipKeyEnv + " (the same on every node), " +
			"bind 127.0.0.1 for one host, or pass --insecure"}
	}
	return c, nil
}

// ReadGossipKey returns the gossip encryption key: flagValue (base64), else
// the first line of file (base64), else $GossipKeyEnv (base64), else none.
// A key must decode to 16, 24 or 32 bytes (AES-128/192/256-GCM); a bad one
// is a *fielderr.Error naming where it came from.
func ReadGossipKey(flagValue, file string) ([]byte, error) {
	src, text := "--gossip-key", flagValue
	switch {
	case flagValue != "" && file != "":
		return nil, &fielderr.Error{Kind: ErrInvalidConfig, Flag: "--gossip-key and --gossip-key-file", Reason: "give one"}
	case file != "":
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, &fielderr.Error{Kind: ErrInvalidConfig, Flag: "gossip-key-file", Reason: err.Error()}
		}
		src, text = "--gossip-key-file "+file, string(b)
	case flagValue == "":
		src, text = "$"+GossipKeyEnv, os.Getenv(GossipKeyEnv)
	}
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(text)
	if err != nil {
		return nil, &fielderr.Error{Kind: ErrInvalidConfig, Flag: src, Reason: "not base64: " + err.Error()}
	}
	switch len(key) {
	case 16, 24, 32:
		return key, nil
	}
	return nil, &fielderr.Error{Kind: ErrInvalidConfig, Flag: src, Reason: fmt.Sprintf("%d bytes, want 16, 24 or 32 (e.g. 'openssl rand -base64 32')", len(key))}
}
