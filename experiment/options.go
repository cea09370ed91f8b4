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

// Options configure an experiment. The run settings it shares with t2t
// train are train.RunSettings, held as they are (the flags fill them with
// train's defaults). Every setting that changes what a run does is part of
// the run's fingerprint (Fingerprint, legacySettings); the fields left out
// (notFingerprinted in the tests) say in their comments why they do not
// matter.
type Options struct {
	// RunSettings: the stages, epochs, counts, policy and engineer-LLM
	// settings of each run. Run reads Policy (for the report); NewPolicy
	// builds the policy from them.
	train.RunSettings
	// Config is the stage-0 generator config, with Instances the training
	// instances per stage.
	Config BaseConfig
	// Rollouts is the rollout actors per run.
	Rollouts int
	// LLMURL and LLMModel are the llm strategy's endpoint and model.
	LLMURL   string
	LLMModel string
	// SuiteSeed seeds the validation set and the benchmark suite.
	SuiteSeed SuiteSeed
	// Engine is the compute engine's kind of an LLM policy and a
	// checkpoint engineer (arms self and base): gomlx or torch, which agree
	// to 1e-4, not bit for bit. Empty for the other policies.
	Engine string
	// EngineSpec is how the engine runs (interpreter, threads, device):
	// where a run computes, not what. llm sets it with Engine.
	EngineSpec engine.Spec

	// Arms and Seeds span the runs: one per (seed, arm), seeds outermost.
	// Each run's fingerprint holds its own arm and seed.
	Arms  []Arm
	Seeds []uint64
	// LLMAPIKey is the llm strategy's API key: a secret, and another key
	// for the same endpoint and model gives the same answers.
	LLMAPIKey string
	// Title, Command and Baseline only label the report: Baseline is the
	// arm the others are compared with, paired by seed ("" or an unknown
	// label for none).
	Title    string
	Command  string
	Baseline string
	// Dir is the output folder: the report files and runs/RUNID.json per
	// finished run. Where the files go does not change them.
	Dir string
	// Resume reuses a finished run saved under Dir/runs when its
	// fingerprint matches; it decides whether to run, not what a run does.
	Resume bool
	// Out receives the progress lines and each run's training table, its
	// lines prefixed "  [LABEL sSEED] ". Default io.Discard.
	Out io.Writer
	// Logger logs the actor runtime. Default: discard.
	Logger *slog.Logger
	// NewPolicy builds a fresh policy for a run, and a function that
	// releases it (nil when nothing needs releasing). It must build it from
	// the fields above (Policy, Hidden, Device, MistakeRate, LR, GroupSize)
	// and the seed, so that the fingerprint covers what it builds. Its
	// errors are returned as they are.
	NewPolicy func(arm Arm, seed uint64) (train.Policy, func() error, error)
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
	Settings               legacySettings
}

// legacySettings are the fingerprinted settings under the JSON names and
// in the order of the fingerprints written before train.RunSettings was
// one tree, so that those runs are reused. The order of the fields is part
// of the format: append only.
type legacySettings struct {
	Config           BaseConfig `json:"Config"`
	Stages           int        `json:"Stages"`
	Epochs           Epochs     `json:"Epochs,omitzero"`
	EvalPerSize      int        `json:"EvalPer"`
	ValPerSize       int        `json:"ValPer"`
	GroupSize        int        `json:"Group"`
	LearnerBatch     int        `json:"Batch"`
	Rollouts         int        `json:"Rollouts"`
	InstancesPerUnit int        `json:"PerUnit"`
	Policy           string     `json:"Policy"`
	Hidden           string     `json:"Hidden"`
	Device           string     `json:"Device"`
	LLMURL           string     `json:"LLMURL"`
	LLMModel         string     `json:"LLMModel"`
	MistakeRate      float64    `json:"Mistake"`
	LR               float64    `json:"LR"`
	SuiteSeed        SuiteSeed  `json:"SuiteSeed,omitzero"`
	LLM              legacyLLM  `json:"LLM,omitzero"`
}

// legacyLLM are the LLM settings, nested as the fingerprints of runs saved
// before train.RunSettings wrote them.
type legacyLLM struct {
	Model               string  `json:",omitempty"`
	Engine              string  `json:",omitempty"`
	MaxNewTokens        int     `json:",omitempty"`
	Prompt              string  `json:",omitempty"`
	Thinking            bool    `json:",omitempty"`
	EngineerMaxTokens   int     `json:",omitempty"`
	EngineerTemperature float64 `json:",omitempty"`
	EngineerRetries     int     `json:",omitempty"`
	EngineerPrompt      string  `json:",omitempty"`
	// EngineerRetry and EngineerRetryTemperature are "" and 0 for the paper's conversation
	// retries: the fingerprints of runs made before the flags.
	EngineerRetry            string  `json:",omitempty"`
	EngineerRetryTemperature float64 `json:",omitempty"`
	// RewardPartial is 0 for the paper's reward: the fingerprints of runs made before the flag.
	RewardPartial float64 `json:",omitempty"`
}

// legacy is o's fingerprinted settings.
func (o *Options) legacy() legacySettings {
	s := o.RunSettings
	return legacySettings{
		Config: o.Config, Stages: s.Stages, Epochs: Epochs(s.Epochs), EvalPerSize: s.EvalPerSize, ValPerSize: s.ValPerSize,
		GroupSize: s.GroupSize, LearnerBatch: s.LearnerBatch, Rollouts: o.Rollouts, InstancesPerUnit: s.InstancesPerUnit,
		Policy: s.Policy, Hidden: s.Hidden, Device: s.Device, LLMURL: o.LLMURL, LLMModel: o.LLMModel, MistakeRate: s.MistakeRate,
		LR: s.LR, SuiteSeed: o.SuiteSeed,
		LLM: legacyLLM{Model: s.Model, Engine: o.Engine, MaxNewTokens: s.MaxNewTokens, Prompt: s.Prompt, Thinking: s.Thinking,
			EngineerMaxTokens: s.EngineerMaxTokens, EngineerTemperature: s.EngineerTemperature, EngineerRetries: s.EngineerRetries,
			EngineerPrompt: s.EngineerPrompt, EngineerRetry: s.EngineerRetry, EngineerRetryTemperature: s.EngineerRetryTemperature,
			RewardPartial: s.RewardPartial},
	}
}

// Fingerprint identifies a run of arm with seed under these options: a
// hash of the arm, the seed and every fingerprinted setting of o (see
// Options). A saved run is reused only under the same fingerprint.
func (o *Options) Fingerprint(arm Arm, seed uint64) string {
	b, err := json.Marshal(fingerprinted{arm.Label, arm.Strategy, arm.Modules.String(), arm.Engineer, seed, o.legacy()})
	if err != nil { // only a NaN or infinite rate could fail; such a run is never reused
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}
