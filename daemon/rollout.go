package daemon

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/train"
)

// generation is a rollout process's rollout actors for one coordinator:
// they start when a coordinator shows up in the membership and stop when
// it leaves; the next coordinator gets a new generation.
type generation struct {
	coord   cluster.NodeMeta
	handles []*actors.RolloutHandle
}

// learnerVersion is the newest learner version the generation's rollouts
// heard of.
func (g *generation) learnerVersion() int64 {
	v := int64(0)
	for _, h := range g.handles {
		v = max(v, h.Stats().Policy)
	}
	return v
}

// rolloutProcess is a rollout-only process's running state.
type rolloutProcess struct {
	*process
	node   *actors.Host
	m      *cluster.Membership
	runner *train.RemoteRunner
	cur    atomic.Pointer[generation] // the generation serving now; nil while waiting
	all    []*actors.RolloutHandle    // every generation's rollouts, for the summary
	gens   int
}

// serveRollouts runs a rollout-only process: it joins the cluster, waits
// for a coordinator in the membership, runs Config.Capacity rollout
// actors against it, and when that coordinator goes, stops them and waits
// for the next. It returns when ctx ends.
func (p *process) serveRollouts(ctx context.Context) error {
	reg := actors.NewRegistry()
	if err := actors.RegisterMessages(reg); err != nil {
		return err
	}
	node := actors.NewHost(p.cfg.ID, reg, p.logger)
	defer node.Close()
	if err := node.StartRemote(p.listenHost, p.listenPort, p.remoteOpts...); err != nil {
		return settingError("Listen", p.cfg.Listen, err)
	}
	m, err := cluster.Join(ctx, p.cfg.Gossip, p.meta(node.Address()), p.logger)
	if err != nil {
		return fmt.Errorf("join cluster via %s: %w", strings.Join(p.cfg.Gossip.Seeds, ","), err)
	}
	p.joined(m, node.Address())
	p.health.set(false, "waiting for a coordinator")

	logUnit, closeLog, err := openUnitLog(p.cfg.UnitLogPath, p.cfg.ID, p.logger)
	if err != nil {
		m.Shutdown()
		return err
	}
	defer closeLog()
	r := &rolloutProcess{process: p, node: node, m: m}
	r.runner = train.NewRemoteRunner(p.st, p.ps, p.cfg.Device, p.logger, func(u train.UnitLog) {
		p.metrics.unit(u)
		logUnit(u)
	})
	r.runner.SetTracer(p.cfg.Tracer)
	r.runner.SetMetrics(p.metrics.m)
	r.runner.SetChunk(p.cfg.Chunk)
	r.runner.SetEndpointKey(p.cfg.Serve.APIKey)
	p.metrics.attachRunner(r.runner)
	r.runner.SetLearnerVersion(func() int64 {
		if g := r.cur.Load(); g != nil {
			return g.learnerVersion()
		}
		return -1
	})
	if err := r.serve(ctx); err != nil {
		m.Shutdown()
		return err
	}
	return r.stop()
}

// serve follows the membership until ctx ends: it stops the generation
// whose coordinator left and starts one for the next coordinator.
func (r *rolloutProcess) serve(ctx context.Context) error {
	ch, cancelWatch := r.m.Watch()
	defer cancelWatch()
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-ch:
			if !ok {
				return nil
			}
		}
		members := r.m.Members()
		if g := r.cur.Load(); g != nil && !slices.ContainsFunc(members, func(x cluster.NodeMeta) bool { return x.ID == g.coord.ID }) {
			r.cur.Store(nil)
			r.stopGeneration(g)
			runID := r.runner.RunID()
			r.runner.Forget()
			if !r.cfg.Keep && r.runDone(ctx, runID) {
				fmt.Fprintf(r.out, "t2t node: coordinator %s left and run %s is done; leaving (--keep waits for the next)\n", g.coord.ID, runID)
				return nil
			}
			r.health.set(false, "waiting for a coordinator")
			fmt.Fprintf(r.out, "t2t node: coordinator %s left; waiting for the next\n", g.coord.ID)
		}
		if r.cur.Load() != nil {
			continue
		}
		i := slices.IndexFunc(members, func(x cluster.NodeMeta) bool {
			return x.ID != r.cfg.ID && x.HasRole(cluster.RoleCoordinator) && x.Address != ""
		})
		if i >= 0 {
			if err := r.startGeneration(members[i]); err != nil {
				return err
			}
		}
	}
}

// runDone tells whether run runID is recorded as done in the store (a
// coordinator that failed or was stopped leaves its run unfinished).
func (r *rolloutProcess) runDone(ctx context.Context, runID string) bool {
	if runID == "" {
		return false
	}
	st, ok, err := r.st.RunState(ctx, runID)
	if err != nil {
		r.logger.Warn("rollout: run state unknown; staying", "run", runID, "error", err)
		return false
	}
	return ok && st.Phase == train.PhaseDone
}

// startGeneration runs Config.Capacity rollout actors against coordinator
// c.
func (r *rolloutProcess) startGeneration(c cluster.NodeMeta) error {
	g := &generation{coord: c}
	coordPID, learnerPID := actor.NewPID(c.Address, actors.CoordinatorName), actor.NewPID(c.Address, actors.LearnerName)
	for k := range r.cfg.Capacity {
		h, err := r.node.SpawnRollout(actors.RolloutConfig{Name: fmt.Sprintf("rollout-%d-%d", r.gens, k),
			Coordinator: coordPID, Learner: learnerPID, MaxInFlight: r.cfg.MaxInFlight, OnPolicy: r.runner.Prefetch}, r.runner)
		if err != nil {
			r.stopGeneration(g)
			return err
		}
		g.handles = append(g.handles, h)
	}
	r.gens++
	r.all = append(r.all, g.handles...)
	r.cur.Store(g)
	r.health.set(true, "serving coordinator "+c.ID)
	fmt.Fprintf(r.out, "t2t node: serving coordinator %s at %s with %d rollouts\n", c.ID, c.Address, r.cfg.Capacity)
	return nil
}

// stopGeneration stops g's rollout actors and waits for them.
func (r *rolloutProcess) stopGeneration(g *generation) {
	for _, h := range g.handles {
		if err := r.node.System().Root.StopFuture(h.PID).Wait(); err != nil {
			r.logger.Warn("stop rollout", "error", err)
		}
	}
}

// stop stops the serving generation, leaves the cluster, prints the
// process's counters and writes the summary.
func (r *rolloutProcess) stop() error {
	r.health.set(false, "stopping")
	if g := r.cur.Load(); g != nil {
		r.cur.Store(nil)
		r.stopGeneration(g)
	}
	leaveErr := r.m.Leave(r.cfg.Gossip.LeaveTimeout)
	stats := r.runner.Stats()
	sum := Summary{Rollout: &stats}
	for _, h := range r.all {
		sum.Rollouts = append(sum.Rollouts, h.Stats())
	}
	fmt.Fprintf(r.out, "t2t node: stopped: %d units run (%d failed), %d policy loads, policy lag mean %.2f max %d, %d units took up a newer version mid-unit\n",
		stats.Units, stats.Failed, stats.PolicyLoads, meanLag(stats), stats.PolicyLagMax, stats.Refreshes)
	if leaveErr != nil {
		r.logger.Warn("leave cluster", "error", leaveErr)
	}
	return r.writeSummary(sum)
}
