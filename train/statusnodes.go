package train

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/cluster/store"
)

// StatusLoad is a node's work as the run's coordinator accounts it
// (actors.NodeLoad): it leases every unit, so it knows per node what it
// issued, what came back and when.
type StatusLoad struct {
	UnitsDone     uint64 `json:"units_done"`
	UnitsInFlight int    `json:"units_in_flight"`
	// LostLeases counts leases that expired, were rejected or were
	// re-issued because the node left.
	LostLeases uint64 `json:"lost_leases"`
	// MeanUnitTime is the mean time from lease to result; 0: no unit timed
	// yet.
	MeanUnitTime time.Duration `json:"mean_unit_time_ns"`
	// LastUnitMs is when its last result arrived, LastHeartbeatMs when the
	// coordinator last heard from it (0: never).
	LastUnitMs      int64 `json:"last_unit_unix_ms,omitempty"`
	LastHeartbeatMs int64 `json:"last_heartbeat_unix_ms,omitempty"`
	// Left is set once membership reported the node gone.
	Left bool `json:"left,omitempty"`
}

// LoadStatus is the load of the nodes in ls together (one process's
// rollouts; several entries when its rollouts reported several node
// names); nil for none.
func LoadStatus(ls ...actors.NodeLoad) *StatusLoad {
	if len(ls) == 0 {
		return nil
	}
	out := &StatusLoad{Left: true}
	var busy time.Duration
	var timed uint64
	for _, l := range ls {
		out.UnitsDone += l.UnitsDone
		out.UnitsInFlight += l.InFlight
		out.LostLeases += l.Lost
		out.LastUnitMs = max(out.LastUnitMs, unixMs(l.LastDone))
		out.LastHeartbeatMs = max(out.LastHeartbeatMs, unixMs(l.LastContact))
		out.Left = out.Left && l.Left
		busy += l.MeanUnitTime * time.Duration(l.Timed)
		timed += l.Timed
	}
	if timed > 0 {
		out.MeanUnitTime = busy / time.Duration(timed)
	}
	return out
}

func unixMs(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

// String is "12 units done, 2 in flight, mean unit 1.4s, 0 leases lost,
// last heartbeat 0.3s ago" at now.
func (l *StatusLoad) String(now time.Time) string {
	mean := "-"
	if d := l.MeanUnitTime; d > 0 {
		mean = figures3(d).String()
	}
	s := fmt.Sprintf("%d units done, %d in flight, mean unit %s, %d leases lost, last heartbeat %s",
		l.UnitsDone, l.UnitsInFlight, mean, l.LostLeases, ago(now, l.LastHeartbeatMs))
	if l.Left {
		s += ", left"
	}
	return s
}

// figures3 rounds d to 3 significant figures (1.3048712s → 1.3s,
// 16.1561ms → 16.2ms), to the microsecond at least.
func figures3(d time.Duration) time.Duration {
	unit := time.Microsecond
	for unit*1000 <= d {
		unit *= 10
	}
	return d.Round(unit)
}

func ago(now time.Time, ms int64) string {
	if ms == 0 {
		return "never"
	}
	return now.Sub(time.UnixMilli(ms)).Round(100*time.Millisecond).String() + " ago"
}

// writeNodes prints the run's processes: as the serving process knows
// them, or as the run recorded them at recordedMs (`t2t status`, which
// reads Redis only); nil: none known.
func writeNodes(b *strings.Builder, nodes []StatusNode, recordedMs int64, now time.Time) {
	if nodes == nil {
		b.WriteString("\nnodes: not in Redis (the run wrote no nodes record; the live page /ui of the run's coordinator lists them)\n")
		return
	}
	if recordedMs != 0 {
		fmt.Fprintf(b, "\nnodes (as the run recorded them %s):\n", ago(now, recordedMs))
	} else {
		b.WriteString("\nnodes:\n")
	}
	if len(nodes) == 0 {
		b.WriteString("  none\n")
	}
	for _, n := range nodes {
		fmt.Fprintf(b, "  %s (id %s", cmp.Or(n.Name, "-"), n.ID)
		if n.PID != 0 {
			fmt.Fprintf(b, ", pid %d", n.PID)
		}
		fmt.Fprintf(b, ") %s at %s", strings.Join(n.Roles, ","), cmp.Or(n.Address, "-"))
		if n.Capacity > 0 {
			fmt.Fprintf(b, ", capacity %d", n.Capacity)
		}
		if l := n.Load; l != nil {
			fmt.Fprintf(b, ": %s", l.String(now))
			if n.PID != 0 {
				fmt.Fprintf(b, ", policy lag %d", n.PolicyLag)
			}
		}
		b.WriteString("\n")
	}
}

// localRoles are the roles of a one-process run's process: all of them.
var localRoles = []cluster.Role{cluster.RoleCoordinator, cluster.RoleLearner, cluster.RoleRollout, cluster.RoleEngineer}

// LocalNode is the process of a one-process run as its one node: every
// role, this process's host name and pid, the policy lag of the last unit
// its rollouts finished, and the load of all its rollouts (whatever node
// names they reported). id names it, address says where it is.
func LocalNode(id, address string, policyLag int64, loads []actors.NodeLoad) StatusNode {
	name, _ := os.Hostname()
	return StatusNode{ID: id, Name: name, PID: os.Getpid(), Roles: RoleNames(localRoles), Address: address,
		PolicyLag: policyLag, Load: LoadStatus(loads...)}
}

// ClusterNodes is a cluster run's members, each with its load from loads
// (matched by node ID), then the nodes the coordinator leased units to
// that are members no more (left), with their counts. Never nil.
func ClusterNodes(members []StatusNode, loads []actors.NodeLoad) []StatusNode {
	byNode := make(map[string]actors.NodeLoad, len(loads))
	for _, l := range loads {
		byNode[l.Node] = l
	}
	out := make([]StatusNode, 0, len(members)+len(loads))
	for _, n := range members {
		if l, ok := byNode[n.ID]; ok {
			n.Load = LoadStatus(l)
			delete(byNode, n.ID)
		}
		out = append(out, n)
	}
	for _, l := range loads {
		if _, gone := byNode[l.Node]; gone {
			out = append(out, StatusNode{ID: l.Node, Roles: []string{string(cluster.RoleRollout)}, Address: "not a member", Load: LoadStatus(l)})
		}
	}
	return out
}

// MemberNode is a cluster member as a node of the run, without its load.
func MemberNode(m cluster.NodeMeta) StatusNode {
	return StatusNode{ID: m.ID, Name: m.Name, Roles: RoleNames(m.Roles), Address: m.Address, Capacity: m.Capacity}
}

// RoleNames are roles as strings.
func RoleNames(roles []cluster.Role) []string {
	out := make([]string, len(roles))
	for i, r := range roles {
		out[i] = string(r)
	}
	return out
}

// NodesRecord is a run's nodes with their load as the run recorded them
// with its state (Redis key P:run:{R}:nodes, JSON; field names are part of
// the format: only append). `t2t status` prints it.
type NodesRecord struct {
	RunID         string       `json:"run_id"`
	Nodes         []StatusNode `json:"nodes"`
	UpdatedUnixMs int64        `json:"updated_unix_ms"`
}

// nodesRecorder writes the run's nodes with their load to Redis whenever
// the run's state writer writes its state (state.go), so it never holds
// up an actor.
type nodesRecorder struct {
	mu  sync.Mutex
	sys *actors.System // nil until the actor system is built: nothing recorded yet
	// node is this process's actor node name: a one-process run's node ID.
	node string
	// lag is the policy lag of the last unit this process's rollouts finished.
	lag func() int64
	// members lists the cluster's members (Cluster.Members); nil: a
	// one-process run.
	members func() []StatusNode
	st      *store.Store
	run     string
	warn    func(err error)
}

// attach starts recording the load of sys's nodes; node is its actor node
// name, lag reads the policy lag of this process's last unit.
func (n *nodesRecorder) attach(sys *actors.System, node string, lag func() int64) {
	n.mu.Lock()
	n.sys, n.node, n.lag = sys, node, lag
	n.mu.Unlock()
}

// record returns the nodes record at now; ok is false before the actor
// system is built.
func (n *nodesRecorder) record(now time.Time) (rec NodesRecord, ok bool) {
	n.mu.Lock()
	sys, node, lag := n.sys, n.node, n.lag
	n.mu.Unlock()
	if sys == nil {
		return NodesRecord{}, false
	}
	rec = NodesRecord{RunID: n.run, UpdatedUnixMs: now.UnixMilli()}
	if n.members != nil {
		rec.Nodes = ClusterNodes(n.members(), sys.NodeLoads())
	} else {
		rec.Nodes = []StatusNode{LocalNode(node, "the run's process", lag(), sys.NodeLoads())}
	}
	return rec, true
}

// publish writes the record to Redis.
func (n *nodesRecorder) publish(ctx context.Context) {
	rec, ok := n.record(time.Now())
	if !ok {
		return
	}
	if err := PutNodes(ctx, n.st, rec); err != nil && n.warn != nil {
		n.warn(err)
	}
}

// PutNodes writes the run's nodes record to st (last writer wins).
func PutNodes(ctx context.Context, st *store.Store, rec NodesRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := st.PutNodes(ctx, rec.RunID, b); err != nil {
		return fmt.Errorf("train: put nodes of run %s: %w", rec.RunID, err)
	}
	return nil
}

// ReadNodes reads the run's nodes record from st; ok is false when the run
// wrote none.
func ReadNodes(ctx context.Context, st *store.Store, runID string) (rec NodesRecord, ok bool, err error) {
	b, err := st.Nodes(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return NodesRecord{}, false, nil
	}
	if err != nil {
		return NodesRecord{}, false, fmt.Errorf("train: nodes of run %s: %w", runID, err)
	}
	if err := json.Unmarshal(b, &rec); err != nil {
		return NodesRecord{}, false, fmt.Errorf("train: nodes of run %s: %w", runID, err)
	}
	return rec, true, nil
}
