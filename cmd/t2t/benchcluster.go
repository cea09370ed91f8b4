package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/bench"
	"github.com/t2t-lab/t2t/cluster/store"
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
	o := bench.DefaultClusterOptions()
	var redis store.Flags
	redis.Register(fs, "a real Redis to time RecordUnit on (its server time from INFO commandstats); empty: the embedded one, client time only")
	fs.IntVar(&o.RecordUnits, "record-units", o.RecordUnits, "RecordUnit calls to time")
	rollouts := fs.String("rollouts", strings.Trim(strings.Join(strings.Fields(fmt.Sprint(o.Rollouts)), ","), "[]"), "rollout actor counts R to simulate")
	profiles := fs.String("profiles", "", "profiles to simulate (default all: "+strings.Join(bench.ClusterProfileNames(), ",")+")")
	svg := fs.String("svg", "", "write the curves (episodes/s fed to the learner against R) as SVG to this file")
	jsonOut := fs.String("json", "", "write every simulated point as JSON to this file")
	fs.Uint64Var(&o.Seed, "seed", o.Seed, "seed of the unit latency jitter")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	o.RedisURL = redis.URL()
	if err := o.ParseLists(*rollouts, *profiles); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	points, err := bench.Cluster(ctx, o, stdout)
	if err != nil {
		return err
	}
	if *svg != "" {
		if err := writeOut(*svg, stdout, bench.ClusterSVG(points)); err != nil {
			return err
		}
	}
	if *jsonOut != "" {
		return writeJSONFile(*jsonOut, stdout, points)
	}
	return nil
}
