package train

import (
	"cmp"
	"fmt"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/actors"
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
		mean = d.Round(max(time.Microsecond, min(100*time.Millisecond, d/100))).String() // 2–3 figures
	}
	s := fmt.Sprintf("%d units done, %d in flight, mean unit %s, %d leases lost, last heartbeat %s",
		l.UnitsDone, l.UnitsInFlight, mean, l.LostLeases, ago(now, l.LastHeartbeatMs))
	if l.Left {
		s += ", left"
	}
	return s
}

func ago(now time.Time, ms int64) string {
	if ms == 0 {
		return "never"
	}
	return now.Sub(time.UnixMilli(ms)).Round(100*time.Millisecond).String() + " ago"
}

// writeNodes prints the run's processes (none known: `t2t status`, which
// reads Redis only).
func writeNodes(b *strings.Builder, nodes []StatusNode, now time.Time) {
	if nodes == nil {
		b.WriteString("\nnodes: not in Redis (the live page /ui of the run's coordinator lists them)\n")
		return
	}
	b.WriteString("\nnodes:\n")
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
