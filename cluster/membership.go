package cluster

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"log"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// EventKind says what happened to a member.
type EventKind uint8

// Event kinds.
const (
	// Joined: a member became alive (new, or back after being declared
	// failed and refuting).
	Joined EventKind = iota + 1
	// Left: a member left gracefully (Leave): it announced its departure.
	Left
	// Failed: a member stopped answering probes and was declared dead.
	Failed
	// Updated: a member changed its metadata (UpdateMeta).
	Updated
)

func (k EventKind) String() string {
	switch k {
	case Joined:
		return "joined"
	case Left:
		return "left"
	case Failed:
		return "failed"
	case Updated:
		return "updated"
	}
	return "EventKind(" + strconv.Itoa(int(k)) + ")"
}

// Event is one membership change. Node is the member's metadata (for Left
// and Failed, the last metadata seen).
type Event struct {
	Kind EventKind
	Node NodeMeta
}

// Stats counts what the membership layer dropped or refused.
type Stats struct {
	// DroppedEvents: events not delivered because the Events channel was
	// full. Members() is still exact.
	DroppedEvents uint64
	// RejectedAlive: alive announcements refused because the node's
	// metadata did not decode (ErrBadMeta) or its ID did not match its
	// memberlist name. Such a node never becomes a member; each gossip
	// repeat is counted.
	RejectedAlive uint64
	// UnknownNode: update or leave notices about a node that was never
	// admitted, ignored.
	UnknownNode uint64
	// IgnoredMessages: user-level gossip messages received (this layer
	// sends none), ignored.
	IgnoredMessages uint64
}

// Membership is this node's view of the cluster, kept by memberlist gossip.
// All methods are safe for concurrent use. Create it with Join; end it with
// Leave (graceful) or Shutdown.
type Membership struct {
	cfg    Config
	tuning Tuning
	logger *slog.Logger
	ml     *memberlist.Memberlist

	metaMu     sync.Mutex // guards local, localBytes, leaving
	local      NodeMeta
	localBytes []byte
	leaving    bool

	mu        sync.Mutex // guards members, closed, watchers, nextWatch; sends on events
	members   map[string]NodeMeta
	departed  map[string]struct{} // announced a leave; memberlist's dead notice still to come
	events    chan Event
	closed    bool
	watchers  map[int]chan struct{}
	nextWatch int

	life    sync.Mutex // serialises UpdateMeta, Leave and Shutdown around memberlist calls
	stopped bool       // guarded by life
	stopErr error      // guarded by life

	dropped, rejected, unknown, ignoredMsgs atomic.Uint64
}

// Join starts gossip for the node described by meta and joins the cluster
// through cfg.Seeds. An empty meta.ID is replaced by NewNodeID(). With no
// seeds (after removing this node's own address) it starts a new cluster.
// Otherwise it retries all seeds with backoff (cfg.JoinBackoff doubling to
// cfg.JoinBackoffMax) until one answers, the context ends or cfg.JoinTimeout
// passes; then it fails with a *JoinError (errors.Is ErrJoin) and releases
// everything it started. A wrong SecretKey or Label looks like an unreachable
// seed: the seed cannot read our packets and drops them.
// A nil logger discards logs.
func Join(ctx context.Context, cfg Config, meta NodeMeta, logger *slog.Logger) (*Membership, error) {
	cfg = cfg.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	tuning, err := cfg.EffectiveTuning()
	if err != nil {
		return nil, err
	}
	meta = meta.Clone()
	if meta.ID == "" {
		meta.ID = NewNodeID()
	}
	metaBytes, err := meta.Encode()
	if err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	logger = logger.With(slog.String("node", meta.ID))

	m := &Membership{
		cfg:        cfg,
		tuning:     tuning,
		logger:     logger,
		local:      meta,
		localBytes: metaBytes,
		members:    make(map[string]NodeMeta),
		departed:   make(map[string]struct{}),
		events:     make(chan Event, cfg.EventBuffer),
		watchers:   make(map[int]chan struct{}),
	}

	mc := m.memberlistConfig()
	ml, err := memberlist.Create(mc)
	if err != nil {
		return nil, fmt.Errorf("cluster: start gossip on %s: %w", net.JoinHostPort(cfg.BindAddr, strconv.Itoa(cfg.BindPort)), err)
	}
	m.ml = ml
	logger.Info("membership started", slog.String("addr", m.Addr()), slog.String("profile", cfg.Profile))

	seeds := m.otherSeeds()
	if len(seeds) == 0 {
		logger.Info("no seeds: starting a new cluster")
		return m, nil
	}
	if err := m.join(ctx, seeds); err != nil {
		_ = m.Shutdown()
		return nil, err
	}
	return m, nil
}

// memberlistConfig builds the memberlist configuration for m from its
// Config and effective Tuning, with m's delegate and a rate-limited log.
func (m *Membership) memberlistConfig() *memberlist.Config {
	mc := memberlist.DefaultLANConfig()
	mc.Name = m.local.ID
	mc.BindAddr = m.cfg.BindAddr
	mc.BindPort = m.cfg.BindPort
	mc.AdvertiseAddr = m.cfg.AdvertiseAddr
	mc.AdvertisePort = m.cfg.AdvertisePort
	if mc.AdvertisePort == 0 {
		mc.AdvertisePort = m.cfg.BindPort
	}
	mc.Label = m.cfg.Label
	if len(m.cfg.SecretKey) > 0 {
		mc.SecretKey = m.cfg.SecretKey
	}
	mc.ProbeInterval = m.tuning.ProbeInterval
	mc.ProbeTimeout = m.tuning.ProbeTimeout
	mc.SuspicionMult = m.tuning.SuspicionMult
	mc.SuspicionMaxTimeoutMult = m.tuning.SuspicionMaxTimeoutMult
	mc.IndirectChecks = m.tuning.IndirectChecks
	mc.GossipInterval = m.tuning.GossipInterval
	mc.GossipNodes = m.tuning.GossipNodes
	mc.PushPullInterval = m.tuning.PushPullInterval
	mc.TCPTimeout = m.tuning.TCPTimeout
	d := &mlDelegate{m: m}
	mc.Delegate = d
	mc.Events = d
	mc.Alive = d
	mc.Logger = log.New(newMLLogWriter(m.logger, m.cfg.LogEvery, m.cfg.OnLogLine, time.Now), "", 0)
	return mc
}

// otherSeeds returns cfg.Seeds without this node's own gossip address.
func (m *Membership) otherSeeds() []string {
	self := m.ml.LocalNode()
	out := make([]string, 0, len(m.cfg.Seeds))
	for _, s := range m.cfg.Seeds {
		host, port, err := net.SplitHostPort(s)
		if err == nil {
			p, _ := strconv.Atoi(port)
			if ip := net.ParseIP(host); ip != nil && ip.Equal(self.Addr) && p == int(self.Port) {
				continue
			}
		}
		out = append(out, s)
	}
	return out
}

func (m *Membership) join(ctx context.Context, seeds []string) error {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.JoinTimeout)
	defer cancel()
	backoff := m.cfg.JoinBackoff
	var last error
	for attempt := 1; ; attempt++ {
		n, err := m.ml.Join(seeds)
		if n > 0 {
			m.logger.Info("joined cluster", slog.Any("seeds", seeds), slog.Int("contacted", n), slog.Int("attempt", attempt))
			return nil
		}
		last = err
		m.logger.Debug("join attempt failed", slog.Any("seeds", seeds), slog.Int("attempt", attempt), slog.Any("error", err))
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return &JoinError{Seeds: seeds, Attempts: attempt, Last: last, Ctx: ctx.Err()}
		case <-t.C:
		}
		backoff = min(2*backoff, m.cfg.JoinBackoffMax)
	}
}

// Addr returns this node's gossip address "ip:port" (what other nodes list
// in their Seeds). With BindPort 0 it holds the port actually bound.
func (m *Membership) Addr() string {
	n := m.ml.LocalNode()
	return net.JoinHostPort(n.Addr.String(), strconv.Itoa(int(n.Port)))
}

// LocalNode returns this node's current metadata.
func (m *Membership) LocalNode() NodeMeta {
	m.metaMu.Lock()
	defer m.metaMu.Unlock()
	return m.local.Clone()
}

// Tuning returns the failure-detection timers in effect.
func (m *Membership) Tuning() Tuning { return m.tuning }

// Members returns the alive members, this node included, sorted by ID.
// Members suspected but not yet declared dead are included. The result is a
// fresh copy, exact even when events were dropped.
func (m *Membership) Members() []NodeMeta {
	m.mu.Lock()
	out := make([]NodeMeta, 0, len(m.members))
	for _, n := range m.members {
		out = append(out, n.Clone())
	}
	m.mu.Unlock()
	slices.SortFunc(out, func(a, b NodeMeta) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// Member returns the alive member with the given ID.
func (m *Membership) Member(id string) (NodeMeta, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.members[id]
	return n.Clone(), ok
}

// Events returns the channel of membership changes, this node's own Joined
// first. The events of one member come in the order they happened to it
// (Joined before its Updated, Left or Failed); those of different members
// come in the order gossip brought them to this node, which need not be
// the order the members joined or changed: wait for a set of members, not
// a sequence. It is bounded (Config.EventBuffer): a consumer that lags loses
// events (counted in Stats.DroppedEvents) rather than stalling gossip, and
// should then resynchronise from Members(), which is always exact. Events
// is meant for one consumer; use Watch for more. The channel is closed by
// Shutdown (and Leave).
func (m *Membership) Events() <-chan Event { return m.events }

// Watch returns a channel that receives a signal whenever membership
// changes, plus a cancel function. Signals coalesce (capacity 1, never
// lost): on each, read Members(). The channel holds one signal at the start
// so the first snapshot is read at once. It is closed by cancel or Shutdown.
func (m *Membership) Watch() (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	ch <- struct{}{}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		close(ch)
		return ch, func() {}
	}
	id := m.nextWatch
	m.nextWatch++
	m.watchers[id] = ch
	return ch, func() {
		m.mu.Lock()
		defer m.mu.Unlock()
		if w, ok := m.watchers[id]; ok {
			delete(m.watchers, id)
			close(w)
		}
	}
}

// Stats returns the drop and reject counters.
func (m *Membership) Stats() Stats {
	return Stats{
		DroppedEvents:   m.dropped.Load(),
		RejectedAlive:   m.rejected.Load(),
		UnknownNode:     m.unknown.Load(),
		IgnoredMessages: m.ignoredMsgs.Load(),
	}
}

// UpdateMeta replaces this node's metadata (same ID required) and gossips
// it; other members emit Updated. It waits up to timeout for the update to
// go out. After Leave or Shutdown it returns ErrShutdown.
func (m *Membership) UpdateMeta(meta NodeMeta, timeout time.Duration) error {
	meta = meta.Clone()
	m.life.Lock()
	defer m.life.Unlock()
	m.metaMu.Lock()
	if m.stopped || m.leaving {
		m.metaMu.Unlock()
		return ErrShutdown
	}
	if meta.ID != m.local.ID {
		m.metaMu.Unlock()
		return &fielderr.Error{Kind: ErrInvalidMeta, Field: "ID", Value: meta.ID, Reason: fmt.Sprintf("cannot change a running node's ID (%s)", m.local.ID)}
	}
	b, err := meta.Encode()
	if err != nil {
		m.metaMu.Unlock()
		return err
	}
	m.local, m.localBytes = meta, b
	m.metaMu.Unlock()
	if err := m.ml.UpdateNode(timeout); err != nil {
		return fmt.Errorf("cluster: gossip metadata update: %w", err)
	}
	return nil
}

// Leave departs gracefully, then shuts down. It first gossips this node's
// metadata with a leave flag (others emit Left for it and drop it from
// Members) and then memberlist's leave notice, waiting up to timeout for
// each to go out. The shutdown happens even if an announcement timed out;
// that error is returned. A member that misses the flag but gets the notice
// reports Failed instead of Left. After Shutdown, Leave does nothing.
func (m *Membership) Leave(timeout time.Duration) error {
	var errs []error
	m.life.Lock()
	if !m.stopped {
		m.metaMu.Lock()
		b, err := encodeWire(m.local, true)
		if err == nil {
			m.leaving, m.localBytes = true, b
		}
		m.metaMu.Unlock()
		if err != nil {
			errs = append(errs, err)
		} else if err := m.ml.UpdateNode(timeout); err != nil {
			errs = append(errs, fmt.Errorf("cluster: announce leave: %w", err))
		}
		if err := m.ml.Leave(timeout); err != nil {
			errs = append(errs, fmt.Errorf("cluster: leave: %w", err))
		}
		m.logger.Info("left cluster")
	}
	m.life.Unlock()
	return errors.Join(append(errs, m.Shutdown())...)
}

// Shutdown stops gossip at once, without telling anyone: the others will
// detect this node as Failed (see Tuning.DetectionTime). It closes the
// Events and Watch channels. Safe to call more than once.
func (m *Membership) Shutdown() error {
	m.life.Lock()
	defer m.life.Unlock()
	if m.stopped {
		return m.stopErr
	}
	m.stopped = true
	if err := m.ml.Shutdown(); err != nil {
		m.stopErr = fmt.Errorf("cluster: shutdown gossip: %w", err)
	}
	m.mu.Lock()
	m.closed = true
	close(m.events)
	for id, w := range m.watchers {
		close(w)
		delete(m.watchers, id)
	}
	m.mu.Unlock()
	m.logger.Info("membership stopped")
	return m.stopErr
}

// emitLocked delivers an event without blocking and pokes the watchers.
// Callers hold m.mu and have checked !m.closed.
func (m *Membership) emitLocked(ev Event) {
	select {
	case m.events <- ev:
	default:
		m.dropped.Add(1)
	}
	for _, w := range m.watchers {
		select {
		case w <- struct{}{}:
		default:
		}
	}
}

// mlDelegate receives memberlist's callbacks. memberlist calls the event
// methods with its node lock held, one at a time; they must not block.
type mlDelegate struct{ m *Membership }

// NodeMeta implements memberlist.Delegate.
func (d *mlDelegate) NodeMeta(limit int) []byte {
	d.m.metaMu.Lock()
	defer d.m.metaMu.Unlock()
	if len(d.m.localBytes) > limit { // Encode keeps room for the leave flag; never true
		return nil
	}
	return bytes.Clone(d.m.localBytes)
}

// NotifyMsg implements memberlist.Delegate. This layer sends no user
// messages; anything received is counted and dropped.
func (d *mlDelegate) NotifyMsg(b []byte) {
	d.m.ignoredMsgs.Add(1)
	d.m.logger.Debug("ignored gossip user message", slog.Int("bytes", len(b)))
}

// GetBroadcasts implements memberlist.Delegate.
func (d *mlDelegate) GetBroadcasts(overhead, limit int) [][]byte { return nil }

// LocalState implements memberlist.Delegate.
func (d *mlDelegate) LocalState(join bool) []byte { return nil }

// MergeRemoteState implements memberlist.Delegate.
func (d *mlDelegate) MergeRemoteState(buf []byte, join bool) {}

// NotifyAlive implements memberlist.AliveDelegate: a node whose metadata
// does not decode, or whose ID is not its memberlist name, is refused.
func (d *mlDelegate) NotifyAlive(peer *memberlist.Node) error {
	meta, err := DecodeNodeMeta(peer.Meta)
	if err == nil && meta.ID != peer.Name {
		err = fmt.Errorf("%w: meta ID %q differs from node name %q", ErrBadMeta, meta.ID, peer.Name)
	}
	if err != nil {
		// Gossip repeats alive messages: warn on the 1st, 2nd, 4th, 8th...
		if n := d.m.rejected.Add(1); n&(n-1) == 0 {
			d.m.logger.Warn("refused node with bad metadata", slog.String("peer", peer.Name), slog.String("addr", peer.Address()), slog.Uint64("refused_total", n), slog.Any("error", err))
		}
		return err
	}
	return nil
}

// NotifyJoin implements memberlist.EventDelegate.
func (d *mlDelegate) NotifyJoin(n *memberlist.Node) {
	meta, leaving, err := decodeWire(n.Meta)
	if err != nil || meta.ID != n.Name { // refused by NotifyAlive already; defensive
		d.m.rejected.Add(1)
		return
	}
	m := d.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if leaving { // first heard of while already leaving: never a member
		m.departed[meta.ID] = struct{}{}
		return
	}
	m.members[meta.ID] = meta
	m.emitLocked(Event{Kind: Joined, Node: meta.Clone()})
	m.logger.Info("member joined", slog.String("member", meta.ID), slog.String("name", meta.Name), slog.String("gossip", n.Address()))
}

// NotifyUpdate implements memberlist.EventDelegate. A metadata update with
// the leave flag set is the member's graceful Left.
func (d *mlDelegate) NotifyUpdate(n *memberlist.Node) {
	meta, leaving, err := decodeWire(n.Meta)
	if err != nil || meta.ID != n.Name {
		d.m.rejected.Add(1)
		return
	}
	m := d.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	if _, ok := m.members[meta.ID]; !ok {
		if _, gone := m.departed[meta.ID]; !gone {
			m.unknown.Add(1)
		}
		return
	}
	if leaving {
		delete(m.members, meta.ID)
		m.departed[meta.ID] = struct{}{}
		m.emitLocked(Event{Kind: Left, Node: meta.Clone()})
		m.logger.Info("member gone", slog.String("member", meta.ID), slog.String("how", Left.String()))
		return
	}
	m.members[meta.ID] = meta
	m.emitLocked(Event{Kind: Updated, Node: meta.Clone()})
	m.logger.Info("member updated", slog.String("member", meta.ID))
}

// NotifyLeave implements memberlist.EventDelegate: memberlist declared the
// node dead or gone. Unless it announced its leave first (NotifyUpdate),
// that is a failure.
func (d *mlDelegate) NotifyLeave(n *memberlist.Node) {
	m := d.m
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	meta, ok := m.members[n.Name]
	if !ok {
		if _, gone := m.departed[n.Name]; gone {
			delete(m.departed, n.Name)
		} else {
			m.unknown.Add(1)
		}
		return
	}
	delete(m.members, n.Name)
	m.emitLocked(Event{Kind: Failed, Node: meta})
	m.logger.Info("member gone", slog.String("member", meta.ID), slog.String("how", Failed.String()))
}
