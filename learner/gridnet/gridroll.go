package gridnet

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// RolloutConfig says how a StepPolicy plays episodes.
type RolloutConfig struct {
	// GroupSize is the number of episodes per instance (the GRPO group);
	// evaluation uses 1. Default 8.
	GroupSize int
	// Temperature for sampling; 0 is greedy. Training uses 1 (on-policy).
	Temperature float64
	// StepsPerSide bounds an episode at StepsPerSide·N steps on an N×N grid.
	// Default 4.
	StepsPerSide int
	// MaskIllegal forbids moves that leave the grid or step on a hole (the
	// Sim's LegalMask). Default true.
	MaskIllegal bool
	// Sequential writes each joint step one agent at a time, in agent
	// order: every agent declares its move (Sim.SetIntent) and the agents
	// after it observe the claimed cell. Default true.
	Sequential bool
	// MaskConflicts (with Sequential and MaskIllegal) also forbids moves
	// that collide with a move declared earlier in the same step
	// (Sim.SafeMask): a decoding constraint, like grammar-constrained
	// sampling for an LLM. The verifier still judges the whole plan.
	// Default true.
	MaskConflicts bool
	// Reward weighs the outcome; the accuracy reward of the paper
	// (Reward.Accuracy: env.AccuracyReward under Reward.Objective, plus
	// Reward.Partial credit for an invalid plan).
	Reward env.RewardConfig
}

// DefaultRolloutConfig returns the training defaults: groups of 8 at
// temperature 1, 4·N steps, sequential joint steps with illegal and
// conflicting moves masked, sum-of-costs reward.
func DefaultRolloutConfig() RolloutConfig {
	return RolloutConfig{GroupSize: 8, Temperature: 1, StepsPerSide: 4, MaskIllegal: true, Sequential: true, MaskConflicts: true, Reward: env.DefaultRewardConfig()}
}

// Validate checks the fields.
func (c RolloutConfig) Validate() error {
	switch {
	case c.GroupSize < 1 || c.GroupSize > 1024:
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "GroupSize", Value: c.GroupSize, Reason: "must be in [1,1024]"}
	case c.Temperature < 0 || c.Temperature > 100:
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "Temperature", Value: c.Temperature, Reason: "must be in [0,100]"}
	case c.StepsPerSide < 1 || c.StepsPerSide > 64:
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "StepsPerSide", Value: c.StepsPerSide, Reason: "must be in [1,64]"}
	}
	return c.Reward.Validate()
}

// Play plays cfg.GroupSize episodes of g on each instance, all in
// lockstep so every step is one batched Act call. rng drives sampling; the
// same rng state, weights and instances give the same rollout.
func Play(g StepPolicy, ins []*env.Instance, cfg RolloutConfig, rng *rand.Rand) (*learner.Rollout, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	obsSize := g.ObsSize()
	if want := env.ObsSize(env.ObsRadius); obsSize != want {
		return nil, fmt.Errorf("%w: gridnet observation size %d, env gives %d", learner.ErrCheckpointMismatch, obsSize, want)
	}
	p, err := newPlayer(g, ins, cfg, rng)
	if err != nil {
		return nil, err
	}
	// Each joint step is decided in rounds: all agents at once, or (with
	// Sequential) agent 0 of every live episode, then agent 1, and so on.
	rounds := 1
	if cfg.Sequential {
		for _, in := range ins {
			rounds = max(rounds, len(in.Agents))
		}
	}
	for len(p.active) > 0 {
		for round := range rounds {
			if err := p.round(round); err != nil {
				return nil, err
			}
		}
		p.step()
	}
	return p.finish(), nil
}

// player is the state of one Play call.
type player struct {
	g       StepPolicy
	cfg     RolloutConfig
	rng     *rand.Rand
	obsSize int
	ro      *learner.Rollout
	lives   []*liveEpisode
	active  []*liveEpisode
	perEp   []episodeDecisions // each episode's decisions, laid out contiguously by finish
	// one round's batch
	obs     []float32
	legal   []bool
	actions []int32
	logps   []float32
	slots   []agentSlot
}

// liveEpisode is an episode being played.
type liveEpisode struct {
	sim   *env.Sim
	ep    int
	moves [env.MaxAgents]env.Move
}

// episodeDecisions are one episode's decisions in its own flat buffers (one copy of an
// observation now, one when the episodes are laid out at the end).
type episodeDecisions struct {
	obs   []float32
	legal []bool
	agent []int32
	act   []int32
	logp  []float32
}

// agentSlot is one decision of a round: agent a of a live episode.
type agentSlot struct {
	l *liveEpisode
	a int
}

// newPlayer starts GroupSize episodes per instance.
func newPlayer(g StepPolicy, ins []*env.Instance, cfg RolloutConfig, rng *rand.Rand) (*player, error) {
	p := &player{g: g, cfg: cfg, rng: rng, obsSize: g.ObsSize(), ro: &learner.Rollout{ObsSize: g.ObsSize()}}
	for _, in := range ins {
		if err := in.Validate(); err != nil {
			return nil, err
		}
		steps := cfg.StepsPerSide * max(in.Width, in.Height)
		for range cfg.GroupSize {
			p.ro.Episodes = append(p.ro.Episodes, learner.Episode{Instance: in})
			p.lives = append(p.lives, &liveEpisode{sim: env.NewSim(in, steps), ep: len(p.ro.Episodes) - 1})
		}
	}
	p.active = p.lives
	p.perEp = make([]episodeDecisions, len(p.ro.Episodes))
	return p, nil
}

// round decides the moves of round (every agent, or with Sequential agent round) of every
// live episode in one Act call and records them.
func (p *player) round(round int) error {
	cfg := p.cfg
	p.obs, p.legal, p.slots = p.obs[:0], p.legal[:0], p.slots[:0]
	for _, l := range p.active {
		k := l.sim.NumAgents()
		lo, hi := 0, k
		if cfg.Sequential {
			if round >= k {
				continue
			}
			lo, hi = round, round+1
		}
		for a := lo; a < hi; a++ {
			p.obs = appendObs(l.sim, a, p.obs)
			if cfg.MaskIllegal {
				p.legal = appendMask(l.sim, a, cfg, p.legal)
			}
			p.slots = append(p.slots, agentSlot{l, a})
		}
	}
	n := len(p.slots)
	if n == 0 {
		// Every live episode has fewer agents than this round: the episodes with more
		// agents have ended.
		return nil
	}
	p.actions = slices.Grow(p.actions[:0], n)[:n]
	p.logps = slices.Grow(p.logps[:0], n)[:n]
	var lg []bool
	if cfg.MaskIllegal {
		lg = p.legal
	}
	if err := p.g.Act(p.obs, n, lg, cfg.Temperature, p.rng, p.actions, p.logps); err != nil {
		return err
	}
	p.record()
	return nil
}

// record appends the round's decisions to their episodes and sets the agents' moves.
func (p *player) record() {
	for i, sl := range p.slots {
		d := &p.perEp[sl.l.ep]
		d.obs = append(d.obs, p.obs[i*p.obsSize:(i+1)*p.obsSize]...)
		if p.cfg.MaskIllegal {
			d.legal = append(d.legal, p.legal[i*env.NumMoves:(i+1)*env.NumMoves]...)
		}
		d.agent = append(d.agent, int32(sl.a))
		d.act = append(d.act, p.actions[i])
		d.logp = append(d.logp, p.logps[i])
		sl.l.moves[sl.a] = env.Move(p.actions[i])
		if p.cfg.Sequential {
			sl.l.sim.SetIntent(sl.a, env.Move(p.actions[i]))
		}
	}
}

// step advances every live episode by its joint move and drops the finished ones.
func (p *player) step() {
	next := p.active[:0:0]
	for _, l := range p.active {
		l.sim.Step(l.moves[:l.sim.NumAgents()])
		if !l.sim.Done() {
			next = append(next, l)
		}
	}
	p.active = next
}

// finish verifies and rewards every episode and lays out the decisions, each episode's
// contiguous.
func (p *player) finish() *learner.Rollout {
	ro := p.ro
	for _, l := range p.lives {
		ep := &ro.Episodes[l.ep]
		ep.Plan = l.sim.Plan()
		env.Verify(ep.Instance, &ep.Plan, &ep.Report)
		ep.Report.Failures = append([]env.Failure(nil), ep.Report.Failures...)
		ep.Reward = p.cfg.Reward.Accuracy(ep.Instance, &ep.Report)
		ep.Lo = len(ro.Actions)
		d := &p.perEp[l.ep]
		ro.Obs = append(ro.Obs, d.obs...)
		ro.Legal = append(ro.Legal, d.legal...)
		ro.Actions = append(ro.Actions, d.act...)
		ro.LogProbs = append(ro.LogProbs, d.logp...)
		ro.Agent = append(ro.Agent, d.agent...)
		ep.Hi = len(ro.Actions)
	}
	return ro
}

// BatchFromRollouts turns rollouts into one GRPO batch: each episode's
// group-relative advantage (GroupAdvantages over its instance's group) is
// given to every decision of the episode. It also returns the zero-signal
// statistics of the groups.
func BatchFromRollouts(rs []*learner.Rollout, groupSize int, scaleByStd bool) (*Batch, learner.SignalStats) {
	b := &Batch{}
	var rewards []float32
	for _, r := range rs {
		for _, ep := range r.Episodes {
			rewards = append(rewards, float32(ep.Reward))
		}
	}
	adv := learner.GroupAdvantages(rewards, groupSize, scaleByStd, nil)
	sig := learner.ZeroSignal(rewards, groupSize)
	e := 0
	for _, r := range rs {
		for _, ep := range r.Episodes {
			for d := ep.Lo; d < ep.Hi; d++ {
				b.Obs = append(b.Obs, r.Obs[d*r.ObsSize:(d+1)*r.ObsSize]...)
				if r.Legal != nil {
					b.Legal = append(b.Legal, r.Legal[d*NumMoves:(d+1)*NumMoves]...)
				}
				b.Actions = append(b.Actions, r.Actions[d])
				b.LogProbs = append(b.LogProbs, r.LogProbs[d])
				b.Advantages = append(b.Advantages, adv[e])
			}
			e++
		}
	}
	b.N = len(b.Actions)
	return b, sig
}

// appendMask appends agent a's move mask: SafeMask with Sequential and
// MaskConflicts, else LegalMask.
func appendMask(sim *env.Sim, a int, cfg RolloutConfig, legal []bool) []bool {
	var m [env.NumMoves]bool
	if cfg.Sequential && cfg.MaskConflicts {
		sim.SafeMask(a, m[:])
	} else {
		sim.LegalMask(a, m[:])
	}
	return append(legal, m[:]...)
}

// appendObs appends agent a's observation (env.ObsRadius) to obs.
func appendObs(sim *env.Sim, a int, obs []float32) []float32 {
	n, size := len(obs), env.ObsSize(env.ObsRadius)
	obs = slices.Grow(obs, size)[:n+size]
	sim.Observe(a, env.ObsRadius, obs[n:n+size])
	return obs
}

// ReplayEpisode replays an episode's actions (step-major, agent-minor,
// as Play took them) on in and appends the observations and, when
// cfg.MaskIllegal, the legal masks that the policy saw. The learner uses it
// to rebuild a batch from a group that travelled as action ids only.
func ReplayEpisode(in *env.Instance, cfg RolloutConfig, actions []int32, obs []float32, legal []bool) ([]float32, []bool, error) {
	k := len(in.Agents)
	if k == 0 || len(actions)%k != 0 {
		return obs, legal, fmt.Errorf("%w: %d actions for %d agents", learner.ErrBadBatch, len(actions), k)
	}
	sim := env.NewSim(in, cfg.StepsPerSide*max(in.Width, in.Height))
	var moves [env.MaxAgents]env.Move
	for t := 0; t < len(actions)/k; t++ {
		if sim.Done() {
			return obs, legal, fmt.Errorf("%w: episode ended at step %d but %d actions remain", learner.ErrBadBatch, t, len(actions)-t*k)
		}
		for a := 0; a < k; a++ {
			act := actions[t*k+a]
			if act < 0 || act >= NumMoves {
				return obs, legal, fmt.Errorf("%w: action %d out of range", learner.ErrBadBatch, act)
			}
			// Without Sequential every agent decided before any declared,
			// so observe them all first.
			if !cfg.Sequential && a == 0 {
				for b := 0; b < k; b++ {
					obs = appendObs(sim, b, obs)
					if cfg.MaskIllegal {
						legal = appendMask(sim, b, cfg, legal)
					}
				}
			}
			if cfg.Sequential {
				obs = appendObs(sim, a, obs)
				if cfg.MaskIllegal {
					legal = appendMask(sim, a, cfg, legal)
				}
				sim.SetIntent(a, env.Move(act))
			}
			moves[a] = env.Move(act)
		}
		sim.Step(moves[:k])
	}
	return obs, legal, nil
}

// BatchFromGroups rebuilds a GRPO batch from groups by replaying each
// episode. Groups may differ in size; advantages are computed within each.
func BatchFromGroups(groups []learner.ReplayedGroup, cfg RolloutConfig, scaleByStd bool) (*Batch, learner.SignalStats, error) {
	b := &Batch{}
	var sig learner.SignalStats
	for _, g := range groups {
		n := len(g.Rewards)
		if n == 0 || len(g.Actions) != n || len(g.LogProbs) != n {
			return nil, sig, fmt.Errorf("%w: group of %d rewards, %d action lists, %d log-prob lists", learner.ErrBadBatch, n, len(g.Actions), len(g.LogProbs))
		}
		adv := learner.GroupAdvantages(g.Rewards, n, scaleByStd, nil)
		s := learner.ZeroSignal(g.Rewards, n)
		sig.Groups += s.Groups
		sig.ZeroSignal += s.ZeroSignal
		for e := range n {
			if len(g.LogProbs[e]) != len(g.Actions[e]) {
				return nil, sig, fmt.Errorf("%w: %d log-probs for %d actions", learner.ErrBadBatch, len(g.LogProbs[e]), len(g.Actions[e]))
			}
			var err error
			var legal []bool
			if cfg.MaskIllegal {
				legal = b.Legal
			}
			b.Obs, legal, err = ReplayEpisode(g.Instance, cfg, g.Actions[e], b.Obs, legal)
			if err != nil {
				return nil, sig, err
			}
			if cfg.MaskIllegal {
				b.Legal = legal
			}
			b.Actions = append(b.Actions, g.Actions[e]...)
			b.LogProbs = append(b.LogProbs, g.LogProbs[e]...)
			for range g.Actions[e] {
				b.Advantages = append(b.Advantages, adv[e])
			}
		}
	}
	b.N = len(b.Actions)
	return b, sig, nil
}

// OptimalActions returns an instance's optimal (sum-of-costs) joint plan as
// action ids in Play's order (step-major, agent-minor); agents that
// have arrived wait.
func OptimalActions(in *env.Instance) ([]int32, error) {
	sol, err := env.Solve(in, env.SolveOptions{})
	if err != nil {
		return nil, err
	}
	moves, err := env.PlanMoves(&sol.Plan)
	if err != nil {
		return nil, err
	}
	horizon := 0
	for _, m := range moves {
		horizon = max(horizon, len(m))
	}
	acts := make([]int32, 0, horizon*len(moves))
	for t := range horizon {
		for a := range moves {
			m := env.Wait
			if t < len(moves[a]) {
				m = moves[a][t]
			}
			acts = append(acts, int32(m))
		}
	}
	return acts, nil
}

// BCFromOptimal runs one behaviour-cloning step of g on the optimal plans of
// ins (instances whose plan does not fit cfg's step bound are skipped).
func BCFromOptimal(g StepPolicy, ins []*env.Instance, cfg RolloutConfig) (learner.UpdateStats, error) {
	var (
		obs   []float32
		legal []bool
		acts  []int32
	)
	for _, in := range ins {
		a, err := OptimalActions(in)
		if err != nil {
			return learner.UpdateStats{}, err
		}
		if len(a)/len(in.Agents) > cfg.StepsPerSide*max(in.Width, in.Height) {
			continue
		}
		var lg []bool
		if cfg.MaskIllegal {
			lg = legal
		}
		obs, lg, err = ReplayEpisode(in, cfg, a, obs, lg)
		if err != nil {
			return learner.UpdateStats{}, err
		}
		if cfg.MaskIllegal {
			legal = lg
		}
		acts = append(acts, a...)
	}
	if len(acts) == 0 {
		return learner.UpdateStats{}, fmt.Errorf("%w: no optimal plan fits the step bound", learner.ErrBadBatch)
	}
	return g.BCUpdate(obs, len(acts), legal, acts)
}
