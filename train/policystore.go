package train

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/t2t-lab/t2t/cluster/store"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// Policy distribution between nodes is by pull. The learner's node
// publishes the run's description (RunSpec) before the first stage and
// every policy version after each update; a rollout node reads the spec
// when it sees a run's first unit and loads the newest weights when the
// learner's version moved past the one it holds. The Redis keys are
// cluster/store's (P:run:{R}:spec, P:run:{R}:policy:latest,
// P:run:{R}:policy:<v>; see its key schema): gridnet weights travel
// through Redis, LLM weights as checkpoint directories or pushed to an
// inference engine (push.go).

// ErrNoSpec: the run has published no RunSpec (its coordinator has not
// started it, or the run id is wrong).
var ErrNoSpec = errors.New("train: run spec not published")

// ErrNoPolicy: the run has published no policy version yet.
var ErrNoPolicy = errors.New("train: no policy published")

// RunSpec is what a rollout node needs to run a run's units: the run seed
// (stage instances are generated from it), the group size and how to build
// the policy. The coordinator derives it from its Options and Policy
// (SpecOf). JSON field names are part of the format: only append.
type RunSpec struct {
	RunID     string `json:"run_id"`
	Seed      uint64 `json:"seed"`
	GroupSize int    `json:"group_size"`
	// Policy is the policy kind: "gridnet", "scripted", "qwen3" or "endpoint".
	Policy string `json:"policy"`
	// MistakeRate is the scripted policy's mistake rate.
	MistakeRate float64 `json:"mistake_rate,omitempty"`
	// GridNet and Rollout build a gridnet policy (nil for scripted).
	GridNet *gridnet.Config        `json:"gridnet,omitempty"`
	Rollout *gridnet.RolloutConfig `json:"rollout,omitempty"`
	// Endpoint, Model, MaxTokens, Thinking and Prompt build an
	// EndpointPolicy (Policy EndpointPolicyName): the learner node's
	// OpenAI-compatible endpoint and how to prompt it.
	Endpoint  string             `json:"endpoint,omitempty"`
	Model     string             `json:"model,omitempty"`
	MaxTokens int                `json:"max_tokens,omitempty"`
	Thinking  bool               `json:"thinking,omitempty"`
	Prompt    *env.PromptOptions `json:"prompt,omitempty"`
	// ModelPrefix, when set, names the model each policy version is served
	// as at Endpoint (EndpointPolicy.ModelPrefix): a rollout engine's LoRA
	// adapters, "t2t-v<N>".
	ModelPrefix string `json:"model_prefix,omitempty"`
	// Reward is an LLM policy's reward when it is not
	// env.DefaultRewardConfig() (the rollouts compute it).
	Reward *env.RewardConfig `json:"reward,omitempty"`
}

// SpecOf describes a run of pol under opt (after defaults) for rollout
// nodes.
func SpecOf(opt Options, pol Policy) (RunSpec, error) {
	s := RunSpec{RunID: opt.RunID, Seed: opt.Seed, GroupSize: opt.GroupSize, Policy: pol.Name()}
	switch p := pol.(type) {
	case remoteDescriber:
		p.describe(&s)
	case LMPolicy:
		if err := endpointSpec(&s, opt.Cluster, opt.RolloutEngine, p); err != nil {
			return RunSpec{}, err
		}
	default:
		return RunSpec{}, fmt.Errorf("%w: policy %q (%T) cannot run on other nodes", ErrOptions, pol.Name(), pol)
	}
	return s, nil
}

// NewPolicy builds a fresh policy of the spec's kind on backend device
// ("cpu", or "xla:/path/plugin.so"); a gridnet gets its weights from Load;
// an endpoint policy sends apiKey to the endpoint. None of a RunSpec's kinds
// holds anything to release.
func (s RunSpec) NewPolicy(device, apiKey string) (Policy, error) {
	ps := PolicySpec{Kind: s.Policy, Device: device, GroupSize: s.GroupSize, MistakeRate: s.MistakeRate, Rollout: s.Rollout, ModelPrefix: s.ModelPrefix}
	if s.Endpoint != "" {
		ps.Endpoint = s.clientOptions(apiKey)
	}
	if s.GridNet != nil {
		ps.ObsSize, ps.Hidden, ps.Seed = s.GridNet.ObsSize, s.GridNet.Hidden, s.GridNet.Seed
	}
	switch k, ok := policyKinds[s.Policy]; {
	case !ok || k.llm && s.Policy != EndpointPolicyName:
		return nil, fmt.Errorf("%w: run %s: policy %q does not run on other nodes", ErrOptions, s.RunID, s.Policy)
	case s.Policy == PolicyGridNet && (s.GridNet == nil || s.Rollout == nil):
		return nil, fmt.Errorf("%w: run %s: gridnet spec without its configs", ErrOptions, s.RunID)
	}
	pol, _, err := NewPolicy(context.Background(), ps)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", s.RunID, err)
	}
	return pol, nil
}

// PolicyStore publishes and reads run specs and policy versions through the
// cluster's store. It is safe for concurrent use.
type PolicyStore struct {
	st  *store.Store
	own bool // Close closes st
}

// OpenPolicyStore connects to the Redis at url (redis://host:port/db),
// retrying transient failures as the store does. prefix is the key prefix
// ("" for "t2t").
func OpenPolicyStore(ctx context.Context, url, prefix string) (*PolicyStore, error) {
	if url == "" {
		return nil, fmt.Errorf("%w: the policy store needs a Redis URL", ErrOptions)
	}
	st, err := store.Open(ctx, store.Options{URL: url, Prefix: prefix})
	if err != nil {
		if errors.Is(err, store.ErrInvalid) {
			return nil, fmt.Errorf("%w: %w", ErrOptions, err)
		}
		return nil, fmt.Errorf("train: policy store: %w", err)
	}
	return &PolicyStore{st: st, own: true}, nil
}

// NewPolicyStore uses an open store; Close leaves it open.
func NewPolicyStore(st *store.Store) *PolicyStore { return &PolicyStore{st: st} }

// Close closes the connection pool the store opened itself.
func (p *PolicyStore) Close() error {
	if p.own {
		return p.st.Close()
	}
	return nil
}

// PutSpec writes the run's spec (last writer wins).
func (p *PolicyStore) PutSpec(ctx context.Context, s RunSpec) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	if err := p.st.PutSpec(ctx, s.RunID, b); err != nil {
		return fmt.Errorf("train: put spec of run %s: %w", s.RunID, err)
	}
	return nil
}

// Spec reads the run's spec; ErrNoSpec when there is none.
func (p *PolicyStore) Spec(ctx context.Context, runID string) (RunSpec, error) {
	b, err := p.st.Spec(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return RunSpec{}, fmt.Errorf("%w: run %s", ErrNoSpec, runID)
	}
	if err != nil {
		return RunSpec{}, fmt.Errorf("train: spec of run %s: %w", runID, err)
	}
	var s RunSpec
	if err := json.Unmarshal(b, &s); err != nil {
		return RunSpec{}, fmt.Errorf("train: spec of run %s: %w", runID, err)
	}
	return s, nil
}

// Publish makes version the run's latest policy, with its weights (nil for
// a policy without weights in Redis); see store.PublishPolicy.
func (p *PolicyStore) Publish(ctx context.Context, runID string, version int64, weights []byte) error {
	if err := p.st.PublishPolicy(ctx, runID, version, weights); err != nil {
		return fmt.Errorf("train: publish policy %d of run %s: %w", version, runID, err)
	}
	return nil
}

// Latest returns the run's newest published version; ErrNoPolicy when none.
func (p *PolicyStore) Latest(ctx context.Context, runID string) (int64, error) {
	v, err := p.st.LatestPolicy(ctx, runID)
	if errors.Is(err, store.ErrNotFound) {
		return 0, fmt.Errorf("%w: run %s", ErrNoPolicy, runID)
	}
	if err != nil {
		return 0, fmt.Errorf("train: latest policy of run %s: %w", runID, err)
	}
	return v, nil
}

// Weights returns version's weights; ErrNoPolicy when they are not (or no
// longer) stored.
func (p *PolicyStore) Weights(ctx context.Context, runID string, version int64) ([]byte, error) {
	b, err := p.st.PolicyWeights(ctx, runID, version)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: run %s version %d", ErrNoPolicy, runID, version)
	}
	if err != nil {
		return nil, fmt.Errorf("train: weights %d of run %s: %w", version, runID, err)
	}
	return b, nil
}

// PublishPolicy publishes pol's current version (and weights, for gridnet).
func (p *PolicyStore) PublishPolicy(ctx context.Context, runID string, pol Policy) error {
	var w []byte
	if wp, ok := pol.(weightsPublisher); ok {
		var err error
		if w, err = wp.encodeWeights(); err != nil {
			return err
		}
	}
	return p.Publish(ctx, runID, pol.Version(), w)
}

// LoadLatest brings pol to the run's newest version when it is newer than
// have, and returns the version pol now holds. A gridnet loads the weights;
// a scripted policy takes the version number. The caller serialises
// LoadLatest with pol's use.
func (p *PolicyStore) LoadLatest(ctx context.Context, runID string, pol Policy, have int64) (int64, error) {
	for range 8 {
		v, err := p.Latest(ctx, runID)
		if err != nil {
			return have, err
		}
		if v <= have {
			return have, nil
		}
		f, ok := pol.(follower)
		if !ok {
			return have, fmt.Errorf("%w: policy %q cannot load published weights", ErrOptions, pol.Name())
		}
		err = f.follow(v, func() ([]byte, error) { return p.Weights(ctx, runID, v) })
		switch {
		case errors.Is(err, ErrNoPolicy):
			continue // pruned meanwhile: a newer one is latest
		case err != nil:
			return have, err
		}
		return v, nil
	}
	return have, fmt.Errorf("train: run %s: policy versions move faster than they load", runID)
}

// EncodeWeights returns gp's weights as safetensors bytes (a checkpoint's
// model.safetensors).
func EncodeWeights(gp *GridPolicy) ([]byte, error) {
	dir, err := os.MkdirTemp("", "t2t-weights-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	ck := filepath.Join(dir, "ck")
	if err := gp.Net.Save(ck); err != nil {
		return nil, fmt.Errorf("train: encode weights: %w", err)
	}
	return os.ReadFile(filepath.Join(ck, learner.CheckpointWeightsFile))
}

// DecodeWeights loads safetensors bytes made by EncodeWeights into gp as
// policy version; the optimizer state is reset (rollouts do not train).
// Nothing changes when the bytes are malformed or do not fit gp's net.
func DecodeWeights(gp *GridPolicy, version int64, b []byte) error {
	ts, err := parseSafetensors(b)
	if err != nil {
		return err
	}
	cfg, err := json.Marshal(gp.Net.Config())
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "t2t-weights-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	ck := filepath.Join(dir, "ck")
	if err := learner.WriteCheckpoint(ck, &learner.Checkpoint{
		Manifest: learner.Manifest{Model: gridnet.Kind, ModelConfig: cfg, PolicyVersion: version},
		Weights:  ts,
	}); err != nil {
		return err
	}
	if err := gp.Net.Load(ck); err != nil {
		return fmt.Errorf("train: load weights of version %d: %w", version, err)
	}
	return nil
}

// parseSafetensors splits a safetensors document into its tensors.
func parseSafetensors(b []byte) ([]safetensors.Tensor, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%w: %d bytes", safetensors.ErrMalformed, len(b))
	}
	n := binary.LittleEndian.Uint64(b[:8])
	if n > uint64(len(b)-8) {
		return nil, fmt.Errorf("%w: header of %d bytes in %d", safetensors.ErrMalformed, n, len(b))
	}
	h, err := safetensors.ParseHeader([]byte(strings.TrimRight(string(b[8:8+n]), " ")))
	if err != nil {
		return nil, err
	}
	data := b[8+n:]
	if int64(len(data)) != h.DataLen {
		return nil, fmt.Errorf("%w: %d data bytes, header says %d", safetensors.ErrMalformed, len(data), h.DataLen)
	}
	out := make([]safetensors.Tensor, 0, len(h.Tensors))
	for _, name := range h.Names() {
		info := h.Tensors[name]
		out = append(out, safetensors.Tensor{Name: name, DType: info.DType, Shape: info.Shape,
			Data: data[info.DataOffsets[0]:info.DataOffsets[1]]})
	}
	return out, nil
}
