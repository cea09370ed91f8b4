package cluster

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"sync"

	actorcluster "github.com/asynkron/protoactor-go/cluster"
)

// Provider is a protoactor-go cluster.ClusterProvider backed by a
// Membership: memberlist gossip decides who is in the cluster and every
// change is handed to the protoactor cluster's MemberList as its topology.
//
// Use one Provider per protoactor cluster (it is single-use):
//
//	p, err := cluster.NewProvider(cfg, cluster.NodeMeta{Name: host, Roles: roles, Capacity: 8}, logger)
//	c := actorcluster.New(system, actorcluster.Configure("t2t", p, disthash.New(), remote.Configure("0.0.0.0", 8090)))
//	c.StartMember() // calls p.StartMember: joins the gossip cluster
//	...
//	c.Shutdown(true) // calls p.Shutdown(true): graceful leave
//
// StartMember sets the metadata's ID to the actor system's ID (fresh per
// start, so a restarted node is a new member), its Address to the remote
// address and its Kinds to the cluster's kinds. Note that protoactor's
// Cluster.Shutdown(false) does not call the provider: call
// p.Shutdown(false) yourself after it, or the node stays in the gossip
// cluster. protoactor blocks a member id for good once it left the topology,
// so a node that was wrongly declared failed must restart (new id) to take
// part again.
type Provider struct {
	cfg    Config
	meta   NodeMeta
	logger *slog.Logger

	mu      sync.Mutex // guards the fields below
	started bool
	ms      *Membership
	stop    chan struct{}
	done    chan struct{}
	updates uint64
}

var _ actorcluster.ClusterProvider = (*Provider)(nil)

// NewProvider checks cfg and the caller's part of meta (Name, Roles,
// Capacity, Version; ID, Address, Kinds and Client are filled at start) and
// returns a Provider that has not joined yet. A nil logger discards logs.
func NewProvider(cfg Config, meta NodeMeta, logger *slog.Logger) (*Provider, error) {
	cfg = cfg.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	check := meta.Clone()
	check.ID, check.Address, check.Kinds = "placeholder", "", nil
	if err := check.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Provider{cfg: cfg, meta: meta.Clone(), logger: logger}, nil
}

// StartMember joins the gossip cluster as a member hosting c's kinds and
// keeps c's topology in step with membership.
// The kinds are those the cluster activated (GetClusterKinds, which adds
// protoactor's pub-sub topic kind) and those configured.
func (p *Provider) StartMember(c *actorcluster.Cluster) error {
	kinds := c.GetClusterKinds()
	for k := range c.Config.Kinds {
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	return p.start(c, kinds, false)
}

// StartClient joins the gossip cluster as a protoactor client: it follows
// the topology but is not part of it.
func (p *Provider) StartClient(c *actorcluster.Cluster) error {
	return p.start(c, nil, true)
}

func (p *Provider) start(c *actorcluster.Cluster, kinds []string, client bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.started {
		return fmt.Errorf("cluster: provider already started: %w", ErrShutdown)
	}
	p.started = true
	host, port, err := c.ActorSystem.GetHostPort()
	if err != nil || port <= 0 {
		return fmt.Errorf("cluster: provider needs a started protoactor remote (address %q): %w", c.ActorSystem.Address(), errors.Join(ErrInvalidMeta, err))
	}
	meta := p.meta.Clone()
	meta.ID = c.ActorSystem.ID
	meta.Address = net.JoinHostPort(host, strconv.Itoa(port))
	meta.Kinds = kinds
	meta.Client = client
	ms, err := Join(context.Background(), p.cfg, meta, p.logger)
	if err != nil {
		return err
	}
	p.ms = ms
	p.stop = make(chan struct{})
	p.done = make(chan struct{})
	watch, cancel := ms.Watch()
	go p.feed(c, watch, cancel, p.stop, p.done)
	return nil
}

// feed hands the alive members to c's MemberList on every membership
// change, until stop is closed or the membership shuts down. It is the only
// caller of UpdateClusterTopology.
func (p *Provider) feed(c *actorcluster.Cluster, watch <-chan struct{}, cancel func(), stop, done chan struct{}) {
	defer close(done)
	defer cancel()
	for {
		select {
		case <-stop:
			return
		case _, ok := <-watch:
			if !ok {
				return
			}
			members := p.ms.Members()
			topology := Topology(members)
			c.MemberList.UpdateClusterTopology(topology)
			p.mu.Lock()
			p.updates++
			p.mu.Unlock()
			p.logger.Debug("topology handed to protoactor", slog.Int("members", len(topology)), slog.Int("gossip_members", len(members)))
		}
	}
}

// Topology converts members into protoactor cluster members: one per node
// that runs a protoactor remote (Address set) and is not a client, with its
// ID, host, port and kinds.
func Topology(members []NodeMeta) actorcluster.Members {
	out := make(actorcluster.Members, 0, len(members))
	for _, m := range members {
		if m.Client || m.Address == "" {
			continue
		}
		host, port, err := net.SplitHostPort(m.Address)
		if err != nil {
			continue // Validate rules this out
		}
		pn, err := strconv.Atoi(port)
		if err != nil {
			continue
		}
		out = append(out, &actorcluster.Member{
			Id:    m.ID,
			Host:  host,
			Port:  int32(pn),
			Kinds: slices.Clone(m.Kinds),
		})
	}
	return out
}

// Membership returns the membership behind the provider (nil before start).
func (p *Provider) Membership() *Membership {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ms
}

// Updates returns how many topologies were handed to protoactor.
func (p *Provider) Updates() uint64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.updates
}

// Shutdown stops feeding the topology and leaves the gossip cluster:
// gracefully (others see Left at once) when graceful, else by just stopping
// (others detect a failure). Safe to call more than once.
func (p *Provider) Shutdown(graceful bool) error {
	p.mu.Lock()
	ms, stop, done := p.ms, p.stop, p.done
	p.stop = nil
	p.mu.Unlock()
	if ms == nil {
		return nil
	}
	if stop != nil {
		close(stop)
		<-done
	}
	if graceful {
		return ms.Leave(p.cfg.LeaveTimeout)
	}
	return ms.Shutdown()
}
