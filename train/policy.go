package train

import (
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/learner/textpolicy"
)

// Policy is what a run trains: it plays episodes and learns from groups.
type Policy interface {
	// Name is the policy kind: "gridnet", "scripted", "qwen3" or "qwen3-endpoint".
	Name() string
	// Play plays groupSize episodes per instance; temperature 0 is greedy.
	// The same seed, weights and instances give the same rollout.
	Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error)
	// Update learns from groups and returns the statistics of the update.
	Update(groups []learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error)
	// Version is the policy version (updates applied).
	Version() int64
}

// What else a run needs from a policy it asks through interfaces that
// the policy may implement, never by its concrete type: Checkpointer
// (resume.go), SamplingReporter (sampling.go), DeviceReporter
// (devicemeter.go), and these.

// LMPolicy is a language-model policy sampled in this process
// (textpolicy.Policy): its model also answers a self engineer, its
// versions are pushed to a rollout engine, and rollouts on other nodes
// sample it at an endpoint.
type LMPolicy interface {
	Policy
	LM() *textpolicy.LM
	Options() textpolicy.Options
	// Save writes the whole model as a Hugging Face checkpoint,
	// SaveAdapter its LoRA adapters alone (a PEFT adapter directory).
	Save(dir string) error
	SaveAdapter(dir string) error
}

// remoteDescriber is a policy that rollout nodes build their own copy of
// from the run spec: describe writes into s what they need (SpecOf). An
// LMPolicy is described by its endpoint instead (endpointSpec).
type remoteDescriber interface {
	describe(s *RunSpec)
}

// follower is a policy a rollout node keeps at the run's newest version
// (PolicyStore.LoadLatest): follow moves it to version v, calling weights
// for v's published weights when it needs them.
type follower interface {
	follow(v int64, weights func() ([]byte, error)) error
}

// weightsPublisher is a policy whose weights travel through the policy
// store (PolicyStore.PublishPolicy), as safetensors bytes.
type weightsPublisher interface {
	encodeWeights() ([]byte, error)
}

// perInstancePlayer is a policy whose evaluation plays each instance on
// its own (evalOptions).
type perInstancePlayer interface {
	playsPerInstance() bool
}

// GridPolicy is the gridnet policy.
type GridPolicy struct {
	Net     gridnet.Model
	Rollout gridnet.RolloutConfig
}

// Name implements Policy.
func (p *GridPolicy) Name() string { return PolicyGridNet }

// Version implements Policy.
func (p *GridPolicy) Version() int64 { return p.Net.Version() }

// Play implements Policy.
func (p *GridPolicy) Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	rc := p.Rollout
	rc.GroupSize, rc.Temperature = groupSize, temperature
	return gridnet.Play(p.Net, ins, rc, rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)))
}

// describe implements remoteDescriber: the network's and the rollout's
// configs (the weights follow through the store).
func (p *GridPolicy) describe(s *RunSpec) {
	cfg, ro := p.Net.Config(), p.Rollout
	s.GridNet, s.Rollout = &cfg, &ro
}

// follow implements follower: it loads version v's weights.
func (p *GridPolicy) follow(v int64, weights func() ([]byte, error)) error {
	w, err := weights()
	if err != nil {
		return err
	}
	return DecodeWeights(p, v, w)
}

// encodeWeights implements weightsPublisher.
func (p *GridPolicy) encodeWeights() ([]byte, error) { return EncodeWeights(p) }

// Update implements Policy.
func (p *GridPolicy) Update(groups []learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error) {
	b, sig, err := gridnet.BatchFromGroups(groups, p.Rollout, true)
	if err != nil {
		return learner.UpdateStats{}, sig, err
	}
	st, err := p.Net.Update(b)
	return st, sig, err
}

// ScriptedPolicy replays each instance's optimal (sum-of-costs) plan and,
// with probability MistakeRate per agent and step, replaces the planned
// move by a random one. It drives and tests the runtime without a model;
// Update only counts versions.
type ScriptedPolicy struct {
	MistakeRate float64
	version     atomic.Int64
}

// Name implements Policy.
func (p *ScriptedPolicy) Name() string { return PolicyScripted }

// Version implements Policy.
func (p *ScriptedPolicy) Version() int64 { return p.version.Load() }

// describe implements remoteDescriber.
func (p *ScriptedPolicy) describe(s *RunSpec) { s.MistakeRate = p.MistakeRate }

// follow implements follower: a scripted policy takes the version number.
func (p *ScriptedPolicy) follow(v int64, _ func() ([]byte, error)) error {
	p.version.Store(v)
	return nil
}

// playsPerInstance implements perInstancePlayer: the mistakes of an
// instance's evaluation then do not depend on which unit played it with
// which others.
func (p *ScriptedPolicy) playsPerInstance() bool { return true }

// Update implements Policy: it learns nothing and bumps the version.
func (p *ScriptedPolicy) Update(groups []learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error) {
	var sig learner.SignalStats
	for _, g := range groups {
		s := learner.ZeroSignal(g.Rewards, len(g.Rewards))
		sig.Groups += s.Groups
		sig.ZeroSignal += s.ZeroSignal
	}
	return learner.UpdateStats{Step: p.version.Add(1)}, sig, nil
}

// Play implements Policy.
func (p *ScriptedPolicy) Play(ins []*env.Instance, groupSize int, _ float64, seed uint64) (*learner.Rollout, error) {
	rng := rand.New(rand.NewPCG(seed, 0x5c1e))
	ro := &learner.Rollout{}
	for _, in := range ins {
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			return nil, fmt.Errorf("scripted policy: instance %s: %w", in.ID, err)
		}
		moves, err := env.PlanMoves(&sol.Plan)
		if err != nil {
			return nil, err
		}
		horizon := 0
		for _, m := range moves {
			horizon = max(horizon, len(m))
		}
		for range groupSize {
			k := len(in.Agents)
			ep := learner.Episode{Instance: in, Lo: len(ro.Actions)}
			paths := make([][]env.Pos, k)
			for a := range k {
				paths[a] = []env.Pos{in.Agents[a].Start}
			}
			for t := range horizon {
				for a := range k {
					m := env.Wait
					if t < len(moves[a]) {
						m = moves[a][t]
					}
					if rng.Float64() < p.MistakeRate {
						m = env.Move(rng.IntN(env.NumMoves))
					}
					ro.Actions = append(ro.Actions, int32(m))
					ro.LogProbs = append(ro.LogProbs, 0)
					ro.Agent = append(ro.Agent, int32(a))
					last := paths[a][len(paths[a])-1]
					paths[a] = append(paths[a], m.Apply(last))
				}
			}
			ep.Hi = len(ro.Actions)
			ep.Plan = env.Plan{Paths: paths}
			env.Verify(in, &ep.Plan, &ep.Report)
			ep.Report.Failures = append([]env.Failure(nil), ep.Report.Failures...)
			ep.Reward = env.AccuracyReward(in, &ep.Report, env.SumOfCosts)
			ro.Episodes = append(ro.Episodes, ep)
		}
	}
	return ro, nil
}

// The capabilities each kind has.
var (
	_ LMPolicy          = (*textpolicy.Policy)(nil)
	_ remoteDescriber   = (*GridPolicy)(nil)
	_ remoteDescriber   = (*ScriptedPolicy)(nil)
	_ follower          = (*GridPolicy)(nil)
	_ follower          = (*ScriptedPolicy)(nil)
	_ follower          = (*EndpointPolicy)(nil)
	_ weightsPublisher  = (*GridPolicy)(nil)
	_ perInstancePlayer = (*ScriptedPolicy)(nil)
)
