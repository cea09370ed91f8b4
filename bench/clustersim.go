package bench

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/train"
)

// The cluster benchmark (t2t bench cluster): actors.Simulate over R = 1 …
// 1,000 rollouts for a few cluster profiles, with the costs this machine
// can measure put in: the coordinator's logic (timed as it runs), the wire
// (encoding and decoding the messages of a unit), and Redis applying a
// RecordUnit (server time from INFO commandstats on a real Redis).

// ClusterProfile is one kind of cluster to simulate.
type ClusterProfile struct {
	Name, Note string
	// UnitLatency (± UnitJitter) is a rollout's time for one unit;
	// StepTime the learner's for one update of LearnerBatch groups.
	UnitLatency, StepTime time.Duration
	UnitJitter            float64
	InstancesPerUnit      int // groups per unit
	GroupSize             int // episodes per group
	TokensPerEpisode      int // decisions or tokens per episode (wire size)
	LearnerBatch          int
	MaxLag                int64 // < 0: dispatch not paced
	StalenessK, KeepLateK int64
	// UnitsPerRollout sizes the simulated stage: max(MinUnits, R ×
	// UnitsPerRollout) units.
	UnitsPerRollout, MinUnits int
}

// DefaultClusterProfiles are the profiles of the README's scaling curve.
//
//   - gridnet: the default run's shape (units of 16 instances × 8
//     episodes, learner batch 32) with the times measured in the 1 + 1
//     node cluster on 2 cores: work_unit p50 0.71 s, learner.update mean
//     0.83 s (t2t traces of deploy/local-cluster.sh 2 --policy gridnet).
//     Paced (max lag 2, K 4, late kept to 8) and not paced.
//   - qwen3-4b: the same shape with LLM times, estimated, not measured: a
//     unit is 128 answers of ~512 tokens on a vLLM rollout node, ~30 s; an
//     update is 256 sequences of ~1,024 tokens, 6·4e9·2.6e5 = 6.3e15 FLOPs
//     at 400 TFLOP/s (40% of an H200's dense BF16 peak), ~16 s.
//   - control: the control plane alone: gridnet-like units, a learner that
//     costs nothing, no pacing. Throughput grows with R until the
//     coordinator or Redis saturates.
func DefaultClusterProfiles() []ClusterProfile {
	grid := ClusterProfile{Name: "gridnet", UnitLatency: 710 * time.Millisecond, StepTime: 830 * time.Millisecond, UnitJitter: 0.3,
		InstancesPerUnit: 16, GroupSize: 8, TokensPerEpisode: 24, LearnerBatch: 32, MaxLag: 2, StalenessK: 4, KeepLateK: 8,
		UnitsPerRollout: 4, MinUnits: 192,
		Note: "gridnet times measured on 2 cores (unit 0.71 s, update 0.83 s), paced: max lag 2, K 4"}
	unpaced := grid
	unpaced.Name, unpaced.MaxLag = "gridnet-unpaced", -1
	unpaced.Note = "the same, dispatch not paced (before this change)"
	qwen := grid
	qwen.Name, qwen.UnitLatency, qwen.StepTime, qwen.TokensPerEpisode = "qwen3-4b", 30*time.Second, 16*time.Second, 1024
	qwen.Note = "Qwen3-4B-like, estimated: unit 30 s (128 answers on a vLLM node), update 16 s (6.3e15 FLOPs at 400 TFLOP/s), paced"
	ctl := grid
	ctl.Name, ctl.StepTime, ctl.MaxLag, ctl.StalenessK, ctl.KeepLateK = "control", 0, -1, math.MaxInt64/2, math.MaxInt64/2
	ctl.Note = "control plane only: gridnet-like units, a learner that costs nothing, no pacing"
	return []ClusterProfile{grid, unpaced, qwen, ctl}
}

// ClusterSimOptions configure SimulateCluster.
type ClusterSimOptions struct {
	Profiles []ClusterProfile
	Rollouts []int // R values; default 1, 2, 4, …, 1024 (1,000 rounded to a power of two)
	// RecordCost is Redis' server time per RecordUnit (MeasureRecordUnit).
	RecordCost time.Duration
	// Wire costs per message (MeasureWire); 0 measures them.
	Seed uint64
}

// ClusterPoint is one simulated (profile, R).
type ClusterPoint struct {
	Profile string
	R       int
	actors.SimResult
}

// WireCosts are the encode+decode times of what crosses the network per
// unit: CoordMsg per coordinator message (the mean of RequestWork,
// UnitDone without groups, WorkUnit), LearnerMsg per UnitGroups.
type WireCosts struct{ CoordMsg, LearnerMsg time.Duration }

// MeasureWire times the wire encoding and decoding of a unit's messages
// with groups of p's shape.
func MeasureWire(p ClusterProfile) (WireCosts, error) {
	reg := actors.NewRegistry()
	if err := actors.RegisterMessages(reg); err != nil {
		return WireCosts{}, err
	}
	ser := actors.NewSerializer(reg)
	groups := make([]actors.Group, p.InstancesPerUnit)
	for i := range groups {
		g := &groups[i]
		g.InstanceID, g.ConfigVersion, g.Instance = fmt.Sprintf("inst-%d", i), "cfg", bytes.Repeat([]byte("x"), 300)
		for range p.GroupSize {
			g.Samples = append(g.Samples, actors.Sample{Tokens: make([]int32, p.TokensPerEpisode), LogProbs: make([]float32, p.TokensPerEpisode), Reward: 1})
		}
	}
	// The best of 5 timings: on a shared machine the others are slowed
	// by whatever else runs.
	round := func(msg any, n int) (time.Duration, error) {
		name, err := ser.GetTypeName(msg)
		if err != nil {
			return 0, err
		}
		best := time.Duration(math.MaxInt64)
		for range 5 {
			t0 := time.Now()
			for range n {
				b, err := ser.Serialize(msg)
				if err != nil {
					return 0, err
				}
				if _, err := ser.Deserialize(name, b); err != nil {
					return 0, err
				}
			}
			best = min(best, time.Since(t0)/time.Duration(n))
		}
		return best, nil
	}
	var coord time.Duration
	for _, m := range []any{
		&actors.RequestWork{Node: "node-2", Credits: 1},
		&actors.UnitDone{UnitID: "run/s0/u17", Node: "node-2", Result: make([]byte, 16), GroupCount: p.InstancesPerUnit},
		&actors.WorkUnit{UnitID: "run/s0/u17", RunID: "run", ConfigVersion: "cfg", ConfigJSON: make([]byte, 600), Seed: 1, Lo: 16, Hi: 32,
			TraceHeaders: map[string]string{"traceparent": strings.Repeat("0", 55)}},
	} {
		d, err := round(m, 1000)
		if err != nil {
			return WireCosts{}, err
		}
		coord += d / 3
	}
	n := max(4, 50_000/max(p.InstancesPerUnit*p.GroupSize*p.TokensPerEpisode, 1))
	learn, err := round(&actors.UnitGroups{UnitID: "run/s0/u17", Node: "node-2", Groups: groups}, n)
	return WireCosts{CoordMsg: coord, LearnerMsg: learn}, err
}

// RecordCost is what one RecordUnit costs: Client is the round trip a
// rollout waits, Server the time Redis spends on it (its single thread's
// share); Server is 0 when the server does not report it (miniredis).
type RecordCost struct{ Client, Server time.Duration }

// MeasureRecordUnit applies n RecordUnit calls of a gridnet-like unit (16
// instances of the default stage-0 config, played by the scripted policy)
// to st, and reads Redis' own time for them from INFO commandstats at
// serverURL (the URL st was opened with; "" skips it).
func MeasureRecordUnit(ctx context.Context, st *store.Store, serverURL string, n int) (RecordCost, error) {
	cfg := env.DefaultLocalConfig()
	ins, err := env.Generate(cfg, 7, 0, 16)
	if err != nil {
		return RecordCost{}, err
	}
	ro, err := (&train.ScriptedPolicy{MistakeRate: 0.1}).Play(ins, 8, 1, 7)
	if err != nil {
		return RecordCost{}, err
	}
	runID := fmt.Sprintf("bench-record-%d", time.Now().UnixNano())
	res := train.AggregateEpisodes(runID, 0, store.SplitTrain, "", ro.Episodes, 0, "cfg")
	var rdb *redis.Client
	if serverURL != "" {
		ro, err := store.ParseURL(serverURL)
		if err != nil {
			return RecordCost{}, fmt.Errorf("%w: %w", train.ErrOptions, err)
		}
		rdb = redis.NewClient(ro)
		defer rdb.Close()
	}
	before, err := scriptUsec(ctx, rdb)
	if err != nil {
		return RecordCost{}, err
	}
	t0 := time.Now()
	for i := range n {
		res.UnitID = "u" + strconv.Itoa(i)
		if _, err := st.RecordUnit(ctx, res); err != nil {
			return RecordCost{}, err
		}
	}
	c := RecordCost{Client: time.Since(t0) / time.Duration(n)}
	after, err := scriptUsec(ctx, rdb)
	if err != nil {
		return RecordCost{}, err
	}
	c.Server = time.Duration((after - before) / float64(n) * float64(time.Microsecond))
	return c, nil
}

// scriptUsec is Redis' total time in EVAL and EVALSHA (µs), 0 without a
// client.
func scriptUsec(ctx context.Context, rdb *redis.Client) (float64, error) {
	if rdb == nil {
		return 0, nil
	}
	info, err := rdb.Info(ctx, "commandstats").Result()
	if err != nil {
		return 0, fmt.Errorf("train: redis INFO commandstats: %w", err)
	}
	var total float64
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":")
		if !ok || (name != "cmdstat_evalsha" && name != "cmdstat_eval") {
			continue
		}
		for _, kv := range strings.Split(rest, ",") {
			if v, ok := strings.CutPrefix(kv, "usec="); ok {
				f, err := strconv.ParseFloat(v, 64)
				if err != nil {
					return 0, fmt.Errorf("train: redis commandstats %q: %w", line, err)
				}
				total += f
			}
		}
	}
	return total, nil
}

// SimulateCluster simulates every profile at every R.
func SimulateCluster(opt ClusterSimOptions) ([]ClusterPoint, error) {
	if len(opt.Profiles) == 0 {
		opt.Profiles = DefaultClusterProfiles()
	}
	if len(opt.Rollouts) == 0 {
		for r := 1; r <= 1024; r *= 2 {
			opt.Rollouts = append(opt.Rollouts, r)
		}
	}
	var out []ClusterPoint
	for _, p := range opt.Profiles {
		w, err := MeasureWire(p)
		if err != nil {
			return nil, err
		}
		for _, r := range opt.Rollouts {
			cfg := actors.SimConfig{Rollouts: r, MaxInFlight: 1, Units: max(p.MinUnits, r*p.UnitsPerRollout),
				InstancesPerUnit: p.InstancesPerUnit, GroupSize: p.GroupSize, LearnerBatch: p.LearnerBatch,
				StalenessK: p.StalenessK, KeepLateK: p.KeepLateK, MaxLag: p.MaxLag,
				UnitLatency: p.UnitLatency, UnitJitter: p.UnitJitter, StepTime: p.StepTime,
				RecordCost: opt.RecordCost, CoordMsgCost: w.CoordMsg, LearnerMsgCost: w.LearnerMsg, Seed: opt.Seed}
			res, err := actors.Simulate(cfg)
			if err != nil {
				return nil, fmt.Errorf("profile %s, R=%d: %w", p.Name, r, err)
			}
			out = append(out, ClusterPoint{Profile: p.Name, R: r, SimResult: res})
		}
	}
	return out, nil
}

// ClusterSVG draws episodes per second fed to the learner against R
// (log-log), one line per profile, the bottleneck marked at each point:
// a circle for the learner, a square for the coordinator, a diamond for
// Redis, nothing when the rollouts (or the window) limit.
func ClusterSVG(points []ClusterPoint) []byte {
	byProf, names, pl, ok := newClusterPlot(points)
	if !ok {
		return []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"/>`)
	}
	const W, H, R, T = clusterW, clusterH, clusterR, clusterT
	var b strings.Builder
	pl.axes(&b)
	colors := []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}
	sort.Strings(names)
	for i, n := range names {
		pl.series(&b, byProf[n], colors[i%len(colors)], T+18*i, n)
	}
	ly := T + 18*len(names) + 10
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">● learner busy ≥ 90%%</text>`+"\n", W-R+12, ly)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">■ coordinator ≥ 90%%</text>`+"\n", W-R+12, ly+16)
	fmt.Fprintf(&b, `<text x="%d" y="%d" fill="#444">◆ Redis ≥ 90%%</text>`+"\n", W-R+12, ly+32)
	b.WriteString("</svg>\n")
	return []byte(b.String())
}

// ClusterSVG's canvas: width, height and the left, right, top and bottom
// margins.
const clusterW, clusterH, clusterL, clusterR, clusterT, clusterB = 720, 400, 70, 170, 30, 50

// clusterPlot maps R (log2) and episodes per second (log10, decades lo..hi)
// onto ClusterSVG's canvas.
type clusterPlot struct {
	minR, maxR, lo, hi float64
}

// newClusterPlot groups points by profile (names in first-seen order) and
// fits the plot's ranges; ok is false when there is nothing to draw.
func newClusterPlot(points []ClusterPoint) (byProf map[string][]ClusterPoint, names []string, pl clusterPlot, ok bool) {
	byProf = map[string][]ClusterPoint{}
	minR, maxR, minE, maxE := math.Inf(1), 0.0, math.Inf(1), 0.0
	for _, p := range points {
		if _, ok := byProf[p.Profile]; !ok {
			names = append(names, p.Profile)
		}
		byProf[p.Profile] = append(byProf[p.Profile], p)
		minR, maxR = math.Min(minR, float64(p.R)), math.Max(maxR, float64(p.R))
		if p.EpisodesPerSecond > 0 {
			minE, maxE = math.Min(minE, p.EpisodesPerSecond), math.Max(maxE, p.EpisodesPerSecond)
		}
	}
	if len(points) == 0 || maxE == 0 {
		return nil, nil, clusterPlot{}, false
	}
	lo, hi := math.Floor(math.Log10(minE)), math.Ceil(math.Log10(maxE))
	if hi == lo {
		hi++
	}
	return byProf, names, clusterPlot{minR: minR, maxR: maxR, lo: lo, hi: hi}, true
}

func (pl clusterPlot) x(r float64) float64 {
	const W, L, R = clusterW, clusterL, clusterR
	if pl.maxR == pl.minR {
		return L
	}
	return L + (W-L-R)*math.Log2(r/pl.minR)/math.Log2(pl.maxR/pl.minR)
}

func (pl clusterPlot) y(e float64) float64 {
	const H, T, B = clusterH, clusterT, clusterB
	return H - B - (H-B-T)*(math.Log10(math.Max(e, 1e-9))-pl.lo)/(pl.hi-pl.lo)
}

// axes writes the SVG header, background, axes, grid lines and axis labels.
func (pl clusterPlot) axes(b *strings.Builder) {
	const W, H, L, R, T, B = clusterW, clusterH, clusterL, clusterR, clusterT, clusterB
	fmt.Fprintf(b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", W, H, W, H)
	fmt.Fprintf(b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/><line x1="%d" y1="%d" x2="%d" y2="%d" stroke="#888"/>`+"\n",
		L, H-B, W-R, H-B, L, T, L, H-B)
	for d := pl.lo; d <= pl.hi; d++ {
		py := pl.y(math.Pow(10, d))
		fmt.Fprintf(b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#eee"/><text x="%d" y="%.1f" text-anchor="end">1e%d</text>`+"\n", L, py, W-R, py, L-6, py+4, int(d))
	}
	for r := pl.minR; r <= pl.maxR; r *= 2 {
		px := pl.x(r)
		fmt.Fprintf(b, `<text x="%.1f" y="%d" text-anchor="middle">%d</text>`+"\n", px, H-B+16, int(r))
	}
	fmt.Fprintf(b, `<text x="%d" y="%d" text-anchor="middle">rollout actors R</text>`+"\n", (L+W-R)/2, H-12)
	fmt.Fprintf(b, `<text x="14" y="%d" transform="rotate(-90 14 %d)" text-anchor="middle">episodes/s fed to the learner</text>`+"\n", (T+H-B)/2, (T+H-B)/2)
}

// series writes one profile's line (ps sorted by R), its bottleneck marks
// and its legend entry at height ly.
func (pl clusterPlot) series(b *strings.Builder, ps []ClusterPoint, col string, ly int, name string) {
	const W, R = clusterW, clusterR
	sort.Slice(ps, func(a, c int) bool { return ps[a].R < ps[c].R })
	var pts []string
	for _, p := range ps {
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", pl.x(float64(p.R)), pl.y(p.EpisodesPerSecond)))
	}
	fmt.Fprintf(b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(pts, " "), col)
	for _, p := range ps {
		px, py := pl.x(float64(p.R)), pl.y(p.EpisodesPerSecond)
		switch p.Bottleneck {
		case "learner":
			fmt.Fprintf(b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"/>`+"\n", px, py, col)
		case "coordinator":
			fmt.Fprintf(b, `<rect x="%.1f" y="%.1f" width="8" height="8" fill="%s"/>`+"\n", px-4, py-4, col)
		case "redis":
			fmt.Fprintf(b, `<path d="M%.1f %.1f l5 5 l-5 5 l-5 -5 z" fill="%s"/>`+"\n", px, py-5, col)
		}
	}
	fmt.Fprintf(b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n",
		W-R+12, ly, W-R+32, ly, col, W-R+38, ly+4, name)
}
