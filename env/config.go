package env

import "strconv"

// SizeConfig is the engineer's three numbers for one map size.
type SizeConfig struct {
	// Size is the grid side N (the grid is N×N). Paper: 3..10.
	Size int `json:"size" msgpack:"size"`
	// DataRatio is this size's share of the stage's instances; the shares
	// sum to 1 over sizes.
	DataRatio float64 `json:"data_ratio" msgpack:"data_ratio"`
	// HoleRatio is the fraction of cells that are holes, in [0,1].
	HoleRatio float64 `json:"hole_ratio" msgpack:"hole_ratio"`
	// WaitRatio is the fraction of instances whose optimal solution needs
	// a wait (Instance.NeedsWait), in [0,1].
	WaitRatio float64 `json:"wait_ratio" msgpack:"wait_ratio"`
}

// Config is the generator configuration: the environment engineer's
// decision space. Field names are part of the JSON and msgpack formats.
type Config struct {
	// Sizes lists one entry per map size, in increasing size order.
	// Default: sizes 3..10.
	Sizes []SizeConfig `json:"sizes" msgpack:"sizes"`
	// Agents is the number of agents per instance, or the fewest when
	// AgentsMax makes a range. Default 2 (the paper trains on 2-agent
	// instances only).
	Agents int `json:"agents" msgpack:"agents"`
	// AgentsMax, when above Agents, makes the agent count a range: each
	// size's instances are spread over the counts Agents..min(AgentsMax,
	// size) (AgentCounts; its wait and its no-wait instances each split
	// within one, and a wait instance never has one agent: see
	// GenerateOne). A 2–5-agent curriculum
	// is agents 2, agents_max 5. 0 (omitted from JSON and msgpack) or a
	// value equal to Agents means every instance has Agents agents, so a
	// config without a range encodes and hashes as it did before the field.
	AgentsMax int `json:"agents_max,omitempty" msgpack:"agents_max,omitempty"`
	// Instances is the number of training instances per stage. Default
	// 4000 (the paper); DefaultLocalConfig uses fewer.
	Instances int `json:"instances" msgpack:"instances"`
}

// Paper sizes.
const (
	PaperMinSize = 3
	PaperMaxSize = 10
)

// DefaultConfig returns the paper-shaped configuration: sizes 3..10 with
// equal data ratios, hole ratio 0.2, wait ratio 0.3, 2 agents, 4000
// instances per stage.
func DefaultConfig() Config {
	c := Config{Agents: 2, Instances: 4000}
	n := PaperMaxSize - PaperMinSize + 1
	for s := PaperMinSize; s <= PaperMaxSize; s++ {
		c.Sizes = append(c.Sizes, SizeConfig{Size: s, DataRatio: 1 / float64(n), HoleRatio: 0.2, WaitRatio: 0.3})
	}
	return c
}

// DefaultLocalConfig is DefaultConfig with 512 instances per stage, sized
// for a laptop run.
func DefaultLocalConfig() Config {
	c := DefaultConfig()
	c.Instances = 512
	return c
}

// AgentRange returns the fewest and the most agents an instance of c has:
// Agents, and AgentsMax when it is above Agents.
func (c Config) AgentRange() (lo, hi int) { return c.Agents, max(c.Agents, c.AgentsMax) }

// HasAgentRange reports whether instances of c have different agent counts.
func (c Config) HasAgentRange() bool { return c.AgentsMax > c.Agents }

// AgentCounts returns the agent counts that the instances of size n draw
// from, lowest first: Agents..min(AgentsMax, n), or just Agents without a
// range (also when Agents exceeds n: Validate judges that).
func (c Config) AgentCounts(n int) []int {
	lo, hi := c.AgentRange()
	hi = max(lo, min(hi, n))
	out := make([]int, 0, hi-lo+1)
	for k := lo; k <= hi; k++ {
		out = append(out, k)
	}
	return out
}

// AgentsText is the agent count as prompts and diffs print it: "2", or
// "2..5" for a range.
func (c Config) AgentsText() string {
	lo, hi := c.AgentRange()
	if hi == lo {
		return strconv.Itoa(lo)
	}
	return strconv.Itoa(lo) + ".." + strconv.Itoa(hi)
}

// Clone returns a deep copy.
func (c Config) Clone() Config {
	c.Sizes = append([]SizeConfig(nil), c.Sizes...)
	return c
}
