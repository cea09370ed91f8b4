package train

import (
	"context"
	"fmt"
	"strconv"
	"sync/atomic"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/rolloutengine"
)

// EndpointPolicyName is the RunSpec policy of an LLM that rollout nodes
// reach through the learner node's OpenAI-compatible endpoint (t2t serve
// over the very model the learner trains): an LLM's weights do not travel,
// its endpoint does. Versions still travel through the policy store, so
// groups carry the learner's version and policy lag is measured.
const EndpointPolicyName = "qwen3-endpoint"

// EndpointPolicy plays through an endpoint; it cannot learn.
type EndpointPolicy struct {
	Client *textpolicy.Client
	// ModelPrefix, when set, names the model each version is served as at
	// the endpoint: ModelPrefix followed by the version (a rollout engine's
	// LoRA adapter, "t2t-v3"), so Play samples exactly the version it holds.
	// Empty: every version is the client's model.
	ModelPrefix string
	version     atomic.Int64
}

// Name implements Policy.
func (p *EndpointPolicy) Name() string { return EndpointPolicyName }

// follow implements follower: the endpoint serves the learner's weights,
// or version v is loaded at the rollout engine.
func (p *EndpointPolicy) follow(v int64, _ func() ([]byte, error)) error {
	p.version.Store(v)
	return nil
}

// Version implements Policy: the newest learner version this node heard of.
func (p *EndpointPolicy) Version() int64 { return p.version.Load() }

// Play implements Policy: the version the policy holds, by its model name.
func (p *EndpointPolicy) Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	model := ""
	if p.ModelPrefix != "" {
		model = p.ModelPrefix + strconv.FormatInt(p.version.Load(), 10)
	}
	return p.Client.PlayModel(context.Background(), model, ins, groupSize, temperature, seed)
}

// Update implements Policy: the learner node trains, not a rollout node.
func (p *EndpointPolicy) Update([]learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error) {
	return learner.UpdateStats{}, learner.SignalStats{}, textpolicy.ErrNotTrainable
}

// endpointSpec fills s for a text policy served at its rollout engine
// (push) or else at c.Endpoint.
func endpointSpec(s *RunSpec, c Cluster, push *rolloutengine.Pusher, p LMPolicy) error {
	o := p.Options()
	switch {
	case push != nil:
		s.Endpoint, s.Model, s.ModelPrefix = push.BaseURL(), push.ModelFor(0), push.ModelPrefix()
	case c.Endpoint != "":
		s.Endpoint, s.Model = c.Endpoint, c.EndpointModel
	default:
		return fmt.Errorf("%w: an LLM policy on several nodes needs the learner node's endpoint (t2t node --serve-addr) or a rollout engine (--rollout-engine)", ErrOptions)
	}
	s.Policy = EndpointPolicyName
	s.MaxTokens, s.Thinking, s.Prompt = o.MaxNewTokens, o.Thinking, &o.Prompt
	if o.Reward != env.DefaultRewardConfig() {
		r := o.Reward
		s.Reward = &r
	}
	return nil
}

// clientOptions are a rollout node's client options for the spec's
// endpoint, rendering prompts exactly as the learner does (so the learner
// recomputes the log-probs of the same tokens), sending apiKey. The key is
// the node's own: it never travels with the spec.
func (s RunSpec) clientOptions(apiKey string) textpolicy.ClientOptions {
	thinking := s.Thinking
	o := textpolicy.ClientOptions{BaseURL: s.Endpoint, Model: s.Model, MaxTokens: s.MaxTokens, Thinking: &thinking, RequireLogProbs: true, APIKey: apiKey}
	if s.Prompt != nil {
		o.Prompt = *s.Prompt
	}
	if s.Reward != nil {
		o.Reward = *s.Reward
	}
	return o
}
