package engineer

import (
	"github.com/t2t-lab/t2t/env"
)

// SizeStats aggregates one stage's episodes of one map size.
type SizeStats struct {
	// Size is the grid side N.
	Size int
	// Episodes is the number of verified answers; Valid of them passed all
	// eight checks and Optimal of those also matched the optimal cost.
	Episodes, Valid, Optimal int64
	// Categories counts failures by env.Category (indexed by the category).
	Categories [env.NumCategories]int64
	// MeanReward is the mean reward over the episodes.
	MeanReward float64
}

// AgentStats aggregates one stage's training episodes of one agent count.
type AgentStats struct {
	Agents                   int
	Episodes, Valid, Optimal int64
}

// ValidRate is Valid/Episodes, 0 without episodes.
func (s SizeStats) ValidRate() float64 { return engRate(s.Valid, s.Episodes) }

// OptimalRate is Optimal/Episodes, 0 without episodes.
func (s SizeStats) OptimalRate() float64 { return engRate(s.Optimal, s.Episodes) }

func engRate(k, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// Example is one concrete failure shown to the language-model engineer.
type Example struct {
	InstanceID string
	Size       int
	// Category is the failed check's env.Category name ("conflict", ...).
	Category string
	// Detail says what went wrong (for example the verifier's message).
	Detail string
	// Answer is the policy's answer (truncated when rendered).
	Answer string
}

// StageResult is what one finished training stage left behind.
type StageResult struct {
	// Stage is the stage index, from 0.
	Stage int
	// Config is the generator config the stage trained on; ConfigVersion
	// its version id (Config.Hash() when empty).
	Config        env.Config
	ConfigVersion string
	// Train and Val hold per-size statistics sorted by size: Train over the
	// stage's generated training instances, Val over the fixed validation
	// set after the stage.
	Train, Val []SizeStats
	// TrainByAgents holds the training statistics per agent count, sorted,
	// for a stage whose config has an agent range (nil otherwise, and
	// absent from the JSON: a history without ranges reads as before).
	TrainByAgents []AgentStats `json:",omitempty"`
	// Examples are a few concrete failures (validation first, if the
	// caller can tell).
	Examples []Example
	// Rationale is the engineer's own rationale that produced Config (empty
	// for the round-0 config); the S module shows it.
	Rationale string
	// Epochs and Updates are the stage's training epochs and optimizer
	// updates; PolicyVersion the policy's version after the stage.
	Epochs        int
	Updates       int
	PolicyVersion int64
}

// Budget is the run's training plan.
type Budget struct {
	// TotalStages is the number of stages of the run (0: unknown).
	TotalStages int
	// EpochsPerStage is the planned epochs per stage (0: unknown).
	EpochsPerStage int
}

// History is everything the engineer may read: stage 0 first; stage 0
// trained on the round-0 config. The engineer proposes the config of stage
// len(Stages).
type History struct {
	RunID  string
	Budget Budget
	Stages []StageResult
}

// NextStage is the index of the stage being proposed, len(Stages); 0 for a
// nil history.
func (h *History) NextStage() int {
	if h == nil {
		return 0
	}
	return len(h.Stages)
}

// Last returns the last finished stage, or nil.
func (h *History) Last() *StageResult {
	if h == nil || len(h.Stages) == 0 {
		return nil
	}
	return &h.Stages[len(h.Stages)-1]
}

// Attempt is one step of a proposal, kept for the audit log.
type Attempt struct {
	// PromptHash is Prompt.Hash of the prompt the attempt answered (empty
	// for strategies without a prompt). Follow-up messages of a retry are
	// derived from earlier attempts' Raw and Reason.
	PromptHash string
	// Raw is the model's raw answer (truncated to 64 KiB).
	Raw string
	// Parsed is the canonical JSON of the config as proposed, before
	// projection; empty when the answer could not be decoded.
	Parsed string
	// Projected is the canonical JSON of the projected config; empty when
	// the attempt did not get that far.
	Projected string
	// Accepted tells whether this attempt's config became the proposal.
	Accepted bool
	// Reason says why the attempt was accepted or rejected.
	Reason string
	// Engineer names the model that answered (ChatAnswer.Engineer): "self@v12",
	// "base", or an endpoint; empty for strategies without a model.
	Engineer string
}

// Proposal is a strategy's answer: the next stage's config.
type Proposal struct {
	// Config passes env.Config.Validate.
	Config env.Config
	// Rationale explains the config; for a fallback it says why the
	// previous config was kept.
	Rationale string
	// Attempts records every step, in order: for llm one per call, plus
	// a last one without a call when a budget or the prompt stopped it; for
	// the heuristic strategies one per candidate tried.
	Attempts []Attempt
	// Fallback is true when Config is the previous config kept because no
	// acceptable proposal was found.
	Fallback bool
}

// engStats returns the stats of size in list.
func engStats(list []SizeStats, size int) (SizeStats, bool) {
	for _, s := range list {
		if s.Size == size {
			return s, true
		}
	}
	return SizeStats{}, false
}

// engTotal sums list over sizes (Size and MeanReward: episode-weighted mean).
func engTotal(list []SizeStats) SizeStats {
	var t SizeStats
	sum := 0.0
	for _, s := range list {
		t.Episodes += s.Episodes
		t.Valid += s.Valid
		t.Optimal += s.Optimal
		for c := range t.Categories {
			t.Categories[c] += s.Categories[c]
		}
		sum += s.MeanReward * float64(s.Episodes)
	}
	if t.Episodes > 0 {
		t.MeanReward = sum / float64(t.Episodes)
	}
	return t
}

// engPrevious is the config the next stage starts from: the last stage's
// config (projected, should it be invalid), or base without stages.
func engPrevious(h *History, base env.Config) env.Config {
	if last := h.Last(); last != nil {
		if last.Config.Validate() == nil {
			return last.Config.Clone()
		}
		return last.Config.Project()
	}
	if base.Validate() == nil {
		return base.Clone()
	}
	return base.Project()
}
