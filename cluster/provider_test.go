package cluster

import (
	"log/slog"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	actorcluster "github.com/asynkron/protoactor-go/cluster"
	"github.com/asynkron/protoactor-go/cluster/identitylookup/disthash"
	"github.com/asynkron/protoactor-go/remote"
)

// pvNode is one protoactor cluster member in the test process.
type pvNode struct {
	system   *actor.ActorSystem
	cluster  *actorcluster.Cluster
	provider *Provider

	mu       sync.Mutex
	topology []string // member ids of the last ClusterTopology event, sorted
}

func (n *pvNode) topologyIDs() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.topology)
}

// watchTopology records the topologies protoactor's MemberList publishes
// (MemberList.Members is not synchronised for outside readers).
func (n *pvNode) watchTopology() {
	n.system.EventStream.Subscribe(func(evt any) {
		if top, ok := evt.(*actorcluster.ClusterTopology); ok {
			ids := make([]string, 0, len(top.Members))
			for _, m := range top.Members {
				ids = append(ids, m.Id)
			}
			slices.Sort(ids)
			n.mu.Lock()
			n.topology = ids
			n.mu.Unlock()
		}
	})
}

func pvIDs(nodes ...*pvNode) []string {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.system.ID
	}
	slices.Sort(ids)
	return ids
}

func pvWaitTopology(t *testing.T, n *pvNode, want []string) {
	t.Helper()
	memPoll(t, 30*time.Second, "topology "+strings.Join(want, ",")+" at "+n.system.ID, func() bool {
		return slices.Equal(n.topologyIDs(), want)
	})
}

func pvProvider(t *testing.T, name string, seeds ...string) *Provider {
	t.Helper()
	cfg := LocalConfig()
	cfg.Seeds = seeds
	cfg.LeaveTimeout = 2 * time.Second
	p, err := NewProvider(cfg, NodeMeta{Name: name, Roles: []Role{RoleRollout}, Capacity: 2, Version: "test"}, memLogger(t).With(slog.String("test_node", name)))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// pvWired builds a protoactor Cluster whose MemberList is fed by a Provider,
// without starting protoactor's remote server or gossip (whose data races
// inside protoactor-go trip the race detector; see
// provider_integration_test.go). The actor system gets a placeholder remote
// address, which the provider publishes.
func pvWired(t *testing.T, name string, port int, seeds ...string) *pvNode {
	t.Helper()
	system := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger { return slog.New(slog.DiscardHandler) }))
	p := pvProvider(t, name, seeds...)
	kind := actorcluster.NewKind("echo", actor.PropsFromFunc(func(actor.Context) {}))
	rc := remote.Configure("127.0.0.1", port)
	c := actorcluster.New(system, actorcluster.Configure("t2t-test", p, disthash.New(), rc, actorcluster.WithKinds(kind)))
	c.Remote = remote.NewRemote(system, rc)
	system.ProcessRegistry.Address = rc.Address()
	n := &pvNode{system: system, cluster: c, provider: p}
	n.watchTopology()
	if err := p.StartMember(c); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Shutdown(false) })
	t.Logf("wired member %s id=%s remote=%s gossip=%s seeds=%v", name, system.ID, system.Address(), p.Membership().Addr(), seeds)
	return n
}

func TestProviderFeedsTopology(t *testing.T) {
	a := pvWired(t, "a", 18001)
	seed := a.provider.Membership().Addr()
	b := pvWired(t, "b", 18002, seed)
	c := pvWired(t, "c", 18003, seed)
	nodes := []*pvNode{a, b, c}
	all := pvIDs(a, b, c)
	for _, n := range nodes {
		pvWaitTopology(t, n, all)
	}
	for _, n := range nodes {
		got, ok := a.provider.Membership().Member(n.system.ID)
		if !ok || got.Address != n.system.Address() || !got.HasKind("echo") || !got.HasRole(RoleRollout) || got.Capacity != 2 {
			t.Errorf("member %s meta %+v (ok=%v), want address %s, kind echo", n.system.ID, got, ok, n.system.Address())
		}
	}
	if err := c.provider.Shutdown(true); err != nil {
		t.Fatalf("graceful shutdown: %v", err)
	}
	pvWaitTopology(t, a, pvIDs(a, b))
	pvWaitTopology(t, b, pvIDs(a, b))
	if err := b.provider.Shutdown(false); err != nil {
		t.Fatal(err)
	}
	pvWaitTopology(t, a, pvIDs(a))
	if a.provider.Updates() < 3 {
		t.Errorf("only %d topology updates handed to protoactor", a.provider.Updates())
	}
	if err := c.provider.StartMember(c.cluster); err == nil {
		t.Error("a provider restarted after shutdown")
	}
	_ = a.provider.Shutdown(true)
	// protoactor's actor systems keep goroutines of their own; check ours.
	pvNoGoroutines(t, "t2t/cluster.(*Provider).feed", "hashicorp/memberlist.")
}

// pvNoGoroutines waits until no goroutine stack mentions any of the given
// function name fragments, and fails with the first such stack otherwise.
func pvNoGoroutines(t *testing.T, fragments ...string) {
	t.Helper()
	leaked := func() string {
		buf := make([]byte, 1<<20)
		stacks := string(buf[:runtime.Stack(buf, true)])
		for _, g := range strings.Split(stacks, "\n\n") {
			for _, f := range fragments {
				if strings.Contains(g, f) {
					return g
				}
			}
		}
		return ""
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for g := leaked(); g != ""; g = leaked() {
		if time.Now().After(deadline) {
			t.Fatalf("goroutine still running after shutdown:\n%s", g)
		}
		<-tick.C
	}
}
