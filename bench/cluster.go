package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/internal/fielderr"
)

// ClusterOptions configure Cluster. DefaultClusterOptions gives the defaults named per field;
// Validate names the first field out of bounds.
type ClusterOptions struct {
	// RedisURL is a real Redis to time RecordUnit on (its server time from INFO commandstats).
	// Default empty: the embedded one, client time only.
	RedisURL string
	// RecordUnits is the number of RecordUnit calls to time. Default 2000; must be ≥ 1.
	RecordUnits int
	// Rollouts are the rollout actor counts R to simulate. Default 1, 2, 4, …, 1024; each must
	// be in [1, 4096].
	Rollouts []int
	// Profiles names the profiles to simulate (ClusterProfileNames). Default empty: all.
	Profiles []string
	// Seed seeds the unit latency jitter. Default 1.
	Seed uint64
}

// DefaultClusterOptions returns the documented defaults.
func DefaultClusterOptions() ClusterOptions {
	return ClusterOptions{RecordUnits: 2000, Rollouts: []int{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}, Seed: 1}
}

// ClusterProfileNames lists the profiles Cluster can simulate (train.DefaultClusterProfiles).
func ClusterProfileNames() []string {
	var out []string
	for _, p := range DefaultClusterProfiles() {
		out = append(out, p.Name)
	}
	return out
}

// ParseLists sets Rollouts from rollouts, comma-separated integers (t2t
// bench cluster --rollouts), and Profiles from profiles, names separated by
// commas or spaces (--profiles; empty: all). A count that is not an integer
// is a *fielderr.Error about --rollouts; Validate checks the values.
func (o *ClusterOptions) ParseLists(rollouts, profiles string) error {
	o.Rollouts = nil
	for _, f := range strings.Split(rollouts, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return &fielderr.Error{Flag: "rollouts", Value: strconv.Quote(f), Reason: "want integers in [1,4096]"}
		}
		o.Rollouts = append(o.Rollouts, r)
	}
	o.Profiles = strings.FieldsFunc(profiles, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
	return nil
}

// Validate returns a *fielderr.Error naming the first field out of bounds, as
// "ClusterOptions.<Field>".
func (o ClusterOptions) Validate() error {
	_, err := o.profiles()
	return err
}

// profiles validates o and returns the profiles it names.
func (o ClusterOptions) profiles() ([]ClusterProfile, error) {
	bad := func(field string, v any, reason string) error { return optionError("ClusterOptions", field, v, reason) }
	for _, r := range o.Rollouts {
		if r < 1 || r > 4096 {
			return nil, bad("Rollouts", r, "want integers in [1,4096]")
		}
	}
	if len(o.Rollouts) == 0 {
		return nil, bad("Rollouts", o.Rollouts, "want integers in [1,4096]")
	}
	if o.RecordUnits < 1 {
		return nil, bad("RecordUnits", o.RecordUnits, "want >= 1")
	}
	profs := DefaultClusterProfiles()
	if len(o.Profiles) == 0 {
		return profs, nil
	}
	var pick []ClusterProfile
	for _, n := range o.Profiles {
		i := slices.IndexFunc(profs, func(p ClusterProfile) bool { return p.Name == n })
		if i < 0 {
			return nil, bad("Profiles", n, "unknown profile (have "+strings.Join(ClusterProfileNames(), ", ")+")")
		}
		pick = append(pick, profs[i])
	}
	return pick, nil
}

// Cluster simulates one coordinator, one learner and R rollout actors for each profile and R
// of o (train.SimulateCluster), with Redis' RecordUnit cost measured first (on o.RedisURL, or the
// embedded Redis), writes the report to w (the cost, then per profile a table of episodes/s
// fed to the learner, discards, lag and busy shares, and where it saturates) and returns the
// points.
func Cluster(ctx context.Context, o ClusterOptions, w io.Writer) ([]ClusterPoint, error) {
	profs, err := o.profiles()
	if err != nil {
		return nil, err
	}
	st, err := store.Open(ctx, store.Options{URL: o.RedisURL})
	if err != nil {
		return nil, fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	rc, err := MeasureRecordUnit(ctx, st, o.RedisURL, o.RecordUnits)
	if err != nil {
		return nil, err
	}
	cost, what := rc.Server, "server time (INFO commandstats)"
	if cost == 0 {
		cost, what = rc.Client, "client round trip (no server figure: embedded Redis)"
	}
	fmt.Fprintf(w, "Redis RecordUnit of a 16-instance unit: %s client, %s server; simulated at %s (%s)\n",
		rc.Client.Round(time.Microsecond), rc.Server.Round(time.Microsecond), cost.Round(time.Microsecond), what)
	t0 := time.Now()
	points, err := SimulateCluster(ClusterSimOptions{Profiles: profs, Rollouts: o.Rollouts, RecordCost: cost, Seed: o.Seed})
	if err != nil {
		return nil, err
	}
	for _, p := range profs {
		if err := writeProfile(w, p, points); err != nil {
			return nil, err
		}
	}
	fmt.Fprintf(w, "\nsimulated %d points in %s\n", len(points), time.Since(t0).Round(time.Millisecond))
	return points, nil
}

// writeProfile writes one profile's header, table and saturation line.
func writeProfile(w io.Writer, p ClusterProfile, points []ClusterPoint) error {
	var mine []ClusterPoint
	for _, pt := range points {
		if pt.Profile == p.Name {
			mine = append(mine, pt)
		}
	}
	var wire WireCosts
	if len(mine) > 0 {
		wire = WireCosts{CoordMsg: mine[0].Config.CoordMsgCost, LearnerMsg: mine[0].Config.LearnerMsgCost}
	}
	fmt.Fprintf(w, "\nprofile %s: %s\n  unit %s ± %.0f%%, update %s, %d groups of %d per unit, batch %d, wire %s per coordinator message, %s per UnitGroups (measured)\n",
		p.Name, p.Note, p.UnitLatency, 100*p.UnitJitter, p.StepTime, p.InstancesPerUnit, p.GroupSize, p.LearnerBatch,
		wire.CoordMsg.Round(100*time.Nanosecond), wire.LearnerMsg.Round(time.Microsecond))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "R\tunits\tepisodes/s fed\tdiscarded %\tlag\tunits in flight\tlearner busy\tcoordinator busy\tcoord µs/msg\tRedis busy\tbottleneck\t")
	for _, pt := range mine {
		fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.1f\t%.2f\t%d\t%.0f%%\t%.2f%%\t%.1f\t%.2f%%\t%s\t\n", pt.R, pt.Config.Units, pt.EpisodesPerSecond,
			100*pt.Learner.DiscardShare(), pt.LagMean, pt.MaxInFlightUnits, 100*pt.LearnerUtil, 100*pt.Coordinator,
			float64(pt.CoordLogic+pt.Config.CoordMsgCost)/1e3, 100*pt.Redis, pt.Bottleneck)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "  %s\n", saturation(mine))
	return nil
}

// saturation names where a profile's throughput stops growing: the
// smallest R within 5% of its best, and what is busy there.
func saturation(ps []ClusterPoint) string {
	if len(ps) == 0 {
		return ""
	}
	best := 0.0
	for _, p := range ps {
		best = max(best, p.EpisodesPerSecond)
	}
	for _, p := range ps {
		if p.EpisodesPerSecond >= 0.95*best {
			if p.R == ps[len(ps)-1].R && p.Bottleneck == "rollouts" {
				return fmt.Sprintf("still growing at R=%d (%.0f episodes/s); busiest: learner %.0f%%, coordinator %.1f%%, Redis %.1f%%",
					p.R, p.EpisodesPerSecond, 100*p.LearnerUtil, 100*p.Coordinator, 100*p.Redis)
			}
			return fmt.Sprintf("saturates at R=%d: %.0f episodes/s, bound by the %s (learner %.0f%%, coordinator %.1f%%, Redis %.1f%% busy)",
				p.R, p.EpisodesPerSecond, p.Bottleneck, 100*p.LearnerUtil, 100*p.Coordinator, 100*p.Redis)
		}
	}
	return ""
}
