package train

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gridnet"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/torch"
)

// Policy kinds NewPolicy builds (PolicySpec.Kind), besides
// EndpointPolicyName.
const (
	// PolicyScripted: ScriptedPolicy, optimal plans with injected mistakes.
	PolicyScripted = "scripted"
	// PolicyGridNet: GridPolicy, the step-wise gridnet network.
	PolicyGridNet = "gridnet"
	// PolicyQwen3: a textpolicy.Policy over a causal LM checkpoint.
	PolicyQwen3 = "qwen3"
)

// PolicySpec says which policy to build and how (NewPolicy). Fields that a
// kind does not use are ignored, except MistakeRate, which must be in
// [0,1] for every kind.
type PolicySpec struct {
	// Kind is PolicyScripted, PolicyGridNet, PolicyQwen3 or
	// EndpointPolicyName.
	Kind string
	// Device is the compute device: "cpu" (the default), or
	// "xla:/abs/path/plugin.so" for a gridnet; a qwen3 policy's engine
	// runs on Engine.Device, which defaults to Device.
	Device string
	// GroupSize is the GRPO group size (gridnet and qwen3).
	GroupSize int
	// Seed seeds a gridnet's weight initialisation and its warm start.
	Seed uint64

	// MistakeRate is a scripted policy's chance per agent and step of a
	// random move.
	MistakeRate float64

	// Hidden are a gridnet's hidden layer widths; ObsSize its observation
	// length (0: env.ObsSize(env.ObsRadius)).
	Hidden  []int
	ObsSize int
	// LR is the learning rate (AdamW) of a gridnet or a qwen3 policy; 0
	// takes the policy's default (DefaultLR: learner.DefaultLR for a
	// gridnet, textpolicy.DefaultLR for qwen3).
	LR float64
	// Rollout is a gridnet's rollout config (nil:
	// learner.DefaultRolloutConfig()).
	Rollout *gridnet.RolloutConfig
	// WarmStart, when set, warm-starts a gridnet by behaviour cloning.
	WarmStart *WarmStart

	// ModelDir is a qwen3 policy's Hugging Face checkpoint directory,
	// opened on Engine.
	ModelDir string
	Engine   engine.Spec
	// GenSlots, when > 0, routes a qwen3 policy's generations through one continuous-batching
	// scheduler with a KV pool of that many sequences of genSlotPrompt + MaxNewTokens positions
	// (textpolicy.LM.EnableScheduler); 0 runs each generation alone on the model.
	GenSlots int
	// Text are a qwen3 policy's options (start from
	// textpolicy.DefaultOptions()); GRPO.GroupSize is set to GroupSize, and
	// GRPO.LR to LR when LR is set.
	Text textpolicy.Options
	// LoRA, when set, attaches LoRA adapters to a qwen3 policy's model
	// (seeded by Seed) and freezes its base weights: updates train the
	// adapters only. Nil: all weights train.
	LoRA *hfmodel.LoRAConfig

	// Endpoint is an EndpointPolicy's client of the learner node's
	// OpenAI-compatible endpoint, ModelPrefix its EndpointPolicy.ModelPrefix.
	Endpoint    textpolicy.ClientOptions
	ModelPrefix string
}

// WarmStart is a gridnet's behaviour-cloning warm start: Steps steps, each
// on 64 fresh instances of Config (generated with PolicySpec.Seed^0xbc00 +
// step), cloning their optimal plans. One line goes to Out at the end
// (nil: nowhere).
type WarmStart struct {
	Steps  int
	Config env.Config
	Out    io.Writer
}

// NewPolicy builds the policy spec describes. close releases what the
// policy holds (a qwen3 policy's model, a torch worker); it is never nil.
//
// Bad settings are *fielderr.Error naming the flag (Flag ""
// when another package's check failed with no single field to name; Err
// is that package's error); fielderr.Error.Usage words them for a command
// line. Opening a qwen3 model fails as EngineError says. A warm start's
// errors are returned as they are.
func NewPolicy(ctx context.Context, spec PolicySpec) (pol Policy, close func() error, err error) {
	if !(spec.MistakeRate >= 0 && spec.MistakeRate <= 1) { // NaN too
		return nil, nil, &fielderr.Error{Kind: ErrOptions, Flag: "mistake-rate", Value: spec.MistakeRate, Reason: "out of range [0,1]"}
	}
	k, ok := policyKinds[spec.Kind]
	if !ok {
		return nil, nil, &fielderr.Error{Kind: ErrOptions, Flag: "policy", Value: spec.Kind,
			Reason: fmt.Sprintf("want %s or %s", strings.Join(policyOrder, ", "), EndpointPolicyName)}
	}
	return k.build(ctx, spec)
}

// newEndpointPolicy builds a rollout node's client of the learner's endpoint.
func newEndpointPolicy(_ context.Context, spec PolicySpec) (Policy, func() error, error) {
	c, err := textpolicy.NewClient(spec.Endpoint)
	if err != nil {
		return nil, nil, causeError("endpoint", err)
	}
	return &EndpointPolicy{Client: c, ModelPrefix: spec.ModelPrefix}, noClose, nil
}

// gridNetError is gridnet.New's error as a *fielderr.Error: about "device" when the backend
// refused the device.
func gridNetError(err error) error {
	if errors.Is(err, learner.ErrBadDevice) {
		return causeError("device", err)
	}
	return causeError("", err)
}

// newGridPolicy builds a gridnet policy and warm-starts it.
func newGridPolicy(spec PolicySpec) (*GridPolicy, error) {
	gc := learner.DefaultGRPOConfig()
	gc.LR = cmp.Or(spec.LR, gc.LR)
	gc.GroupSize = spec.GroupSize
	if err := gc.Validate(); err != nil {
		return nil, causeError("", err)
	}
	obs := spec.ObsSize
	if obs == 0 {
		obs = env.ObsSize(env.ObsRadius)
	}
	net, err := gridnet.New(cmp.Or(spec.Device, "cpu"), gridnet.Config{ObsSize: obs, Hidden: spec.Hidden, Seed: spec.Seed}, gc)
	if err != nil {
		return nil, gridNetError(err)
	}
	gp := &GridPolicy{Net: net, Rollout: gridnet.DefaultRolloutConfig()}
	if spec.Rollout != nil {
		gp.Rollout = *spec.Rollout
	}
	if spec.WarmStart != nil {
		if err := warmStart(gp, *spec.WarmStart, spec.Seed); err != nil {
			return nil, err
		}
	}
	return gp, nil
}

// warmStart clones optimal plans into gp: w.Steps steps of 64 instances.
func warmStart(gp *GridPolicy, w WarmStart, seed uint64) error {
	c := w.Config.Clone()
	c.Instances = 64
	start := time.Now()
	var last learner.UpdateStats
	for i := range w.Steps {
		ins, err := env.Generate(c, seed^0xbc00+uint64(i), 0, c.Instances)
		if err != nil {
			return err
		}
		if last, err = gridnet.BCFromOptimal(gp.Net, ins, gp.Rollout); err != nil {
			return err
		}
	}
	if w.Out != nil {
		fmt.Fprintf(w.Out, "warm start: %d behaviour-cloning steps, accuracy %.2f, %s\n", w.Steps, last.Accuracy, time.Since(start).Round(time.Second))
	}
	return nil
}

// genSlotPrompt is the prompt positions of a scheduler slot; a generation with a longer
// prompt runs directly on the model.
const genSlotPrompt = 2048

// newTextPolicy opens the qwen3 checkpoint and builds its text policy.
func newTextPolicy(ctx context.Context, spec PolicySpec) (Policy, func() error, error) {
	if spec.ModelDir == "" {
		return nil, nil, &fielderr.Error{Kind: ErrOptions, Flag: "policy", Value: spec.Kind, Reason: "needs --model DIR"}
	}
	if n := spec.Text.MaxNewTokens; n < 1 || n > 32768 {
		return nil, nil, &fielderr.Error{Kind: ErrOptions, Flag: "max-new-tokens", Value: n, Reason: "out of range [1,32768]"}
	}
	es := spec.Engine
	if es.Device == "" {
		es.Device = spec.Device
	}
	lm, err := textpolicy.OpenLM(ctx, es, spec.ModelDir)
	if err != nil {
		return nil, nil, EngineError("model", err)
	}
	if spec.LoRA != nil {
		if err := lm.Model.AddLoRA(*spec.LoRA, spec.Seed); err != nil {
			_ = lm.Close()
			return nil, nil, causeError("lora-rank", err)
		}
	}
	if spec.GenSlots > 0 {
		if err := lm.EnableScheduler(spec.GenSlots, genSlotPrompt+spec.Text.MaxNewTokens); err != nil {
			_ = lm.Close()
			return nil, nil, causeError("gen-slots", err)
		}
	}
	o := spec.Text // textpolicy.New sets its defaults: the GRPO settings with the spec's rate
	o.GRPO.LR = cmp.Or(spec.LR, o.GRPO.LR)
	o.GRPO.GroupSize = spec.GroupSize
	tp, err := textpolicy.New(lm, o)
	if err != nil {
		_ = lm.Close()
		return nil, nil, causeError("", err)
	}
	return tp, lm.Close, nil
}

// EngineError sorts an error of opening a model on a compute engine
// (textpolicy.OpenLM): a bad or unavailable device is a *fielderr.Error
// about "device"; torch missing or failing (torch.ErrNoTorch,
// ErrWorkerDied, ErrVersion, ErrProtocol) is returned as it is, a fault of
// the environment rather than of the settings; anything else is an
// *fielderr.Error about field (the model), its "torch: " prefix dropped.
func EngineError(field string, err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, learner.ErrBadDevice) || errors.Is(err, learner.ErrNoXLA):
		return causeError("device", err)
	case errors.Is(err, torch.ErrNoTorch) || errors.Is(err, torch.ErrWorkerDied) || errors.Is(err, torch.ErrVersion) || errors.Is(err, torch.ErrProtocol):
		return err
	}
	return &fielderr.Error{Kind: ErrOptions, Flag: field, Reason: strings.TrimPrefix(err.Error(), "torch: "), Err: err}
}

// LoadGridPolicy loads the gridnet checkpoint in dir on device and names
// it "gridnet@" and the first 16 hex digits of its weights' SHA-256 (the
// policy id of an evaluation). A checkpoint that does not read, holds
// another model or does not fit its config is a *fielderr.Error about
// "checkpoint"; a bad device one about "device".
func LoadGridPolicy(dir, device string) (*GridPolicy, string, error) {
	ck, err := learner.ReadCheckpoint(dir)
	if err != nil {
		return nil, "", causeError("checkpoint", err)
	}
	if ck.Manifest.Model != gridnet.Kind {
		return nil, "", &fielderr.Error{Kind: ErrOptions, Flag: "checkpoint", Value: dir, Reason: fmt.Sprintf("holds a %q model, not gridnet", ck.Manifest.Model)}
	}
	var gc gridnet.Config
	if err := json.Unmarshal(ck.Manifest.ModelConfig, &gc); err != nil {
		return nil, "", &fielderr.Error{Kind: ErrOptions, Flag: "checkpoint", Value: dir, Reason: "model_config: " + err.Error(), Err: err}
	}
	net, err := gridnet.New(device, gc, learner.DefaultGRPOConfig())
	if err != nil {
		return nil, "", gridNetError(err)
	}
	if err := net.Load(dir); err != nil {
		return nil, "", fmt.Errorf("--checkpoint %s: %w", dir, err)
	}
	sum := ck.Manifest.Files[learner.CheckpointWeightsFile]
	if len(sum) > 16 {
		sum = sum[:16]
	}
	return &GridPolicy{Net: net, Rollout: gridnet.DefaultRolloutConfig()}, "gridnet@" + sum, nil
}
