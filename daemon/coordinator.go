package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/cluster"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
	"github.com/t2t-lab/t2t/train"
)

// LLMModelName is the model id a coordinator's policy endpoint
// (Config.ServeAddr) serves.
const LLMModelName = "t2t-policy"

// coordinate runs the training run with the actor system listening for
// rollout processes, and feeds departed rollout processes to
// System.NodeLeft.
func (p *process) coordinate(ctx context.Context) error {
	tr, err := p.run.Build(p.logger, p.out)
	if err != nil {
		return err
	}
	if tr.Close != nil {
		defer func() {
			if err := tr.Close(); err != nil {
				p.logger.Warn("close policy", "error", err)
			}
		}()
	}
	opt := tr.Options
	opt.Tracer = p.cfg.Tracer
	opt.OnState = p.metrics.state
	opt.Metrics = p.metrics.m
	opt.StalenessK, opt.MaxLag, opt.KeepLateK = p.cfg.StalenessK, p.cfg.MaxLag, p.cfg.KeepLateK
	opt.OnFlow = p.dash.onFlow
	p.dash.WithSampling(train.NewSamplingMeter(tr.Policy, time.Now())).WithDevice(train.NewDeviceMeter(tr.Policy))
	defer p.dash.waitDevice()
	if p.cfg.Roles.Rollout {
		opt.Rollouts = p.cfg.Capacity
		logUnit, closeLog, err := openUnitLog(p.cfg.UnitLogPath, p.cfg.ID, p.logger)
		if err != nil {
			return err
		}
		defer closeLog()
		opt.OnUnit = func(u train.UnitLog) {
			p.metrics.unit(u)
			logUnit(u)
		}
	}
	endpoint, stopServe, err := p.serveLLM(tr.Policy)
	if err != nil {
		return err
	}
	defer stopServe()
	var (
		mu sync.Mutex
		m  *cluster.Membership
	)
	opt.Cluster = p.clusterOptions(ctx, endpoint, func(mm *cluster.Membership) {
		mu.Lock()
		m = mm
		mu.Unlock()
	})
	res, runErr := train.Run(ctx, opt, tr.Policy, p.st)
	p.health.set(false, "stopping")
	mu.Lock()
	if m != nil {
		if err := m.Leave(p.cfg.Gossip.LeaveTimeout); err != nil {
			p.logger.Warn("leave cluster", "error", err)
		}
	}
	mu.Unlock()
	if err := p.runSummary(res, runErr, opt); err != nil {
		return errors.Join(runErr, err)
	}
	if runErr != nil && ctx.Err() != nil {
		return fmt.Errorf("interrupted: %w", runErr)
	}
	return runErr
}

// runSummary prints the run's last line and writes the coordinator's
// summary.
func (p *process) runSummary(res *train.Result, runErr error, opt train.Options) error {
	sum := Summary{Run: res}
	if runErr != nil {
		sum.Error = runErr.Error()
	}
	if res != nil {
		sum.UnitsPerStage = (opt.Config.Instances + opt.InstancesPerUnit - 1) / opt.InstancesPerUnit * max(opt.Epochs, 1)
		f := res.Flow()
		sum.Flow = &f
		fmt.Fprintln(p.out, runLine(res, sum.UnitsPerStage, f))
	}
	return p.writeSummary(sum)
}

// clusterOptions are the run's cluster options: once the actor system is
// up, the process joins the membership (joined gets it), starts watching
// it for departed rollout processes and reports ready.
func (p *process) clusterOptions(ctx context.Context, endpoint string, joined func(*cluster.Membership)) train.Cluster {
	// Without a shared Redis (a one-node cluster) no rollout process could
	// run this run's units: the process then neither listens nor
	// advertises an actor address, so rollout processes do not take it for
	// a coordinator.
	listen := p.cfg.Listen
	if p.ps == nil {
		listen = ""
	}
	return train.Cluster{Endpoint: endpoint, EndpointModel: LLMModelName,
		Node: p.cfg.ID, Listen: listen, RemoteOnly: !p.cfg.Roles.Rollout, LeaseTimeout: p.cfg.Lease, Policies: p.ps, RemoteOptions: p.remoteOpts,
		Members: p.memberNodes,
		Started: func(sys *actors.System) error {
			addr := ""
			if listen != "" {
				addr = sys.Host().Address()
			}
			m, err := cluster.Join(ctx, p.cfg.Gossip, p.meta(addr), p.logger)
			if err != nil {
				return fmt.Errorf("join cluster: %w", err)
			}
			joined(m)
			p.members.Store(m)
			p.metrics.attach(sys)
			p.dash.attach(sys)
			go p.watchRollouts(m, sys)
			p.joined(m, addr)
			p.health.set(true, "running")
			return nil
		},
	}
}

// runLine is the coordinator's last line: what the run did.
func runLine(res *train.Result, unitsPerStage int, f train.FlowStats) string {
	var reissued uint64
	for _, sd := range res.Actors.Stages {
		reissued += uint64(sd.Reissued)
	}
	dups := res.Actors.Coordinator.Duplicates
	l := res.Actors.Learner
	line := fmt.Sprintf("t2t node: run %s: %d stages done, %d units per stage, %d re-issued, %d duplicate results, learner %d updates, %d groups used (%d kept late), %d discarded (%.1f%%: stale %d, late stage %d, duplicate %d), dispatch waited %s for the learner",
		res.RunID, len(res.Actors.Stages), unitsPerStage, reissued, dups, l.Updates, l.Used, l.LateKept, f.Discarded(), 100*f.DiscardShare(),
		f.DiscardedStale, f.DiscardedLateStage, f.DiscardedDuplicate, f.LearnerWait.Round(100*time.Millisecond))
	if f.Warn() {
		line += "; WARNING: " + train.DiscardWarning(f)
	}
	return line
}

// watchRollouts reports every rollout process that leaves the membership
// (gracefully or declared dead) to the coordinator, which re-issues its
// units at once. It returns when the membership ends.
func (p *process) watchRollouts(m *cluster.Membership, sys *actors.System) {
	ch, cancel := m.Watch()
	defer cancel()
	known := map[string]cluster.NodeMeta{}
	for range ch {
		cur := map[string]cluster.NodeMeta{}
		for _, mem := range m.Members() {
			if mem.ID != p.cfg.ID && mem.HasRole(cluster.RoleRollout) {
				cur[mem.ID] = mem
			}
		}
		for id, mem := range known {
			if _, ok := cur[id]; !ok {
				sys.NodeLeft(id)
				fmt.Fprintf(p.out, "t2t node: rollout node left id=%s name=%s: its units are re-issued\n", id, mem.Name)
			}
		}
		for id, mem := range cur {
			if _, ok := known[id]; !ok {
				fmt.Fprintf(p.out, "t2t node: rollout node joined id=%s name=%s capacity=%d actors=%s\n", id, mem.Name, mem.Capacity, mem.Address)
			}
		}
		known = cur
	}
}

// serveLLM serves an LLM policy's model on Config.ServeAddr
// (OpenAI-compatible), so rollout processes sample from the weights the
// learner trains (the same model object: no copy, no swap). It returns
// the endpoint's base URL, or "" for other policies.
func (p *process) serveLLM(pol train.Policy) (string, func(), error) {
	tp, ok := pol.(*textpolicy.Policy)
	if !ok || p.cfg.ServeAddr == "" {
		return "", func() {}, nil
	}
	opt := p.cfg.Serve
	opt.ModelName, opt.Logger = LLMModelName, p.logger
	srv, err := serve.New(tp.LM(), opt)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", p.cfg.ServeAddr)
	if err != nil {
		return "", nil, settingError("ServeAddr", p.cfg.ServeAddr, err)
	}
	hs := srv.HTTPServer()
	go hs.Serve(ln)
	url := "http://" + ln.Addr().String() + "/v1"
	fmt.Fprintf(p.out, "t2t node: serving the policy at %s\n", url)
	if w := serve.InsecureWarning(ln.Addr(), opt.APIKey); w != "" {
		fmt.Fprintf(p.out, "t2t node: %s\n", w)
	}
	return url, func() { hs.Close() }, nil
}
