package textpolicy

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// Options configure a Policy. DefaultOptions gives the documented defaults; New fills zero
// numeric fields with them (Prompt, Thinking and the booleans are taken as given).
type Options struct {
	// Name is what Name returns. Default "qwen3".
	Name string
	// Prompt shapes env.RenderPrompt's text. DefaultOptions: env.DefaultPromptOptions().
	Prompt env.PromptOptions
	// Thinking renders the chat template with enable_thinking (the model may think in a
	// <think> block before answering); false appends the empty think block. DefaultOptions: true.
	Thinking bool
	// MaxNewTokens bounds each completion. Default 4096 (the paper's L2, where R_len reaches −1).
	MaxNewTokens int
	// TopK and TopP truncate sampling (0: off); greedy evaluation ignores them.
	TopK int
	TopP float64
	// Reward is the paper's reward (R_acc and R_len with the adaptive weights). Default
	// env.DefaultRewardConfig() (when L2 is 0).
	Reward env.RewardConfig
	// GRPO configures updates (the learner's GRPO loss, AdamW, clipping, micro-batches).
	// Default (when MicroBatch is 0): learner.DefaultGRPOConfig() with LR DefaultLR, MicroBatch
	// 8 and LengthBuckets learner.PadLens(8192) (8, 16, 32, 64, 96, …, 512, 576, …: less than
	// 12.5 % padding above 512), keeping an LR and a GroupSize set alone; LR 0 is DefaultLR.
	GRPO learner.GRPOConfig
	// GenBatch is the most completions sampled by one Generate call. Default 8.
	GenBatch int
}

// DefaultLR is a text policy's default learning rate: small, for a pretrained LM (a model
// trained from scratch here wants 1e-4 or more: `t2t train --lr`).
const DefaultLR = 1e-6

// DefaultOptions returns the defaults of every field.
func DefaultOptions() Options {
	o := Options{Prompt: env.DefaultPromptOptions(), Thinking: true}
	o.defaults()
	return o
}

func (o *Options) defaults() {
	if o.Name == "" {
		o.Name = "qwen3"
	}
	if o.MaxNewTokens == 0 {
		o.MaxNewTokens = 4096
	}
	if o.Reward.L2 == 0 {
		o.Reward = env.DefaultRewardConfig()
	}
	if o.GRPO.MicroBatch == 0 { // no GRPO settings: an LM's, keeping a rate and group size given alone
		g := learner.DefaultGRPOConfig()
		g.LR = o.GRPO.LR // DefaultLR below when unset
		g.GroupSize = cmp.Or(o.GRPO.GroupSize, g.GroupSize)
		g.MicroBatch = 8
		g.LengthBuckets = learner.PadLens(8192)
		o.GRPO = g
	}
	if o.GRPO.LR == 0 {
		o.GRPO.LR = DefaultLR
	}
	if o.GenBatch == 0 {
		o.GenBatch = 8
	}
}

// Validate checks the options (after defaults); errors are *fielderr.Error.
func (o *Options) Validate() error {
	switch {
	case o.MaxNewTokens < 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "MaxNewTokens", Value: o.MaxNewTokens, Reason: "must be ≥ 1"}
	case o.TopK < 0:
		return &fielderr.Error{Kind: ErrOptions, Field: "TopK", Value: o.TopK, Reason: "must be ≥ 0"}
	case math.IsNaN(o.TopP) || o.TopP < 0 || o.TopP > 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "TopP", Value: o.TopP, Reason: "must be in [0, 1]"}
	case o.GenBatch < 1:
		return &fielderr.Error{Kind: ErrOptions, Field: "GenBatch", Value: o.GenBatch, Reason: "must be ≥ 1"}
	}
	if err := o.Reward.Validate(); err != nil {
		return &fielderr.Error{Kind: ErrOptions, Field: "Reward", Value: o.Reward, Reason: err.Error()}
	}
	if err := o.GRPO.Validate(); err != nil {
		return &fielderr.Error{Kind: ErrOptions, Field: "GRPO", Value: "", Reason: err.Error()}
	}
	return nil
}

// Policy is the one-shot text policy: an in-process Qwen3 model writes the whole joint plan
// as text, the environment parses and verifies it, and GRPO trains the model on the sampled
// token ids. It implements train.Policy.
//
// Play: instance → env.RenderPrompt → Qwen3 chat template (one user turn, thinking on or off)
// → tokenizer → GroupSize completions sampled with the KV cache (qwen3.Generate, stop on
// <|im_end|>) → decoded text → env.ParseAnswer and env.Verify → env.Reward (R_acc + R_len with
// the length schedule's weights, tokens = completion length). The rollout's Actions and
// LogProbs hold the completion token ids and their sampling log-probs, episode by episode
// (Episode.Lo/Hi): nothing is re-tokenised for training.
//
// Update: for each group, advantages by learner.GroupAdvantages; the prompt is re-rendered
// from the group's instance (rendering and encoding are deterministic) and joined with the
// sampled ids into a qwen3 SeqBatch; one learner.Trainer GRPO step (the loss every policy
// shares) runs while no generation does (LM.Exclusive).
//
// Play may run concurrently with Play and Update.
type Policy struct {
	lm  *LM
	opt Options

	mu         sync.Mutex // guards sched and configured
	sched      env.LengthSchedule
	configured bool // the model has the options' training settings
	version    atomic.Int64
}

// SamplingStats returns the counters of the LM's generation scheduler (false without one).
func (p *Policy) SamplingStats() (engine.SchedulerStats, bool) { return p.lm.SchedulerStats() }

// New returns a text policy over lm.
func New(lm *LM, opt Options) (*Policy, error) {
	opt.defaults()
	if err := opt.Validate(); err != nil {
		return nil, err
	}
	return &Policy{lm: lm, opt: opt}, nil
}

// Name implements train.Policy.
func (p *Policy) Name() string { return p.opt.Name }

// Version implements train.Policy: GRPO steps applied.
func (p *Policy) Version() int64 { return p.version.Load() }

// LM returns the model the policy trains (serve it with the serve package: its generations
// wait while an update runs).
func (p *Policy) LM() *LM { return p.lm }

// Options returns the policy's options (defaults filled in).
func (p *Policy) Options() Options { return p.opt }

// Schedule returns the length schedule's state (checkpoint it with the weights).
func (p *Policy) Schedule() env.LengthSchedule {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sched
}

// SetSchedule restores the length schedule.
func (p *Policy) SetSchedule(s env.LengthSchedule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.sched = s
}

// Prompt returns the prompt token ids of an instance: the chat-formatted RenderPrompt text,
// encoded. Play and Update both use it, so a prompt is never stored with a sample.
func (p *Policy) Prompt(in *env.Instance) []int32 {
	return p.lm.Tok.Encode(ChatText(env.RenderPrompt(in, p.opt.Prompt), p.opt.Thinking))
}

// Play implements train.Policy: groupSize completions per instance (instance-major), sampled
// at temperature (0: greedy) from rand.NewPCG(seed, ·). The same seed, weights and instances
// give the same completions. Rewards use the length schedule's weights as they stand when
// Play starts; a sampled (temperature > 0) rollout then folds its share of short completions
// into the schedule (greedy evaluation does not).
func (p *Policy) Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	if groupSize < 1 {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "groupSize", Value: groupSize, Reason: "must be ≥ 1"}
	}
	if math.IsNaN(temperature) || temperature < 0 {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "temperature", Value: temperature, Reason: "must be ≥ 0"}
	}
	p.mu.Lock()
	sched := p.sched
	p.mu.Unlock()
	rng := rand.New(rand.NewPCG(seed, 0x7e47))
	sc := engine.SampleConfig{MaxNewTokens: p.opt.MaxNewTokens, Temperature: temperature, StopTokens: p.lm.Stop}
	if temperature > 0 {
		sc.TopK, sc.TopP = p.opt.TopK, p.opt.TopP
	}
	n := len(ins) * groupSize
	prompts := make([][]int32, len(ins))
	for i, in := range ins {
		prompts[i] = p.Prompt(in)
	}
	tokens := make([][]int32, n)
	logps := make([][]float32, n)
	chunk := p.lm.schedulerChunk(prompts, sc, p.opt.GenBatch)
	for lo := 0; lo < n; lo += chunk {
		hi := min(n, lo+chunk)
		batch := make([][]int32, 0, hi-lo)
		for r := lo; r < hi; r++ {
			batch = append(batch, prompts[r/groupSize])
		}
		gen, err := p.lm.Generate(batch, sc, rng)
		if err != nil {
			return nil, fmt.Errorf("textpolicy: play: %w", err)
		}
		copy(tokens[lo:hi], gen.Tokens)
		copy(logps[lo:hi], gen.LogProbs)
	}
	ro := &learner.Rollout{Episodes: make([]learner.Episode, 0, n)}
	lengths := make([]int, n)
	for r := range n {
		in := ins[r/groupSize]
		ep := learner.Episode{Instance: in, Lo: len(ro.Actions)}
		ro.Actions = append(ro.Actions, tokens[r]...)
		ro.LogProbs = append(ro.LogProbs, logps[r]...)
		ep.Hi = len(ro.Actions)
		ep.Plan = Judge(in, p.lm.CompletionText(tokens[r]), &ep.Report)
		lengths[r] = len(tokens[r])
		ep.Reward = env.Reward(in, &ep.Report, lengths[r], p.opt.Reward, &sched)
		ro.Episodes = append(ro.Episodes, ep)
	}
	if temperature > 0 {
		p.mu.Lock()
		p.sched.Observe(env.ShortShare(lengths, p.opt.Reward), p.opt.Reward.EMADecay)
		p.mu.Unlock()
	}
	return ro, nil
}

// Judge parses answer for in and verifies it into rep (a fresh Report, not shared): the plan
// it returns is empty when the answer does not parse (rep then fails CheckParsable).
func Judge(in *env.Instance, answer string, rep *env.Report) env.Plan {
	plan, err := env.ParseAnswer(answer, in)
	if err != nil {
		env.VerifyAnswer(in, answer, rep)
		return env.Plan{}
	}
	env.Verify(in, &plan, rep)
	return plan
}

// Update implements train.Policy: one GRPO step on the groups (see Policy). Groups whose
// rewards are all equal carry no signal and are left out; when no group is left no step runs
// and the version stays.
func (p *Policy) Update(groups []learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error) {
	var sig learner.SignalStats
	var samples []engine.Sample
	for gi, g := range groups {
		n := len(g.Rewards)
		if n == 0 || len(g.Actions) != n || len(g.LogProbs) != n || g.Instance == nil {
			return learner.UpdateStats{}, sig, fmt.Errorf("%w: group %d: %d rewards, %d completions, %d log-prob lists", learner.ErrBadBatch, gi, n, len(g.Actions), len(g.LogProbs))
		}
		s := learner.ZeroSignal(g.Rewards, n)
		sig.Groups += s.Groups
		sig.ZeroSignal += s.ZeroSignal
		if s.ZeroSignal > 0 {
			continue
		}
		adv := learner.GroupAdvantages(g.Rewards, n, p.opt.GRPO.ScaleByStd, nil)
		prompt := p.Prompt(g.Instance)
		for e := range n {
			if len(g.Actions[e]) != len(g.LogProbs[e]) {
				return learner.UpdateStats{}, sig, fmt.Errorf("%w: group %d episode %d: %d log-probs for %d tokens", learner.ErrBadBatch, gi, e, len(g.LogProbs[e]), len(g.Actions[e]))
			}
			if len(g.Actions[e]) == 0 {
				continue
			}
			samples = append(samples, engine.Sample{Prompt: prompt, Completion: g.Actions[e], LogProbs: g.LogProbs[e], Advantage: adv[e]})
		}
	}
	if len(samples) == 0 {
		return learner.UpdateStats{Step: p.version.Load()}, sig, nil
	}
	batch, err := engine.NewSeqBatch(samples)
	if err != nil {
		return learner.UpdateStats{}, sig, err
	}
	st, err := p.step(engine.StepGRPO, batch)
	if err != nil {
		return st, sig, fmt.Errorf("textpolicy: update: %w", err)
	}
	st.Step = p.version.Add(1)
	return st, sig, nil
}

// LR is the learning rate of the next optimizer step.
func (p *Policy) LR() float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.opt.GRPO.LR
}

// SetLR sets the learning rate of the next optimizer steps; the optimizer's state stays (both
// engines keep AdamW's moments when only the rate changes). A rate the GRPO settings refuse
// changes nothing.
func (p *Policy) SetLR(lr float64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	g := p.opt.GRPO
	g.LR = lr
	if err := g.Validate(); err != nil {
		return err
	}
	p.opt.GRPO, p.configured = g, false
	return nil
}

// step runs one optimizer step of kind on batch while no generation runs, giving the model the
// options' training settings first.
func (p *Policy) step(kind engine.StepKind, batch *learner.SeqBatch) (learner.UpdateStats, error) {
	var st learner.UpdateStats
	err := p.lm.Exclusive(func() error {
		p.mu.Lock()
		defer p.mu.Unlock()
		if !p.configured {
			if err := p.lm.Model.SetTrainConfig(p.opt.GRPO); err != nil {
				return err
			}
			p.configured = true
		}
		var err error
		st, err = p.lm.Model.Step(kind, batch)
		return err
	})
	return st, err
}

// Save writes the model as a Hugging Face directory (config, float32 weights and the tokenizer
// files of the directory it was loaded from).
func (p *Policy) Save(dir string) error {
	return p.lm.Exclusive(func() error { return p.lm.Model.Save(dir, safetensors.F32) })
}

// SaveAdapter writes the model's LoRA adapters as a PEFT adapter directory (adapter_config.json,
// adapter_model.safetensors), while no generation or step runs: what vLLM's
// /v1/load_lora_adapter and `t2t serve` load. It fails when the model has no adapters.
func (p *Policy) SaveAdapter(dir string) error {
	return p.lm.Exclusive(func() error { return p.lm.Model.SaveAdapter(dir) })
}
