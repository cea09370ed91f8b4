package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/train"
)

const benchClusterUsage = `t2t bench cluster [--redis redis://host:port/db] [--rollouts 1,2,4,...] [--profiles gridnet,...] [--svg F] [--json F]

Simulates one coordinator, one learner and R in-process rollout actors
(R = 1 … 1,024) in simulated time, running the real coordinator, learner
and rollout logic, with injected unit and update times per profile
(gridnet measured on this machine; Qwen3-4B-like estimated) and the costs
this machine measures: the coordinator's logic and the wire per message,
and Redis' server time per RecordUnit (a real Redis at --redis; without
it the embedded one, client time only). Prints per profile and R the
episodes per second fed to the learner, the share of groups discarded,
the mean policy lag, the busy share of the learner, the coordinator and
Redis, and which saturates first; --svg draws the curves.`

// benchCluster is 't2t bench cluster'.
func benchCluster(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t bench cluster", benchClusterUsage, stderr)
	redisURL := fs.String("redis", "", "a real Redis to time RecordUnit on (its server time from INFO commandstats); empty: the embedded one, client time only")
	records := fs.Int("record-units", 2000, "RecordUnit calls to time")
	rollouts := fs.String("rollouts", "1,2,4,8,16,32,64,128,256,512,1024", "rollout actor counts R to simulate")
	profiles := fs.String("profiles", "", "profiles to simulate (default all: "+strings.Join(profileNames(train.DefaultClusterProfiles()), ",")+")")
	svg := fs.String("svg", "", "write the curves (episodes/s fed to the learner against R) as SVG to this file")
	jsonOut := fs.String("json", "", "write every simulated point as JSON to this file")
	seed := fs.Uint64("seed", 1, "seed of the unit latency jitter")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	var rs []int
	for _, f := range strings.Split(*rollouts, ",") {
		r, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || r < 1 || r > 4096 {
			return badInput("--rollouts: %q: want integers in [1,4096]", f)
		}
		rs = append(rs, r)
	}
	if *records < 1 {
		return badInput("--record-units %d: want >= 1", *records)
	}
	profs := train.DefaultClusterProfiles()
	if *profiles != "" {
		var pick []train.ClusterProfile
		for _, n := range strings.Split(*profiles, ",") {
			i := slices.IndexFunc(profs, func(p train.ClusterProfile) bool { return p.Name == strings.TrimSpace(n) })
			if i < 0 {
				return badInput("--profiles: unknown profile %q (have %s)", n, strings.Join(profileNames(profs), ", "))
			}
			pick = append(pick, profs[i])
		}
		profs = pick
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	st, err := store.Open(ctx, store.Options{URL: *redisURL})
	if err != nil {
		return fmt.Errorf("redis: %w", err)
	}
	defer st.Close()
	rc, err := train.MeasureRecordUnit(ctx, st, *redisURL, *records)
	if err != nil {
		return err
	}
	cost, what := rc.Server, "server time (INFO commandstats)"
	if cost == 0 {
		cost, what = rc.Client, "client round trip (no server figure: embedded Redis)"
	}
	fmt.Fprintf(stdout, "Redis RecordUnit of a 16-instance unit: %s client, %s server; simulated at %s (%s)\n",
		rc.Client.Round(time.Microsecond), rc.Server.Round(time.Microsecond), cost.Round(time.Microsecond), what)
	t0 := time.Now()
	points, err := train.BenchCluster(train.ClusterBenchOptions{Profiles: profs, Rollouts: rs, RecordCost: cost, Seed: *seed})
	if err != nil {
		return err
	}
	for _, p := range profs {
		var w train.WireCosts
		for _, pt := range points {
			if pt.Profile == p.Name {
				w = train.WireCosts{CoordMsg: pt.Config.CoordMsgCost, LearnerMsg: pt.Config.LearnerMsgCost}
				break
			}
		}
		fmt.Fprintf(stdout, "\nprofile %s: %s\n  unit %s ± %.0f%%, update %s, %d groups of %d per unit, batch %d, wire %s per coordinator message, %s per UnitGroups (measured)\n",
			p.Name, p.Note, p.UnitLatency, 100*p.UnitJitter, p.StepTime, p.InstancesPerUnit, p.GroupSize, p.LearnerBatch,
			w.CoordMsg.Round(100*time.Nanosecond), w.LearnerMsg.Round(time.Microsecond))
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "R\tunits\tepisodes/s fed\tdiscarded %\tlag\tunits in flight\tlearner busy\tcoordinator busy\tcoord µs/msg\tRedis busy\tbottleneck\t")
		var mine []train.ClusterBenchPoint
		for _, pt := range points {
			if pt.Profile != p.Name {
				continue
			}
			mine = append(mine, pt)
			fmt.Fprintf(tw, "%d\t%d\t%.0f\t%.1f\t%.2f\t%d\t%.0f%%\t%.2f%%\t%.1f\t%.2f%%\t%s\t\n", pt.R, pt.Config.Units, pt.EpisodesPerSecond,
				100*pt.Learner.DiscardShare(), pt.LagMean, pt.MaxInFlightUnits, 100*pt.LearnerUtil, 100*pt.Coordinator,
				float64(pt.CoordLogic+pt.Config.CoordMsgCost)/1e3, 100*pt.Redis, pt.Bottleneck)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "  %s\n", saturation(mine))
	}
	fmt.Fprintf(stdout, "\nsimulated %d points in %s\n", len(points), time.Since(t0).Round(time.Millisecond))
	if *svg != "" {
		if err := os.WriteFile(*svg, train.ClusterBenchSVG(points), 0o644); err != nil {
			return err
		}
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(points, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(*jsonOut, append(b, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// saturation names where a profile's throughput stops growing: the
// smallest R within 5% of its best, and what is busy there.
func saturation(ps []train.ClusterBenchPoint) string {
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

func profileNames(ps []train.ClusterProfile) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}
