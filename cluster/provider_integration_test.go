//go:build !race

// The full protoactor cluster test runs only without the race detector:
// protoactor-go v0.0.0-20240822202345-3c0e61ca19c9 has data races of its
// own once several members run in one process (remote.Start writes
// grpclog's global logger while another member's gRPC server logs; the
// gossip actor reads MemberList.members and the BlockList without the lock
// UpdateClusterTopology holds, whatever goroutine the provider calls it
// from; gossip state maps are marshalled while being written). The
// provider's own concurrency is covered under -race by
// TestProviderFeedsTopology.

package cluster

import (
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	actorcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

const pvEchoKind = "echo"

// pvStart starts an actor system with remote on 127.0.0.1 (free port) and a
// cluster member using Provider, with the default disthash identity lookup.
func pvStart(t *testing.T, name string, seeds ...string) *pvNode {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	p := pvProvider(t, name, seeds...)
	echo := actorcluster.NewKind(pvEchoKind, actor.PropsFromFunc(func(c actor.Context) {
		if _, ok := c.Message().(*wrapperspb.StringValue); ok {
			c.Respond(wrapperspb.String(c.ActorSystem().ID))
		}
	}))
	cc := actorcluster.Configure("t2t-test", p, disthash.New(), remote.Configure("127.0.0.1", 0), actorcluster.WithKinds(echo))
	c := actorcluster.New(system, cc)
	n := &pvNode{system: system, cluster: c, provider: p}
	n.watchTopology()
	c.StartMember()
	t.Cleanup(func() { _ = p.Shutdown(false) })
	t.Logf("protoactor member %s id=%s remote=%s gossip=%s seeds=%v", name, system.ID, system.Address(), p.Membership().Addr(), seeds)
	return n
}

func TestProviderProtoactorCluster(t *testing.T) {
	a := pvStart(t, "a")
	b := pvStart(t, "b", a.provider.Membership().Addr())
	c := pvStart(t, "c", a.provider.Membership().Addr())
	nodes := []*pvNode{a, b, c}

	all := pvIDs(a, b, c)
	for _, n := range nodes {
		pvWaitTopology(t, n, all)
	}
	// The gossip metadata carries the protoactor address and kinds.
	for _, n := range nodes {
		got, ok := a.provider.Membership().Member(n.system.ID)
		if !ok || got.Address != n.system.Address() || !got.HasKind(pvEchoKind) {
			t.Errorf("member %s meta %+v (ok=%v), want address %s and kind %s", n.system.ID, got, ok, n.system.Address(), pvEchoKind)
		}
	}

	// A grain call through disthash reaches an owner in the topology.
	resp, err := b.cluster.Request("grain-1", pvEchoKind, wrapperspb.String("ping"))
	if err != nil {
		t.Fatalf("grain request: %v", err)
	}
	owner := resp.(*wrapperspb.StringValue).GetValue()
	if !slices.Contains(all, owner) {
		t.Fatalf("grain answered from %q, not a member", owner)
	}
	t.Logf("grain-1 lives on %s", owner)

	// Graceful stop: protoactor's Shutdown(true) calls our Shutdown(true).
	c.cluster.Shutdown(true)
	for _, n := range []*pvNode{a, b} {
		pvWaitTopology(t, n, pvIDs(a, b))
	}

	// Hard stop: the actor system and gossip die without a word
	// (protoactor's Shutdown(false) does not call the provider); the
	// survivor drops b once failure detection declares it dead.
	b.cluster.Shutdown(false)
	if err := b.provider.Shutdown(false); err != nil {
		t.Fatal(err)
	}
	pvWaitTopology(t, a, pvIDs(a))

	// The survivor still serves grains, now all on itself.
	resp, err = a.cluster.Request("grain-2", pvEchoKind, wrapperspb.String("ping"), actorcluster.WithTimeout(5*time.Second))
	if err != nil {
		t.Fatalf("grain request after failures: %v", err)
	}
	if got := resp.(*wrapperspb.StringValue).GetValue(); got != a.system.ID {
		t.Errorf("grain-2 answered from %q, want the survivor %q", got, a.system.ID)
	}
	a.cluster.Shutdown(true)
}
