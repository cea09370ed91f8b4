package actors

import (
	"slices"
	"strings"
	"sync"
	"time"
)

// NodeLoad is the coordinator's account of one node's rollouts (the node
// name is RequestWork.Node: SystemConfig.Node for the rollouts of this
// process, the rollout process's node id for the others). The coordinator
// leases every unit, so it knows per node what it issued, what came back
// and when; System.NodeLoads reads it.
type NodeLoad struct {
	Node string
	// UnitsDone counts the units whose accepted (first) result came from
	// this node; a late copy of a result already in does not count.
	UnitsDone uint64
	// InFlight is the units leased to the node now.
	InFlight int
	// MeanUnitTime is the mean time from lease to result over the units
	// this node finished on its own lease (a unit it finished after the
	// lease moved elsewhere counts as done, not timed); Timed counts the
	// units it is the mean of (0: none yet).
	MeanUnitTime time.Duration
	Timed        uint64
	// Lost counts the leases the node lost: expired, rejected, or
	// re-issued because the node left.
	Lost uint64
	// LastDone is when its last accepted result arrived; LastContact when
	// the coordinator last heard from one of its rollouts (a request for
	// work, an ack, a result or a rejection): its heartbeat. Zero: never.
	LastDone, LastContact time.Time
	// Left is set once membership reported the node gone (NodeLeft); its
	// counts are kept, its leases are re-issued. A message from the node
	// clears it.
	Left bool
}

// nodeLoads is the per-node account the coordinator logic keeps and any
// goroutine reads (System.NodeLoads): a mutex-guarded map, touched once
// per lease, result and message. The zero value is ready.
type nodeLoads struct {
	mu    sync.Mutex
	nodes map[string]*nodeLoad
}

type nodeLoad struct {
	NodeLoad
	busy time.Duration // sum of the Timed units' lease-to-result times
}

// get returns node's record, creating it; mu is held.
func (l *nodeLoads) get(node string) *nodeLoad {
	if l.nodes == nil {
		l.nodes = map[string]*nodeLoad{}
	}
	n, ok := l.nodes[node]
	if !ok {
		n = &nodeLoad{NodeLoad: NodeLoad{Node: node}}
		l.nodes[node] = n
	}
	return n
}

// heard records a message from one of node's rollouts at now.
func (l *nodeLoads) heard(node string, now time.Time) {
	l.mu.Lock()
	n := l.get(node)
	n.LastContact, n.Left = now, false
	l.mu.Unlock()
}

// issued records a lease to node.
func (l *nodeLoads) issued(node string) {
	l.mu.Lock()
	l.get(node).InFlight++
	l.mu.Unlock()
}

// ended records that a lease of node ended: by its result (lost false)
// or otherwise (expired, rejected, node left).
func (l *nodeLoads) ended(node string, lost bool) {
	l.mu.Lock()
	n := l.get(node)
	n.InFlight = max(n.InFlight-1, 0)
	if lost {
		n.Lost++
	}
	l.mu.Unlock()
}

// done records a result of node accepted at now; took is its
// lease-to-result time, < 0 when the unit was not on node's lease.
func (l *nodeLoads) done(node string, now time.Time, took time.Duration) {
	l.mu.Lock()
	n := l.get(node)
	n.UnitsDone++
	n.LastDone = now
	if took >= 0 {
		n.Timed++
		n.busy += took
	}
	l.mu.Unlock()
}

// left records that node left.
func (l *nodeLoads) left(node string) {
	l.mu.Lock()
	if n, ok := l.nodes[node]; ok {
		n.Left = true
	}
	l.mu.Unlock()
}

// snapshot is every node's load, by node name.
func (l *nodeLoads) snapshot() []NodeLoad {
	l.mu.Lock()
	out := make([]NodeLoad, 0, len(l.nodes))
	for _, n := range l.nodes {
		nl := n.NodeLoad
		if n.Timed > 0 {
			nl.MeanUnitTime = n.busy / time.Duration(n.Timed)
		}
		out = append(out, nl)
	}
	l.mu.Unlock()
	slices.SortFunc(out, func(a, b NodeLoad) int { return strings.Compare(a.Node, b.Node) })
	return out
}

// heard marks w's rollout as heard from now: no longer suspect, its node's
// heartbeat.
func (c *coordinator) heard(w *workerState) {
	w.suspect = false
	c.metrics.loads.heard(w.node, c.clock.Now())
}

// unitLoad accounts the accepted result of unit u from the rollout key
// before u is marked done: the lease's holder (if u is leased) no longer
// holds it, and the sender's node did a unit, timed when it held the lease.
func (c *coordinator) unitLoad(key string, u *unitState) {
	took := time.Duration(-1)
	if h, ok := c.workers[u.holder]; ok && u.status == unitLeased {
		c.metrics.loads.ended(h.node, false)
		if u.holder == key {
			now := c.clock.Now()
			// The lease began at deadline - lease: a deadline is set only when a unit is leased (dispatch), never extended, and c.lease is fixed at construction.
			took = max(now.Sub(u.deadline.Add(-c.lease)), 0)
		}
	}
	if w, ok := c.workers[key]; ok {
		c.metrics.loads.done(w.node, c.clock.Now(), took)
	}
}

// NodeLoads is the coordinator's account of every node that ran rollouts
// for this System, by node name (see NodeLoad). Safe to call at any time,
// from any goroutine, after the run too.
func (s *System) NodeLoads() []NodeLoad { return s.coordMetrics.loads.snapshot() }
