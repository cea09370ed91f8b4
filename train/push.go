package train

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/t2t-lab/t2t/actors"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/evaluate"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/rolloutengine"
)

// A run with a rollout engine (Options.RolloutEngine) samples every
// rollout, training and evaluation, at an inference engine (vLLM, SGLang,
// or a t2t serve) instead of on the learner's model. The learner writes
// each version it makes into the engine's directory (a LoRA adapter, or a
// full checkpoint for SGLang) right after the update that made it, the
// engine loads the newest one in the background, and only then is the
// version published in Redis: rollouts, in this process (through the
// pusher) and on other nodes (through the policy store), sample the newest
// version the engine serves, under its own model name, so each sample is
// labelled with the version it came from and a version the engine has not
// loaded yet is never claimed. See rolloutengine.

// pushRun is a run's rollout engine: the pusher, and the client that
// samples each version it serves.
type pushRun struct {
	push   *rolloutengine.Pusher
	tp     LMPolicy
	client *textpolicy.Client
	opt    Options
	cancel context.CancelFunc
	done   chan struct{}
}

// engineClientOptions are the client options of rollouts sampling the
// policy tp at an endpoint (base URL url, model model): prompts rendered as
// the learner renders them (it recomputes the log-probs of the same
// tokens), the policy's reward, token ids and log-probs required.
func engineClientOptions(tp LMPolicy, url, model, apiKey string) textpolicy.ClientOptions {
	o := tp.Options()
	thinking := o.Thinking
	return textpolicy.ClientOptions{BaseURL: url, Model: model, APIKey: apiKey, Prompt: o.Prompt, Thinking: &thinking,
		MaxTokens: o.MaxNewTokens, Reward: o.Reward, RequireLogProbs: true}
}

// startPush checks that pol can be pushed to opt.RolloutEngine, writes its
// current version and has the engine load it (rollouts need one before
// they start: an engine that cannot load it is the run's error, a
// *rolloutengine.EngineError), then starts loading the versions the
// learner writes in the background. stop ends that.
func startPush(ctx context.Context, opt Options, pol Policy) (*pushRun, error) {
	push := opt.RolloutEngine
	tp, ok := pol.(LMPolicy)
	if !ok {
		return nil, &fielderr.Error{Kind: ErrOptions, Flag: "rollout-engine", Value: push.Kind(), Reason: fmt.Sprintf("pushes an LLM policy (--policy qwen3), not %s", pol.Name())}
	}
	if _, lora := tp.LM().Model.LoRA(); push.Adapters() && !lora {
		return nil, &fielderr.Error{Kind: ErrOptions, Flag: "rollout-engine", Value: push.Kind(), Reason: "pushes LoRA adapters: the policy needs them (--lora-rank R)"}
	}
	c, err := textpolicy.NewClient(engineClientOptions(tp, push.BaseURL(), push.ModelFor(0), push.APIKey()))
	if err != nil {
		return nil, causeError("rollout-url", err)
	}
	p := &pushRun{push: push, tp: tp, client: c, opt: opt, done: make(chan struct{})}
	v := pol.Version()
	t0 := time.Now()
	if err := push.Write(v, p.write); err != nil {
		return nil, err
	}
	if err := push.Load(ctx, v); err != nil {
		return nil, fmt.Errorf("rollout engine: the first policy version: %w", err)
	}
	fmt.Fprintf(opt.Out, "rollout engine %s at %s: policy version %d loaded as %q in %s\n", push.Kind(), push.BaseURL(), v, push.ModelFor(v),
		time.Since(t0).Round(time.Millisecond))
	lctx, cancel := context.WithCancel(context.Background())
	p.cancel = cancel
	go func() {
		defer close(p.done)
		push.Run(lctx, p.loaded)
	}()
	return p, nil
}

// stop stops loading versions (the engine keeps the ones it has).
func (p *pushRun) stop() {
	p.cancel()
	<-p.done
	st := p.push.Stats()
	p.opt.Logger.Info("rollout engine: done", "written", st.Written, "loaded", st.Loaded, "load_failures", st.LoadFailures,
		"unloaded", st.Unloaded, "removed", st.Removed, "current", p.push.Current())
}

// write writes the policy's current weights into dir: its LoRA adapters,
// or a full checkpoint (LoRA merged in).
func (p *pushRun) write(dir string) error {
	if p.push.Adapters() {
		return p.tp.SaveAdapter(dir)
	}
	return p.tp.Save(dir)
}

// written pushes version v, which the learner's update just made: written
// now, loaded in the background. A failure is logged, not returned: the
// update happened, and rollouts keep sampling the loaded version (their
// lag shows it) until a later version loads. With wait (a deterministic
// run) it returns once the engine loaded v.
func (p *pushRun) written(ctx context.Context, v int64, wait bool) {
	if err := p.push.Write(v, p.write); err != nil {
		p.opt.Logger.Error("rollout engine: version not written; rollouts keep the loaded version", "version", v, "error", err)
		return
	}
	if wait {
		if err := p.push.WaitLoaded(ctx, v); err != nil {
			p.opt.Logger.Error("rollout engine: version not loaded", "version", v, "error", err)
		}
	}
}

// loaded publishes version v once the engine serves it: rollout nodes
// learn of it through the policy store now.
func (p *pushRun) loaded(v int64) {
	p.opt.Cluster.publishVersion(p.opt.RunID, v, p.opt.Logger)
}

// acquire holds the newest version the engine serves for a chunk of u
// (the zero unit: the run's own evaluation before the first stage) and
// returns what samples it there.
func (p *pushRun) acquire(_ context.Context, u actors.WorkUnit) (int64, evaluate.Player, func(), error) {
	v, release, err := p.push.Acquire()
	if err != nil {
		return 0, nil, nil, err
	}
	return v, &enginePlayer{client: p.client, version: v, model: p.push.ModelFor(v), unit: u.UnitID, log: p.opt.Logger}, release, nil
}

// enginePlayer samples one version at the engine: the run's client with
// the version's model name. Each play is logged with the unit and the
// version its samples are labelled with.
type enginePlayer struct {
	client  *textpolicy.Client
	version int64
	model   string
	unit    string
	log     *slog.Logger
}

// Name implements evaluate.Player.
func (e *enginePlayer) Name() string { return "rollout engine:" + e.model }

// Play implements evaluate.Player.
func (e *enginePlayer) Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	t0 := time.Now()
	ro, err := e.client.PlayModel(context.Background(), e.model, ins, groupSize, temperature, seed)
	if err == nil {
		e.log.Info("rollout engine: sampled", "unit", e.unit, "version", e.version, "model", e.model, "instances", len(ins), "n", groupSize,
			"temperature", temperature, "ms", time.Since(t0).Milliseconds())
	}
	return ro, err
}
