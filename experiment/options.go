package experiment

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/train"
)

// Options configure an experiment. Every field without a `json:"-"` tag
// is a setting that changes what a run does, and is part of the run's
// fingerprint (Fingerprint): a new field is fingerprinted unless it is
// tagged, with a comment that says why it does not matter. The JSON names
// are those of the fingerprints written before Options existed, so those
// runs are reused.
type Options struct {
	// Config is the stage-0 generator config, with Instances the training
	// instances per stage.
	Config BaseConfig `json:"Config"`
	// Stages is the number of training stages per run, Epochs the passes
	// over each stage's instances (train.Options.Epochs).
	Stages int    `json:"Stages"`
	Epochs Epochs `json:"Epochs,omitzero"`
	// EvalPerSize and ValPerSize size the benchmark suite and the
	// validation set (train.Options).
	EvalPerSize int `json:"EvalPer"`
	ValPerSize  int `json:"ValPer"`
	// GroupSize is the GRPO group size, LearnerBatch the groups per
	// update, Rollouts the rollout actors per run and InstancesPerUnit the
	// instances per work unit.
	GroupSize        int `json:"Group"`
	LearnerBatch     int `json:"Batch"`
	Rollouts         int `json:"Rollouts"`
	InstancesPerUnit int `json:"PerUnit"`
	// Policy (kind: "gridnet", "scripted" or "qwen3"), Hidden (gridnet layer widths as
	// t2t experiment's --hidden takes them), Device, MistakeRate (scripted)
	// and LR describe the policy NewPolicy builds. Run reads only Policy
	// (for the report); they are here so that NewPolicy can take them from
	// here and a run's fingerprint covers them.
	Policy string `json:"Policy"`
	Hidden string `json:"Hidden"`
	Device string `json:"Device"`
	// LLMURL and LLMModel are the llm strategy's endpoint and model.
	LLMURL   string `json:"LLMURL"`
	LLMModel string `json:"LLMModel"`
	// MistakeRate and LR: see Policy.
	MistakeRate float64 `json:"Mistake"`
	LR          float64 `json:"LR"`
	// SuiteSeed seeds the validation set and the benchmark suite.
	SuiteSeed SuiteSeed `json:"SuiteSeed,omitzero"`
	// LLM describes an LLM policy (Policy "qwen3") and a checkpoint
	// engineer (arms self and base); zero for the other policies, so the
	// fingerprints of runs saved before it existed hold.
	LLM LLMOptions `json:"LLM,omitzero"`

	// Arms and Seeds span the runs: one per (seed, arm), seeds outermost.
	// Each run's fingerprint holds its own arm and seed.
	Arms  []Arm    `json:"-"`
	Seeds []uint64 `json:"-"`
	// LLMAPIKey is the llm strategy's API key: a secret, and another key
	// for the same endpoint and model gives the same answers.
	LLMAPIKey string `json:"-"`
	// Title, Command and Baseline only label the report: Baseline is the
	// arm the others are compared with, paired by seed ("" or an unknown
	// label for none).
	Title    string `json:"-"`
	Command  string `json:"-"`
	Baseline string `json:"-"`
	// Dir is the output folder: the report files and runs/RUNID.json per
	// finished run. Where the files go does not change them.
	Dir string `json:"-"`
	// Resume reuses a finished run saved under Dir/runs when its
	// fingerprint matches; it decides whether to run, not what a run does.
	Resume bool `json:"-"`
	// Out receives the progress lines and each run's training table, its
	// lines prefixed "  [LABEL sSEED] ". Default io.Discard.
	Out io.Writer `json:"-"`
	// Logger logs the actor runtime. Default: discard.
	Logger *slog.Logger `json:"-"`
	// NewPolicy builds a fresh policy for a run, and a function that
	// releases it (nil when nothing needs releasing). It must build it from
	// the fields above (Policy, Hidden, Device, MistakeRate, LR, GroupSize)
	// and the seed, so that the fingerprint covers what it builds. Its
	// errors are returned as they are.
	NewPolicy func(arm Arm, seed uint64) (train.Policy, func() error, error) `json:"-"`
}

// LLMOptions are the settings of an LLM policy and of a checkpoint
// engineer (self, base) that change what a run does.
type LLMOptions struct {
	// Model is the starting Hugging Face checkpoint; Engine the compute
	// engine's kind (gomlx or torch: they agree to 1e-4, not bit for bit).
	Model  string `json:",omitempty"`
	Engine string `json:",omitempty"`
	// MaxNewTokens bounds an answer; Prompt is the prompt style
	// (env.PromptStyle); Thinking lets the policy think first.
	MaxNewTokens int    `json:",omitempty"`
	Prompt       string `json:",omitempty"`
	Thinking     bool   `json:",omitempty"`
	// EngineerMaxTokens, EngineerTemperature and EngineerRetries are a
	// self or base engineer's (train.EngineerSpec).
	EngineerMaxTokens   int     `json:",omitempty"`
	EngineerTemperature float64 `json:",omitempty"`
	EngineerRetries     int     `json:",omitempty"`
	// EngineerPrompt is a self or base engineer's prompt style:
	// engineer.PromptCompact, or "" for the full prompt.
	EngineerPrompt string `json:",omitempty"`
	// Spec is how the engine runs (interpreter, threads, device): where a
	// run computes, not what.
	Spec engine.Spec `json:"-"`
}

// BaseConfig is the stage-0 generator config. A fingerprint holds its
// hash (env.Config.Hash), which covers every field that changes the
// instances generated.
type BaseConfig env.Config

// MarshalJSON encodes the config's hash.
func (c BaseConfig) MarshalJSON() ([]byte, error) { return json.Marshal(env.Config(c).Hash()) }

// DefaultSuiteSeed is the default seed of the validation set and the
// benchmark suite (train's default).
const DefaultSuiteSeed = 2026

// SuiteSeed seeds the validation set and the benchmark suite. A
// fingerprint leaves out the default, DefaultSuiteSeed (IsZero, with the
// omitzero tag), so that runs saved before the seed was a setting keep
// their fingerprints.
type SuiteSeed uint64

// IsZero reports whether s is DefaultSuiteSeed.
func (s SuiteSeed) IsZero() bool { return s == DefaultSuiteSeed }

// Epochs is the passes over each stage's instances. A fingerprint leaves
// out one pass (IsZero), so that runs saved before epochs were a setting
// keep their fingerprints.
type Epochs int

// IsZero reports whether e is one pass (or unset).
func (e Epochs) IsZero() bool { return e <= 1 }

// fingerprinted is what a fingerprint hashes.
type fingerprinted struct {
	Arm, Strategy, Modules string
	Engineer               string `json:",omitempty"`
	Seed                   uint64
	Settings               *Options
}

// Fingerprint identifies a run of arm with seed under these options: a
// hash of the arm, the seed and every fingerprinted field of o (see
// Options). A saved run is reused only under the same fingerprint.
func (o *Options) Fingerprint(arm Arm, seed uint64) string {
	b, err := json.Marshal(fingerprinted{arm.Label, arm.Strategy, arm.Modules.String(), arm.Engineer, seed, o})
	if err != nil { // only a NaN or infinite rate could fail; such a run is never reused
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
