package cluster

import (
	"fmt"
	"math"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// Profiles name a base Tuning for Config.Profile.
const (
	// ProfileLAN: memberlist's LAN defaults, for a data-centre network
	// (see LANTuning).
	ProfileLAN = "lan"
	// ProfileLocal: aggressive timers for loopback / one host (tests, a
	// single machine running several nodes; see LocalTuning).
	ProfileLocal = "local"
)

// Tuning holds memberlist's failure-detection and gossip timers. In a
// Config, a zero field takes the value of the Config's Profile.
//
// How a dead node is detected (SWIM, as memberlist implements it): every
// ProbeInterval each node probes one member, walking the members in a
// shuffled round-robin, so a given member is probed by a given node at
// least once every (N-1) intervals. A probe waits ProbeTimeout for a direct
// ack, then asks IndirectChecks other members (and tries TCP) until the
// interval ends. A failed probe makes the node "suspect"; if it does not
// refute within the suspicion timeout it is declared dead, and every member
// emits Failed for it. The suspicion timeout starts at
// SuspicionMaxTimeoutMult·T and shrinks towards
// T = SuspicionMult·max(1, log10 N)·ProbeInterval as SuspicionMult-2
// other members independently confirm the suspicion (with fewer than
// SuspicionMult other members no confirmation is awaited and T applies).
// DetectionTime turns this into numbers.
type Tuning struct {
	// ProbeInterval is the time between probes of one random member.
	ProbeInterval time.Duration
	// ProbeTimeout is how long a direct probe waits for an ack before
	// indirect probes start; keep it near the 99th percentile RTT and
	// below ProbeInterval.
	ProbeTimeout time.Duration
	// SuspicionMult scales the suspicion timeout (see the type doc).
	SuspicionMult int
	// SuspicionMaxTimeoutMult bounds the suspicion timeout when no
	// confirmations arrive (multiple of the base timeout).
	SuspicionMaxTimeoutMult int
	// IndirectChecks is the number of members asked to probe a member that
	// missed a direct probe.
	IndirectChecks int
	// GossipInterval is the time between gossip rounds (state changes
	// spread at this pace).
	GossipInterval time.Duration
	// GossipNodes is the number of members each gossip round sends to.
	GossipNodes int
	// PushPullInterval is the time between full state syncs with one
	// random member (heals partitions and missed gossip).
	PushPullInterval time.Duration
	// TCPTimeout bounds TCP connects and push/pull exchanges, including
	// each join attempt per seed.
	TCPTimeout time.Duration
}

// LANTuning returns memberlist's DefaultLANConfig timers: ProbeInterval 1s,
// ProbeTimeout 500ms, SuspicionMult 4, SuspicionMaxTimeoutMult 6,
// IndirectChecks 3, GossipInterval 200ms, GossipNodes 3, PushPullInterval
// 30s, TCPTimeout 10s. A dead node in a 3-node cluster is reported Failed
// after about 6.4s, 7.4s at worst; in a 10-node cluster about 9.9s, 34.4s
// at worst (DetectionTime).
func LANTuning() Tuning {
	return Tuning{
		ProbeInterval:           time.Second,
		ProbeTimeout:            500 * time.Millisecond,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 6,
		IndirectChecks:          3,
		GossipInterval:          200 * time.Millisecond,
		GossipNodes:             3,
		PushPullInterval:        30 * time.Second,
		TCPTimeout:              10 * time.Second,
	}
}

// LocalTuning returns timers for loopback: ProbeInterval 200ms,
// ProbeTimeout 100ms, SuspicionMult 4, SuspicionMaxTimeoutMult 4,
// IndirectChecks 1, GossipInterval 50ms, GossipNodes 3, PushPullInterval 5s,
// TCPTimeout 1s. A dead node in a 3-node cluster on 127.0.0.1 is reported
// Failed after about 1.3s, 1.5s at worst (measured: 1.35s under -race); in a
// 5-node cluster about 1.5s, 4.3s at worst (DetectionTime). The
// 100ms probe timeout tolerates scheduler stalls of a loaded test machine;
// a live node that misses probes is only suspected and refutes.
func LocalTuning() Tuning {
	return Tuning{
		ProbeInterval:           200 * time.Millisecond,
		ProbeTimeout:            100 * time.Millisecond,
		SuspicionMult:           4,
		SuspicionMaxTimeoutMult: 4,
		IndirectChecks:          1,
		GossipInterval:          50 * time.Millisecond,
		GossipNodes:             3,
		PushPullInterval:        5 * time.Second,
		TCPTimeout:              time.Second,
	}
}

// ProfileTuning returns the base Tuning of a profile name.
func ProfileTuning(profile string) (Tuning, error) {
	switch profile {
	case ProfileLAN:
		return LANTuning(), nil
	case ProfileLocal:
		return LocalTuning(), nil
	}
	return Tuning{}, &fielderr.Error{Kind: ErrInvalidConfig, Field: "Profile", Value: profile, Reason: fmt.Sprintf("want %q or %q", ProfileLAN, ProfileLocal)}
}

// withDefaults fills t's zero fields from base.
func (t Tuning) withDefaults(base Tuning) Tuning {
	fill := func(v *time.Duration, d time.Duration) {
		if *v == 0 {
			*v = d
		}
	}
	filli := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	fill(&t.ProbeInterval, base.ProbeInterval)
	fill(&t.ProbeTimeout, base.ProbeTimeout)
	filli(&t.SuspicionMult, base.SuspicionMult)
	filli(&t.SuspicionMaxTimeoutMult, base.SuspicionMaxTimeoutMult)
	filli(&t.IndirectChecks, base.IndirectChecks)
	fill(&t.GossipInterval, base.GossipInterval)
	filli(&t.GossipNodes, base.GossipNodes)
	fill(&t.PushPullInterval, base.PushPullInterval)
	fill(&t.TCPTimeout, base.TCPTimeout)
	return t
}

// DetectionTime estimates how long after a node dies (without leaving) the
// other members of an n-node cluster report it Failed:
//
//	typical = (n-1)/2·ProbeInterval  (wait until some member probes it)
//	        + ProbeInterval          (direct, indirect and TCP probes fail)
//	        + SuspicionMult·max(1, log10 n)·ProbeInterval  (suspicion timeout)
//	worst   = (n-1)·ProbeInterval + ProbeInterval
//	        + SuspicionMaxTimeoutMult·(the suspicion timeout above)
//
// with the suspicion term of "worst" reduced to the base timeout when
// n-2 < SuspicionMult-2 (memberlist then waits for no confirmations).
// Gossip adds a few GossipIntervals. memberlist slows its probes by up to
// 8x when the local node itself misses acks (awareness), which these
// figures ignore: treat them as expectations for deadlines, not bounds.
func (t Tuning) DetectionTime(n int) (typical, worst time.Duration) {
	if n < 2 {
		n = 2
	}
	pi := t.ProbeInterval
	scale := math.Max(1, math.Log10(float64(n)))
	base := time.Duration(float64(t.SuspicionMult) * scale * float64(pi))
	maxSusp := time.Duration(t.SuspicionMaxTimeoutMult) * base
	if k := t.SuspicionMult - 2; n-2 < k || k <= 0 {
		maxSusp = base
	}
	gossip := 2 * t.GossipInterval
	typical = time.Duration(n-1)*pi/2 + pi + base + gossip
	worst = time.Duration(n-1)*pi + pi + maxSusp + gossip
	return typical, worst
}

// Config configures a Membership. Start from DefaultConfig (or LocalConfig)
// and change what you need; Validate reports the first bad field.
type Config struct {
	// BindAddr is the IP address gossip listens on (UDP and TCP, same
	// port). Must be an IP literal. Default "127.0.0.1": a node is
	// reachable from other hosts only when its caller says so, and should
	// then set SecretKey (see Exposed).
	BindAddr string
	// BindPort is the gossip port. 0 picks a free port (read it back with
	// Membership.Addr). Default 7946.
	BindPort int
	// AdvertiseAddr is the IP other nodes use to reach this one. Default ""
	// lets memberlist choose: BindAddr, or the first private IP when
	// binding 0.0.0.0.
	AdvertiseAddr string
	// AdvertisePort is the port other nodes use to reach this one. Default
	// 0 means the bound port.
	AdvertisePort int
	// Seeds are "host:port" gossip addresses of existing members. Join
	// contacts them (any one suffices), skipping an entry equal to this
	// node's own address. Default none: this node starts a new cluster.
	Seeds []string
	// SecretKey enables gossip encryption (AES-GCM) when set; it must be
	// 16, 24 or 32 bytes and equal on every node. A node with another key
	// (or none) cannot join. Default nil (no encryption).
	SecretKey []byte
	// Label is stamped on every gossip packet; nodes with a different
	// label drop each other's packets, so two clusters on one network stay
	// apart. At most 255 bytes. Default "t2t".
	Label string
	// Profile picks the base failure-detection Tuning: ProfileLAN or
	// ProfileLocal. Default ProfileLAN.
	Profile string
	// Tuning overrides the profile's timers field by field; zero fields
	// take the profile's value. Default all zero.
	Tuning Tuning
	// JoinTimeout bounds Join's retries when the context has no earlier
	// deadline. Default 30s.
	JoinTimeout time.Duration
	// JoinBackoff is the first wait between join rounds; it doubles each
	// round up to JoinBackoffMax. Defaults 100ms and 2s.
	JoinBackoff    time.Duration
	JoinBackoffMax time.Duration
	// LeaveTimeout is how long Provider.Shutdown(true) waits for the leave
	// announcement to spread. Default 5s.
	LeaveTimeout time.Duration
	// EventBuffer is the capacity of the Events channel. When the consumer
	// lags and it is full, new events are dropped and counted
	// (Stats.DroppedEvents). Default 256.
	EventBuffer int
	// LogEvery is the interval of the gossip layer's repeated warnings and errors: the first
	// of a kind is logged, then at most one line per kind per LogEvery, with the count of
	// those left out (junk packets at the port would otherwise log a line each). Default 10s.
	LogEvery time.Duration
	// OnLogLine, when set, is called for every warning or error the gossip layer reports,
	// logged or left out, with its level ("warn" or "error"): a counter for /metrics (the
	// daemon's t2t_gossip_log_lines_total). Default nil.
	OnLogLine func(level string)
}

// DefaultConfig returns the configuration for a node on a LAN: bind
// 127.0.0.1:7946 (set BindAddr to an address the other nodes reach, and a
// SecretKey, for a cluster of several hosts), no seeds, no encryption, label "t2t", ProfileLAN (a dead
// node is reported Failed after about 6.4s in a 3-node cluster; see
// LANTuning), join for up to 30s with 100ms..2s backoff, leave within 5s,
// 256 buffered events.
func DefaultConfig() Config {
	return Config{
		BindAddr:       "127.0.0.1",
		BindPort:       7946,
		Label:          "t2t",
		Profile:        ProfileLAN,
		JoinTimeout:    30 * time.Second,
		JoinBackoff:    100 * time.Millisecond,
		JoinBackoffMax: 2 * time.Second,
		LeaveTimeout:   5 * time.Second,
		EventBuffer:    256,
		LogEvery:       10 * time.Second,
	}
}

// LocalConfig returns DefaultConfig changed for several nodes on one host:
// bind 127.0.0.1 on a free port, ProfileLocal (a dead node is reported Failed
// after about 1.3s in a 3-node cluster; see LocalTuning), join for up to 10s.
func LocalConfig() Config {
	c := DefaultConfig()
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.Profile = ProfileLocal
	c.JoinTimeout = 10 * time.Second
	c.JoinBackoff = 50 * time.Millisecond
	c.JoinBackoffMax = time.Second
	return c
}

// Exposed reports whether gossip binds an address other hosts can reach
// (anything but a loopback address: 0.0.0.0 too) without a SecretKey:
// then anyone who reaches it can join the cluster and read its members.
func (c Config) Exposed() bool {
	ip := net.ParseIP(c.BindAddr)
	return len(c.SecretKey) == 0 && (ip == nil || !ip.IsLoopback())
}

// Clone returns a deep copy.
func (c Config) Clone() Config {
	c.Seeds = slices.Clone(c.Seeds)
	c.SecretKey = slices.Clone(c.SecretKey)
	return c
}

// EffectiveTuning returns the profile's Tuning overridden by c.Tuning's
// non-zero fields.
func (c Config) EffectiveTuning() (Tuning, error) {
	base, err := ProfileTuning(c.Profile)
	if err != nil {
		return Tuning{}, err
	}
	return c.Tuning.withDefaults(base), nil
}

// Validate checks every field; the error is a *fielderr.Error naming the first
// bad one (errors.Is ErrInvalidConfig).
func (c Config) Validate() error {
	if err := c.validateNetwork(); err != nil {
		return err
	}
	if err := c.validateTuning(); err != nil {
		return err
	}
	return c.validateTimeouts()
}

// validateNetwork checks the addresses, seeds, secret key and label.
func (c Config) validateNetwork() error {
	if net.ParseIP(c.BindAddr) == nil {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "BindAddr", Value: c.BindAddr, Reason: "must be an IP address"}
	}
	if c.BindPort < 0 || c.BindPort > 65535 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "BindPort", Value: c.BindPort, Reason: "must be 0..65535"}
	}
	if c.AdvertiseAddr != "" && net.ParseIP(c.AdvertiseAddr) == nil {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "AdvertiseAddr", Value: c.AdvertiseAddr, Reason: "must be an IP address or empty"}
	}
	if c.AdvertisePort < 0 || c.AdvertisePort > 65535 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "AdvertisePort", Value: c.AdvertisePort, Reason: "must be 0..65535"}
	}
	for i, s := range c.Seeds {
		host, port, err := net.SplitHostPort(s)
		p, perr := strconv.Atoi(port)
		if err != nil || host == "" || perr != nil || p < 1 || p > 65535 {
			return &fielderr.Error{Kind: ErrInvalidConfig, Field: fmt.Sprintf("Seeds[%d]", i), Value: s, Reason: "want host:port with port 1..65535"}
		}
	}
	switch len(c.SecretKey) {
	case 0, 16, 24, 32:
	default:
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "SecretKey", Value: fmt.Sprintf("%d bytes", len(c.SecretKey)), Reason: "must be 16, 24 or 32 bytes (AES-128/192/256) or empty"}
	}
	if len(c.Label) > 255 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "Label", Value: fmt.Sprintf("%d bytes", len(c.Label)), Reason: "at most 255 bytes"}
	}
	return nil
}

// validateTuning checks that no Tuning field is negative and that the
// effective probe timeout is below the probe interval.
func (c Config) validateTuning() error {
	t, err := c.EffectiveTuning()
	if err != nil {
		return err
	}
	durs := []struct {
		name string
		v    time.Duration
	}{
		{"Tuning.ProbeInterval", c.Tuning.ProbeInterval},
		{"Tuning.ProbeTimeout", c.Tuning.ProbeTimeout},
		{"Tuning.GossipInterval", c.Tuning.GossipInterval},
		{"Tuning.PushPullInterval", c.Tuning.PushPullInterval},
		{"Tuning.TCPTimeout", c.Tuning.TCPTimeout},
	}
	for _, d := range durs {
		if d.v < 0 {
			return &fielderr.Error{Kind: ErrInvalidConfig, Field: d.name, Value: d.v, Reason: "must be >= 0 (0 takes the profile's value)"}
		}
	}
	ints := []struct {
		name string
		v    int
	}{
		{"Tuning.SuspicionMult", c.Tuning.SuspicionMult},
		{"Tuning.SuspicionMaxTimeoutMult", c.Tuning.SuspicionMaxTimeoutMult},
		{"Tuning.IndirectChecks", c.Tuning.IndirectChecks},
		{"Tuning.GossipNodes", c.Tuning.GossipNodes},
	}
	for _, d := range ints {
		if d.v < 0 {
			return &fielderr.Error{Kind: ErrInvalidConfig, Field: d.name, Value: d.v, Reason: "must be >= 0 (0 takes the profile's value)"}
		}
	}
	if t.ProbeTimeout >= t.ProbeInterval {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "Tuning.ProbeTimeout", Value: t.ProbeTimeout, Reason: fmt.Sprintf("must be below ProbeInterval (%v)", t.ProbeInterval)}
	}
	return nil
}

// validateTimeouts checks the join and leave timings and the event buffer.
func (c Config) validateTimeouts() error {
	if c.JoinTimeout <= 0 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "JoinTimeout", Value: c.JoinTimeout, Reason: "must be > 0"}
	}
	if c.JoinBackoff <= 0 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "JoinBackoff", Value: c.JoinBackoff, Reason: "must be > 0"}
	}
	if c.JoinBackoffMax < c.JoinBackoff {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "JoinBackoffMax", Value: c.JoinBackoffMax, Reason: fmt.Sprintf("must be >= JoinBackoff (%v)", c.JoinBackoff)}
	}
	if c.LeaveTimeout <= 0 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "LeaveTimeout", Value: c.LeaveTimeout, Reason: "must be > 0"}
	}
	if c.EventBuffer < 1 {
		return &fielderr.Error{Kind: ErrInvalidConfig, Field: "EventBuffer", Value: c.EventBuffer, Reason: "must be >= 1"}
	}
	return nil
}
