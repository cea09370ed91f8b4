package cluster

import (
	"context"
	"errors"
	"flag"
	"io"
	"log"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/memberlist"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"go.uber.org/goleak"
)

var memberSeed = flag.Uint64("seed", 0, "seed for randomised cluster tests (0: derive from the clock and log it)")

// memRand returns a seeded generator and logs the seed.
func memRand(t *testing.T) *rand.Rand {
	t.Helper()
	seed := *memberSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("seed %d (replay with -seed %d)", seed, seed)
	return rand.New(rand.NewPCG(seed, 0x6d656d62))
}

// memLogWriter forwards log lines to t.Log until the test's cleanup runs,
// then drops them (memberlist timers may still log after Shutdown).
type memLogWriter struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (w *memLogWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Helper()
		w.t.Log(strings.TrimSpace(string(p)))
	}
	return len(p), nil
}

func memLogger(t *testing.T) *slog.Logger {
	w := &memLogWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		w.done = true
		w.mu.Unlock()
	})
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}))
}

// memLeakCheck fails the test if goroutines started during it outlive it.
// Register it first so that its cleanup runs after every node's shutdown.
// memberlist's Shutdown does not wait for a probe in flight: its goroutine
// ends when the probe times out (under a second here, longer on a loaded
// machine, where goleak's own retries, about 1.5 s, once ran out in CI). So
// the check waits up to 10 s for the goroutines to end; one that never ends
// still fails it.
func memLeakCheck(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		for deadline := time.Now().Add(10 * time.Second); goleak.Find(opt) != nil && time.Now().Before(deadline); {
			time.Sleep(100 * time.Millisecond)
		}
		goleak.VerifyNone(t, opt)
	})
}

func memConfig(seeds ...string) Config {
	c := LocalConfig()
	c.Seeds = seeds
	return c
}

func memMeta(name string, roles ...Role) NodeMeta {
	return NodeMeta{ID: NewNodeID(), Name: name, Address: "127.0.0.1:9000", Roles: roles, Capacity: 4, Version: "test"}
}

// memStart joins a node and shuts it down at cleanup.
func memStart(t *testing.T, cfg Config, meta NodeMeta) *Membership {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
	defer cancel()
	m, err := Join(ctx, cfg, meta, memLogger(t).With(slog.String("test_node", meta.Name)))
	if err != nil {
		t.Fatalf("join %s (seeds %v): %v", meta.Name, cfg.Seeds, err)
	}
	t.Cleanup(func() { _ = m.Shutdown() })
	t.Logf("node %s id=%s gossip=%s seeds=%v", meta.Name, m.LocalNode().ID, m.Addr(), cfg.Seeds)
	return m
}

// memCluster starts n nodes, the first one the seed of the others, and
// waits until every node sees all n.
func memCluster(t *testing.T, n int, tweak func(*Config)) []*Membership {
	t.Helper()
	cfg := memConfig()
	if tweak != nil {
		tweak(&cfg)
	}
	roles := AllRoles()
	nodes := []*Membership{memStart(t, cfg, memMeta("n0", roles[0]))}
	for i := 1; i < n; i++ {
		c := cfg.Clone()
		c.Seeds = []string{nodes[0].Addr()}
		nodes = append(nodes, memStart(t, c, memMeta("n"+string(rune('0'+i)), roles[i%len(roles)])))
	}
	want := memIDs(nodes...)
	for _, m := range nodes {
		memWaitMembers(t, m, want)
	}
	return nodes
}

func memIDs(nodes ...*Membership) []string {
	ids := make([]string, len(nodes))
	for i, m := range nodes {
		ids[i] = m.LocalNode().ID
	}
	slices.Sort(ids)
	return ids
}

func memMemberIDs(m *Membership) []string {
	var ids []string
	for _, n := range m.Members() {
		ids = append(ids, n.ID)
	}
	return ids
}

// memPoll polls cond every 10ms until it holds or the deadline passes. This
// is the real-network edge; nothing else waits on time.
func memPoll(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		<-tick.C
	}
}

func memWaitMembers(t *testing.T, m *Membership, want []string) {
	t.Helper()
	memPoll(t, 20*time.Second, "members "+strings.Join(want, ",")+" at "+m.LocalNode().Name, func() bool {
		return slices.Equal(memMemberIDs(m), want)
	})
}

// memWaitEvents reads m's events until one of kind has arrived for each of
// ids, in whatever order gossip delivers them (events of different members
// have no order: n2's join may reach the seed before n1's), and returns
// them in the order of ids. Other events are read and dropped, so wait for
// every event of one node that matters in one call.
func memWaitEvents(t *testing.T, m *Membership, within time.Duration, kind EventKind, ids ...string) []Event {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	got := map[string]Event{}
	for len(got) < len(ids) {
		select {
		case ev, ok := <-m.Events():
			if !ok {
				t.Fatalf("events closed while waiting for %v of %v (have %d)", kind, ids, len(got))
			}
			if ev.Kind == kind && slices.Contains(ids, ev.Node.ID) {
				got[ev.Node.ID] = ev
			}
		case <-timer.C:
			t.Fatalf("no %v event for each of %v at %s within %v (have %d)", kind, ids, m.LocalNode().Name, within, len(got))
		}
	}
	out := make([]Event, len(ids))
	for i, id := range ids {
		out[i] = got[id]
	}
	return out
}

// TestMemWaitEventsAnyOrder: the joins of n1 and n2 reach the seed in
// either order, and waiting for both sees both (the seed's channel as it
// was when TestMembershipThreeNodesJoinViaSeed failed: n2's join first).
func TestMemWaitEventsAnyOrder(t *testing.T) {
	m := &Membership{events: make(chan Event, 3), local: NodeMeta{ID: "n0", Name: "n0"}}
	for _, id := range []string{"n0", "n2", "n1"} {
		m.events <- Event{Kind: Joined, Node: NodeMeta{ID: id}}
	}
	got := memWaitEvents(t, m, 5*time.Second, Joined, "n1", "n2")
	if got[0].Node.ID != "n1" || got[1].Node.ID != "n2" {
		t.Fatalf("events %+v, want n1's and n2's joins", got)
	}
}

func TestMembershipThreeNodesJoinViaSeed(t *testing.T) {
	memLeakCheck(t)
	nodes := memCluster(t, 3, nil)
	// Every node sees every other node's metadata as published.
	for _, m := range nodes {
		for _, other := range nodes {
			want := other.LocalNode()
			got, ok := m.Member(want.ID)
			if !ok {
				t.Fatalf("%s does not see %s", m.LocalNode().Name, want.Name)
			}
			if !got.Equal(want) {
				t.Errorf("%s sees %s as %+v, want %+v", m.LocalNode().Name, want.Name, got, want)
			}
		}
	}
	// The seed saw its own join and both others' as events, in either order.
	seed := nodes[0]
	memWaitEvents(t, seed, 10*time.Second, Joined, seed.LocalNode().ID, nodes[1].LocalNode().ID, nodes[2].LocalNode().ID)
	if s := seed.Stats(); s != (Stats{}) {
		t.Errorf("unexpected stats %+v", s)
	}
	for _, m := range nodes {
		if err := m.Shutdown(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestMembershipGracefulLeaveIsLeft(t *testing.T) {
	memLeakCheck(t)
	nodes := memCluster(t, 3, nil)
	leaving := nodes[2].LocalNode()
	if err := nodes[2].Leave(5 * time.Second); err != nil {
		t.Fatalf("leave: %v", err)
	}
	for _, m := range nodes[:2] {
		ev := memWaitEvents(t, m, 20*time.Second, Left, leaving.ID)[0]
		if !ev.Node.Equal(leaving) {
			t.Errorf("left event carries %+v, want %+v", ev.Node, leaving)
		}
		memWaitMembers(t, m, memIDs(nodes[:2]...))
	}
	// Events are closed after Leave.
	for range nodes[2].Events() {
	}
	for _, m := range nodes[:2] {
		_ = m.Shutdown()
	}
}

func TestMembershipKilledNodeIsFailed(t *testing.T) {
	memLeakCheck(t)
	nodes := memCluster(t, 3, nil)
	typical, worst := nodes[0].Tuning().DetectionTime(3)
	t.Logf("expected detection: typical %v, worst %v (deadline is generous, nothing asserted on time)", typical, worst)
	killed := nodes[2].LocalNode()
	start := time.Now()
	if err := nodes[2].Shutdown(); err != nil {
		t.Fatal(err)
	}
	for _, m := range nodes[:2] {
		memWaitEvents(t, m, 10*worst+20*time.Second, Failed, killed.ID)
		t.Logf("%s saw %s failed after %v", m.LocalNode().Name, killed.Name, time.Since(start))
		memWaitMembers(t, m, memIDs(nodes[:2]...))
	}
	for _, m := range nodes[:2] {
		_ = m.Shutdown()
	}
}

func TestMembershipRestartedNodeHasNewID(t *testing.T) {
	memLeakCheck(t)
	nodes := memCluster(t, 3, nil)
	old := nodes[2]
	oldMeta := old.LocalNode()
	// Restart on the same gossip port, as a process restart would.
	_, port, _ := strings.Cut(old.Addr(), ":")
	cfg := memConfig(nodes[0].Addr())
	cfg.BindPort = mustAtoi(t, port)
	if err := old.Shutdown(); err != nil {
		t.Fatal(err)
	}
	meta := oldMeta
	meta.ID = "" // a new process draws a new id
	restarted := memStart(t, cfg, meta)
	newID := restarted.LocalNode().ID
	if newID == oldMeta.ID {
		t.Fatalf("restarted node kept its id %s", newID)
	}
	memWaitEvents(t, nodes[0], 20*time.Second, Joined, newID)
	want := memIDs(nodes[0], nodes[1], restarted)
	for _, m := range []*Membership{nodes[0], nodes[1], restarted} {
		memWaitMembers(t, m, want)
	}
	// The old incarnation is gone for good: reported Failed, not revived.
	memWaitEvents(t, nodes[1], 30*time.Second, Failed, oldMeta.ID)
	if _, ok := nodes[0].Member(oldMeta.ID); ok {
		t.Errorf("old id %s still a member", oldMeta.ID)
	}
	for _, m := range []*Membership{nodes[0], nodes[1], restarted} {
		_ = m.Shutdown()
	}
}

func mustAtoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestMembershipWrongKeyCannotJoin(t *testing.T) {
	memLeakCheck(t)
	keyA := []byte("0123456789abcdef0123456789abcdef")
	keyB := []byte("fedcba9876543210fedcba9876543210")
	cfgA := memConfig()
	cfgA.SecretKey = keyA
	a := memStart(t, cfgA, memMeta("a"))

	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"other key", keyB},
		{"no key", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := memConfig(a.Addr())
			cfg.SecretKey = tc.key
			ctx, cancel := context.WithTimeout(t.Context(), 1500*time.Millisecond)
			defer cancel()
			m, err := Join(ctx, cfg, memMeta("intruder"), memLogger(t))
			if err == nil {
				_ = m.Shutdown()
				t.Fatal("joined with the wrong key")
			}
			var je *JoinError
			if !errors.Is(err, ErrJoin) || !errors.As(err, &je) {
				t.Fatalf("want *JoinError wrapping ErrJoin, got %T %v", err, err)
			}
			if je.Attempts < 1 || !slices.Equal(je.Seeds, []string{a.Addr()}) {
				t.Errorf("join error %+v", je)
			}
			t.Logf("refused as expected: %v", err)
		})
	}
	// The right key joins.
	cfg := memConfig(a.Addr())
	cfg.SecretKey = keyA
	b := memStart(t, cfg, memMeta("b"))
	memWaitMembers(t, a, memIDs(a, b))
	_ = b.Shutdown()
	_ = a.Shutdown()
}

func TestMembershipLabelSeparatesClusters(t *testing.T) {
	memLeakCheck(t)
	a := memStart(t, memConfig(), memMeta("a"))
	cfg := memConfig(a.Addr())
	cfg.Label = "other-cluster"
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	m, err := Join(ctx, cfg, memMeta("b"), memLogger(t))
	if err == nil {
		_ = m.Shutdown()
		t.Fatal("joined across labels")
	}
	if !errors.Is(err, ErrJoin) {
		t.Fatalf("want ErrJoin, got %v", err)
	}
	_ = a.Shutdown()
}

func TestMembershipNoSeedReachable(t *testing.T) {
	memLeakCheck(t)
	// Bind a node, learn its address, stop it: nothing listens there now.
	gone := memStart(t, memConfig(), memMeta("gone"))
	addr := gone.Addr()
	_ = gone.Shutdown()
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := Join(ctx, memConfig(addr), memMeta("lonely"), memLogger(t))
	var je *JoinError
	if !errors.As(err, &je) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("want *JoinError ending on the deadline, got %v", err)
	}
}

func TestMembershipMetaTooLargeRefused(t *testing.T) {
	meta := memMeta("big")
	meta.Name = strings.Repeat("x", MaxMetaSize)
	_, err := meta.Encode()
	var tl *MetaTooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrMetaTooLarge) || tl.Size <= MaxMetaSize || tl.Limit != MaxMetaSize {
		t.Fatalf("encode: want *MetaTooLargeError, got %v", err)
	}
	if _, err := Join(t.Context(), memConfig(), meta, nil); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("join: want ErrMetaTooLarge, got %v", err)
	}

	// A running node cannot grow past the limit either, and keeps its meta.
	memLeakCheck(t)
	small := memMeta("small")
	m := memStart(t, memConfig(), small)
	big := m.LocalNode()
	big.Version = strings.Repeat("v", MaxMetaSize)
	if err := m.UpdateMeta(big, time.Second); !errors.Is(err, ErrMetaTooLarge) {
		t.Fatalf("update: want ErrMetaTooLarge, got %v", err)
	}
	if got := m.LocalNode(); !got.Equal(small) {
		t.Errorf("meta changed to %+v", got)
	}
	_ = m.Shutdown()
}

func TestMembershipUpdateMeta(t *testing.T) {
	memLeakCheck(t)
	nodes := memCluster(t, 2, nil)
	meta := nodes[1].LocalNode()
	meta.Capacity = 32
	meta.Roles = []Role{RoleRollout, RoleLearner}
	if err := nodes[1].UpdateMeta(meta, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	ev := memWaitEvents(t, nodes[0], 20*time.Second, Updated, meta.ID)[0]
	if !ev.Node.Equal(meta) {
		t.Errorf("updated event %+v, want %+v", ev.Node, meta)
	}
	if got, _ := nodes[0].Member(meta.ID); !got.Equal(meta) {
		t.Errorf("member %+v, want %+v", got, meta)
	}
	other := meta
	other.ID = NewNodeID()
	if err := nodes[1].UpdateMeta(other, time.Second); !errors.Is(err, ErrInvalidMeta) {
		t.Errorf("changing the id: want ErrInvalidMeta, got %v", err)
	}
	for _, m := range nodes {
		_ = m.Shutdown()
	}
}

func TestMembershipEventsBoundedDropsCounted(t *testing.T) {
	memLeakCheck(t)
	// The seed's buffer holds one event (its own Joined) and nobody reads
	// it, so the later joins are dropped and counted; Members stays exact.
	nodes := memCluster(t, 4, func(c *Config) { c.EventBuffer = 1 })
	seed := nodes[0]
	if got := seed.Stats().DroppedEvents; got < 3 {
		t.Errorf("dropped %d events, want >= 3", got)
	}
	if got, want := memMemberIDs(seed), memIDs(nodes...); !slices.Equal(got, want) {
		t.Errorf("members %v, want %v", got, want)
	}
	ev := <-seed.Events()
	if ev.Kind != Joined || ev.Node.ID != seed.LocalNode().ID {
		t.Errorf("first event %+v, want own join", ev)
	}
	for _, m := range nodes {
		_ = m.Shutdown()
	}
}

func TestMembershipWatch(t *testing.T) {
	memLeakCheck(t)
	a := memStart(t, memConfig(), memMeta("a"))
	w, cancel := a.Watch()
	<-w // initial snapshot signal
	if got := memMemberIDs(a); len(got) != 1 {
		t.Fatalf("members %v", got)
	}
	b := memStart(t, memConfig(a.Addr()), memMeta("b"))
	want := memIDs(a, b)
	timeout := time.NewTimer(20 * time.Second)
	defer timeout.Stop()
	for !slices.Equal(memMemberIDs(a), want) {
		select {
		case <-w:
		case <-timeout.C:
			t.Fatal("no watch signal for b's join")
		}
	}
	cancel()
	if _, ok := <-w; ok {
		// one pending signal may remain; the next read must see the close
		if _, ok := <-w; ok {
			t.Error("watch channel not closed by cancel")
		}
	}
	w2, _ := a.Watch()
	_ = b.Shutdown()
	_ = a.Shutdown()
	for range w2 { // closed by Shutdown
	}
	w3, cancel3 := a.Watch()
	cancel3()
	for range w3 { // already closed after Shutdown
	}
}

// memRogue starts a raw memberlist node that gossips arbitrary metadata.
func memRogue(t *testing.T, name string, meta []byte, seed string) *memberlist.Memberlist {
	t.Helper()
	c := memberlist.DefaultLocalConfig()
	c.Name = name
	c.BindAddr = "127.0.0.1"
	c.BindPort = 0
	c.Label = "t2t"
	c.Delegate = memRogueDelegate(meta)
	c.Logger = log.New(io.Discard, "", 0)
	ml, err := memberlist.Create(c)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ml.Shutdown() })
	if _, err := ml.Join([]string{seed}); err != nil {
		t.Fatalf("rogue join: %v", err)
	}
	return ml
}

type memRogueDelegate []byte

func (d memRogueDelegate) NodeMeta(int) []byte             { return d }
func (d memRogueDelegate) NotifyMsg([]byte)                {}
func (d memRogueDelegate) GetBroadcasts(int, int) [][]byte { return nil }
func (d memRogueDelegate) LocalState(bool) []byte          { return nil }
func (d memRogueDelegate) MergeRemoteState([]byte, bool)   {}

func TestMembershipRejectsNodesWithBadMeta(t *testing.T) {
	memLeakCheck(t)
	a := memStart(t, memConfig(), memMeta("a"))
	goodMeta, err := NodeMeta{ID: "someone-else"}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	rogues := []*memberlist.Memberlist{
		memRogue(t, "garbage", []byte("\x01{not json"), a.Addr()),
		memRogue(t, "oldformat", []byte(`{"id":"oldformat"}`), a.Addr()),
		memRogue(t, "impostor", goodMeta, a.Addr()), // meta ID differs from its name
	}
	memPoll(t, 20*time.Second, "rejections counted", func() bool { return a.Stats().RejectedAlive >= uint64(len(rogues)) })
	// A rogue still knows a and can message it: the message is dropped and counted.
	var aNode *memberlist.Node
	for _, n := range rogues[0].Members() {
		if n.Name == a.LocalNode().ID {
			aNode = n
		}
	}
	if aNode == nil {
		t.Fatal("rogue did not learn a")
	}
	if err := rogues[0].SendReliable(aNode, []byte("hello from nowhere")); err != nil {
		t.Fatal(err)
	}
	memPoll(t, 20*time.Second, "user message ignored", func() bool { return a.Stats().IgnoredMessages >= 1 })
	// A real node still joins and the rogues never became members.
	b := memStart(t, memConfig(a.Addr()), memMeta("b"))
	memWaitMembers(t, a, memIDs(a, b))
	memWaitMembers(t, b, memIDs(a, b))
	for _, r := range rogues {
		_ = r.Shutdown()
	}
	_ = b.Shutdown()
	_ = a.Shutdown()
}

func TestMembershipDetectionTimeFigures(t *testing.T) {
	for _, tc := range []struct {
		tuning        Tuning
		n             int
		typical, wost time.Duration
	}{
		// local, 3 nodes: 0.2+0.2+0.8+0.1 and 0.4+0.2+0.8+0.1 (no confirmations awaited)
		{LocalTuning(), 3, 1300 * time.Millisecond, 1500 * time.Millisecond},
		// lan, 3 nodes: 1+1+4+0.4 and 2+1+4+0.4
		{LANTuning(), 3, 6400 * time.Millisecond, 7400 * time.Millisecond},
		// local, 5 nodes: confirmations awaited, max suspicion 4x
		{LocalTuning(), 5, 1500 * time.Millisecond, 4300 * time.Millisecond},
	} {
		typ, worst := tc.tuning.DetectionTime(tc.n)
		if typ != tc.typical || worst != tc.wost {
			t.Errorf("DetectionTime(%d) of %+v = %v, %v; want %v, %v", tc.n, tc.tuning, typ, worst, tc.typical, tc.wost)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("default: %v", err)
	}
	if err := LocalConfig().Validate(); err != nil {
		t.Fatalf("local: %v", err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*Config)
	}{
		{"BindAddr", func(c *Config) { c.BindAddr = "localhost" }},
		{"BindPort", func(c *Config) { c.BindPort = 70000 }},
		{"AdvertiseAddr", func(c *Config) { c.AdvertiseAddr = "nope" }},
		{"AdvertisePort", func(c *Config) { c.AdvertisePort = -1 }},
		{"Seeds[1]", func(c *Config) { c.Seeds = []string{"127.0.0.1:7946", "127.0.0.1"} }},
		{"Seeds[0]", func(c *Config) { c.Seeds = []string{"127.0.0.1:0"} }},
		{"SecretKey", func(c *Config) { c.SecretKey = []byte("short") }},
		{"Label", func(c *Config) { c.Label = strings.Repeat("l", 256) }},
		{"Profile", func(c *Config) { c.Profile = "wan" }},
		{"Tuning.ProbeInterval", func(c *Config) { c.Tuning.ProbeInterval = -time.Second }},
		{"Tuning.SuspicionMult", func(c *Config) { c.Tuning.SuspicionMult = -1 }},
		{"Tuning.ProbeTimeout", func(c *Config) { c.Tuning.ProbeTimeout = 2 * time.Second }},
		{"JoinTimeout", func(c *Config) { c.JoinTimeout = 0 }},
		{"JoinBackoff", func(c *Config) { c.JoinBackoff = 0 }},
		{"JoinBackoffMax", func(c *Config) { c.JoinBackoffMax = time.Millisecond }},
		{"LeaveTimeout", func(c *Config) { c.LeaveTimeout = 0 }},
		{"EventBuffer", func(c *Config) { c.EventBuffer = 0 }},
	} {
		c := DefaultConfig()
		tc.edit(&c)
		err := c.Validate()
		var ce *fielderr.Error
		if !errors.As(err, &ce) || !errors.Is(err, ErrInvalidConfig) || ce.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
		if _, jerr := Join(t.Context(), c, memMeta("x"), nil); !errors.Is(jerr, ErrInvalidConfig) {
			t.Errorf("%s: Join accepted a bad config: %v", tc.field, jerr)
		}
	}
	for _, n := range []int{16, 24, 32} {
		c := DefaultConfig()
		c.SecretKey = make([]byte, n)
		if err := c.Validate(); err != nil {
			t.Errorf("%d-byte key: %v", n, err)
		}
	}
	c := DefaultConfig()
	c.Tuning.ProbeInterval = 3 * time.Second
	tu, err := c.EffectiveTuning()
	if err != nil || tu.ProbeInterval != 3*time.Second || tu.ProbeTimeout != LANTuning().ProbeTimeout {
		t.Errorf("override not applied: %+v %v", tu, err)
	}
}

func TestParseRoles(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want []Role
		bad  string
	}{
		{"rollout,learner", []Role{RoleRollout, RoleLearner}, ""},
		{" coordinator , engineer ", []Role{RoleCoordinator, RoleEngineer}, ""},
		{"rollout,rollout", []Role{RoleRollout}, ""},
		{"", nil, ""},
		{"  ", nil, ""},
		{"rollout,chef", nil, "chef"},
		{"rollout,,learner", nil, ""},
		{"Rollout", nil, "Rollout"},
	} {
		got, err := ParseRoles(tc.in)
		wantErr := tc.bad != "" || strings.Contains(tc.in, ",,")
		if wantErr {
			var re *RoleError
			if !errors.As(err, &re) || !errors.Is(err, ErrUnknownRole) || re.Role != tc.bad {
				t.Errorf("ParseRoles(%q): want RoleError{%q}, got %v", tc.in, tc.bad, err)
			}
			if !strings.Contains(err.Error(), "coordinator") {
				t.Errorf("error does not list the valid roles: %v", err)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tc.want) {
			t.Errorf("ParseRoles(%q) = %v, %v; want %v", tc.in, got, err, tc.want)
		}
		if back, _ := ParseRoles(FormatRoles(got)); !slices.Equal(back, got) {
			t.Errorf("FormatRoles round trip %v -> %v", got, back)
		}
	}
}

func TestNodeMetaValidate(t *testing.T) {
	ok := NodeMeta{ID: "abc-1", Address: "10.0.0.1:8090", Roles: []Role{RoleRollout}, Capacity: 2, Kinds: []string{"rollout"}}
	if err := ok.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		edit  func(*NodeMeta)
	}{
		{"ID", func(m *NodeMeta) { m.ID = "" }},
		{"ID", func(m *NodeMeta) { m.ID = "has space" }},
		{"ID", func(m *NodeMeta) { m.ID = strings.Repeat("a", 65) }},
		{"Address", func(m *NodeMeta) { m.Address = "nohost" }},
		{"Address", func(m *NodeMeta) { m.Address = ":80" }},
		{"Address", func(m *NodeMeta) { m.Address = "h:0" }},
		{"Roles[1]", func(m *NodeMeta) { m.Roles = []Role{RoleRollout, "chef"} }},
		{"Roles[1]", func(m *NodeMeta) { m.Roles = []Role{RoleRollout, RoleRollout} }},
		{"Capacity", func(m *NodeMeta) { m.Capacity = -1 }},
		{"Kinds[0]", func(m *NodeMeta) { m.Kinds = []string{""} }},
		{"Kinds[1]", func(m *NodeMeta) { m.Kinds = []string{"a", "a"} }},
	} {
		m := ok.Clone()
		tc.edit(&m)
		var me *fielderr.Error
		err := m.Validate()
		if !errors.As(err, &me) || !errors.Is(err, ErrInvalidMeta) || me.Field != tc.field {
			t.Errorf("%s: got %v", tc.field, err)
		}
		if _, err := m.Encode(); !errors.Is(err, ErrInvalidMeta) {
			t.Errorf("%s: Encode accepted invalid meta: %v", tc.field, err)
		}
	}
	bad := ok.Clone()
	bad.Roles = []Role{"chef"}
	if err := bad.Validate(); !errors.Is(err, ErrUnknownRole) {
		t.Errorf("unknown role not reported as ErrUnknownRole: %v", err)
	}
}

func memRandomMeta(r *rand.Rand) NodeMeta {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-"
	str := func(n int, alpha string) string {
		b := make([]byte, n)
		for i := range b {
			b[i] = alpha[r.IntN(len(alpha))]
		}
		return string(b)
	}
	m := NodeMeta{
		ID:       str(1+r.IntN(maxIDLen), letters),
		Name:     str(r.IntN(40), letters+" \"\\\n<>&") + "é",
		Capacity: r.IntN(1000),
		Version:  str(r.IntN(20), letters),
		Client:   r.IntN(2) == 0,
	}
	if r.IntN(3) > 0 {
		m.Address = "127.0.0.1:" + string(rune('1'+r.IntN(9))) + "000"
	}
	for _, role := range allRoles {
		if r.IntN(2) == 0 {
			m.Roles = append(m.Roles, role)
		}
	}
	for i := range r.IntN(4) {
		m.Kinds = append(m.Kinds, str(1+r.IntN(10), letters)+string(rune('a'+i)))
	}
	return m
}

func TestNodeMetaEncodeRoundTrip(t *testing.T) {
	r := memRand(t)
	for range 500 {
		m := memRandomMeta(r)
		b, err := m.Encode()
		if errors.Is(err, ErrMetaTooLarge) {
			continue
		}
		if err != nil {
			t.Fatalf("encode %+v: %v", m, err)
		}
		if len(b) > MaxMetaSize {
			t.Fatalf("encoded %d bytes", len(b))
		}
		got, err := DecodeNodeMeta(b)
		if err != nil || !got.Equal(m) {
			t.Fatalf("round trip %+v -> %+v, %v", m, got, err)
		}
	}
	for _, b := range [][]byte{nil, {}, {2, '{', '}'}, []byte(`{"id":"x"}`), {1}, []byte("\x01{}"), []byte("\x01{\"id\":\"a b\"}"), make([]byte, MaxMetaSize+1)} {
		if _, err := DecodeNodeMeta(b); !errors.Is(err, ErrBadMeta) {
			t.Errorf("DecodeNodeMeta(%q): want ErrBadMeta, got %v", b, err)
		}
	}
}

func FuzzDecodeNodeMeta(f *testing.F) {
	good, _ := NodeMeta{ID: "a", Roles: []Role{RoleRollout}, Kinds: []string{"k"}}.Encode()
	f.Add(good)
	f.Add([]byte("\x01{\"id\":\"\"}"))
	f.Add([]byte("\x01[]"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := DecodeNodeMeta(b)
		if err != nil {
			if !errors.Is(err, ErrBadMeta) {
				t.Fatalf("error not ErrBadMeta: %v", err)
			}
			return
		}
		b2, err := m.Encode()
		if errors.Is(err, ErrMetaTooLarge) {
			return // JSON re-encoding may grow (invalid UTF-8 becomes U+FFFD)
		}
		if err != nil {
			t.Fatalf("decoded meta does not re-encode: %v", err)
		}
		m2, err := DecodeNodeMeta(b2)
		if err != nil || !m2.Equal(m) {
			t.Fatalf("re-decode %+v -> %+v, %v", m, m2, err)
		}
	})
}

func TestMembershipConcurrentLifecycle(t *testing.T) {
	memLeakCheck(t)
	nodes := memCluster(t, 2, nil)
	m := nodes[1]
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			switch i % 3 {
			case 0:
				_ = m.Leave(time.Second)
			case 1:
				_ = m.Shutdown()
			case 2:
				meta := m.LocalNode()
				meta.Capacity = i
				if err := m.UpdateMeta(meta, time.Second); err != nil && !errors.Is(err, ErrShutdown) {
					t.Errorf("update during shutdown: %v", err)
				}
			}
			_ = m.Members()
			_ = m.Stats()
		})
	}
	wg.Wait()
	if err := m.UpdateMeta(m.LocalNode(), time.Second); !errors.Is(err, ErrShutdown) {
		t.Errorf("update after shutdown: want ErrShutdown, got %v", err)
	}
	if err := m.Leave(time.Second); err != nil {
		t.Errorf("leave after shutdown: %v", err)
	}
	_ = nodes[0].Shutdown()
}

func TestMembershipPortInUse(t *testing.T) {
	memLeakCheck(t)
	a := memStart(t, memConfig(), memMeta("a"))
	cfg := memConfig()
	_, port, _ := strings.Cut(a.Addr(), ":")
	cfg.BindPort = mustAtoi(t, port)
	if m, err := Join(t.Context(), cfg, memMeta("b"), nil); err == nil {
		_ = m.Shutdown()
		t.Fatal("two nodes bound the same port")
	}
	_ = a.Shutdown()
}

func BenchmarkNodeMetaEncode(b *testing.B) {
	m := NodeMeta{ID: NewNodeID(), Name: "rollout-7.example", Address: "10.1.2.3:8090", Roles: []Role{RoleRollout, RoleLearner}, Capacity: 16, Version: "v0.1.0", Kinds: []string{"rollout", "learner", "prototopic"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkNodeMetaDecode(b *testing.B) {
	m := NodeMeta{ID: NewNodeID(), Name: "rollout-7.example", Address: "10.1.2.3:8090", Roles: []Role{RoleRollout, RoleLearner}, Capacity: 16, Version: "v0.1.0", Kinds: []string{"rollout", "learner", "prototopic"}}
	enc, err := m.Encode()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(enc)))
	for b.Loop() {
		if _, err := DecodeNodeMeta(enc); err != nil {
			b.Fatal(err)
		}
	}
}
