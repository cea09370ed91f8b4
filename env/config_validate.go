package env

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Config bounds checked by Validate.
const (
	// MaxConfigInstances is the largest Config.Instances accepted.
	MaxConfigInstances = 10_000_000
	// DataRatioTolerance is how far the data ratios may sum away from 1.
	DataRatioTolerance = 1e-6
)

// cfgErr wraps a FieldError so that errors.Is(err, ErrInvalidConfig) and
// errors.As(err, **FieldError) both hold.
func cfgErr(field string, value any, reason string) error {
	return fmt.Errorf("%w: %w", ErrInvalidConfig, &FieldError{Field: field, Value: value, Reason: reason})
}

// Validate checks c against the config space and returns the first broken
// rule, checked in this fixed order: sizes non-empty; for each size entry in
// order, its size in [MinSize, MaxSize] and strictly greater than the
// previous one, then data_ratio, hole_ratio and wait_ratio finite and in
// [0,1]; the data ratios summing to 1 within DataRatioTolerance; agents in
// [1, MaxAgents] and no larger than the smallest size with a positive data
// ratio (k agents need a k×k grid); agents_max 0 (no range) or in [agents,
// MaxAgents] (larger sizes' instances reach it, smaller ones stop at their
// size); instances in [0, MaxConfigInstances].
//
// The error wraps ErrInvalidConfig and a *FieldError whose Field is the path
// of the offending field (for example "sizes[2].hole_ratio") and whose
// Reason states the bound.
func (c Config) Validate() error {
	if len(c.Sizes) == 0 {
		return cfgErr("sizes", 0, "must list at least one size")
	}
	sum := 0.0
	for i, s := range c.Sizes {
		field := func(name string) string { return fmt.Sprintf("sizes[%d].%s", i, name) } // only on error
		if s.Size < MinSize || s.Size > MaxSize {
			return cfgErr(field("size"), s.Size, fmt.Sprintf("must be in [%d,%d]", MinSize, MaxSize))
		}
		if i > 0 && s.Size <= c.Sizes[i-1].Size {
			return cfgErr(field("size"), s.Size, fmt.Sprintf("sizes must be strictly increasing, previous is %d", c.Sizes[i-1].Size))
		}
		for _, r := range [...]struct {
			name string
			v    float64
		}{{"data_ratio", s.DataRatio}, {"hole_ratio", s.HoleRatio}, {"wait_ratio", s.WaitRatio}} {
			if math.IsNaN(r.v) || r.v < 0 || r.v > 1 {
				return cfgErr(field(r.name), r.v, "must be a finite number in [0,1]")
			}
		}
		sum += s.DataRatio
	}
	if math.Abs(sum-1) > DataRatioTolerance {
		return cfgErr("sizes[*].data_ratio", sum, fmt.Sprintf("data ratios must sum to 1 (within %g)", DataRatioTolerance))
	}
	if c.Agents < 1 || c.Agents > MaxAgents {
		return cfgErr("agents", c.Agents, fmt.Sprintf("must be in [1,%d]", MaxAgents))
	}
	if fe := c.agentsMaxError(); fe != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, fe)
	}
	for _, s := range c.Sizes {
		if s.DataRatio > 0 {
			if c.Agents > s.Size {
				return cfgErr("agents", c.Agents, fmt.Sprintf("must be <= %d, the smallest size with a positive data_ratio", s.Size))
			}
			break
		}
	}
	if c.Instances < 0 || c.Instances > MaxConfigInstances {
		return cfgErr("instances", c.Instances, fmt.Sprintf("must be in [0,%d]", MaxConfigInstances))
	}
	return nil
}

// agentsMaxError is the field error of an agents_max that is neither 0 (no
// range) nor in [agents, MaxAgents]; nil when it is.
func (c Config) agentsMaxError() *FieldError {
	if c.AgentsMax != 0 && (c.AgentsMax < c.Agents || c.AgentsMax > MaxAgents) {
		return &FieldError{Field: "agents_max", Value: c.AgentsMax, Reason: fmt.Sprintf("must be 0 (no range) or in [agents=%d,%d]", c.Agents, MaxAgents)}
	}
	return nil
}

// Project maps any config onto the valid space (the paper's projection of
// an engineer's proposal) and returns the result; c is not modified. Its
// output always passes Validate, and a valid config comes back with equal
// fields up to the rounding of the data-ratio renormalisation (and an
// agents_max equal to agents written as 0: the same config, Hash and Diff
// agree).
//
// Steps, in order:
//   - an empty size list becomes DefaultConfig's sizes;
//   - sizes are clamped to [MinSize, MaxSize], sorted (stably), and
//     duplicates dropped, keeping the first entry of each size in the
//     original order;
//   - hole and wait ratios are clipped to [0,1], NaN becomes 0;
//   - agents are clamped to [1, MaxAgents] and to the largest size;
//     agents_max is clamped to MaxAgents, and one that makes no range (at
//     most agents) becomes 0, so no hidden bound is carried along;
//   - sizes smaller than the agent count get data ratio 0 (they cannot hold
//     the agents), as do NaN, infinite and negative data ratios;
//   - the data ratios are renormalised to sum to 1; when all are 0 they
//     become uniform over the sizes that can hold the agents;
//   - instances are clamped to [0, MaxConfigInstances].
func (c Config) Project() Config {
	out := c.Clone()
	if len(out.Sizes) == 0 {
		out.Sizes = DefaultConfig().Sizes
	}
	for i := range out.Sizes {
		s := &out.Sizes[i]
		s.Size = min(max(s.Size, MinSize), MaxSize)
		s.HoleRatio = cfgClip01(s.HoleRatio)
		s.WaitRatio = cfgClip01(s.WaitRatio)
	}
	slices.SortStableFunc(out.Sizes, func(a, b SizeConfig) int { return a.Size - b.Size })
	out.Sizes = slices.CompactFunc(out.Sizes, func(a, b SizeConfig) bool { return a.Size == b.Size })

	out.Agents = min(max(out.Agents, 1), MaxAgents, out.Sizes[len(out.Sizes)-1].Size)
	if out.AgentsMax = min(out.AgentsMax, MaxAgents); out.AgentsMax <= out.Agents {
		out.AgentsMax = 0
	}

	// Data ratios: zero the unusable ones, scale by the largest so the sum
	// cannot overflow, then divide by the sum.
	top := 0.0
	for i := range out.Sizes {
		s := &out.Sizes[i]
		if s.Size < out.Agents || math.IsNaN(s.DataRatio) || math.IsInf(s.DataRatio, 0) || s.DataRatio <= 0 {
			s.DataRatio = 0
		}
		top = max(top, s.DataRatio)
	}
	if top == 0 {
		n := 0
		for _, s := range out.Sizes {
			if s.Size >= out.Agents {
				n++
			}
		}
		for i := range out.Sizes {
			if out.Sizes[i].Size >= out.Agents {
				out.Sizes[i].DataRatio = 1 / float64(n)
			}
		}
	} else {
		sum := 0.0
		for i := range out.Sizes {
			out.Sizes[i].DataRatio /= top
			sum += out.Sizes[i].DataRatio
		}
		for i := range out.Sizes {
			out.Sizes[i].DataRatio /= sum
		}
	}
	out.Instances = min(max(out.Instances, 0), MaxConfigInstances)
	return out
}

// cfgClip01 clips v to [0,1], mapping NaN and -0 to 0.
func cfgClip01(v float64) float64 {
	if math.IsNaN(v) || v <= 0 {
		return 0
	}
	return min(v, 1)
}

// cfgBits is the canonical bit pattern of v: -0 is 0 and every NaN is the
// same quiet NaN.
func cfgBits(v float64) uint64 {
	switch {
	case v == 0:
		return 0
	case math.IsNaN(v):
		return 0x7ff8000000000001
	}
	return math.Float64bits(v)
}

// cfgHashMagic starts the canonical encoding; bump its version when the
// encoding changes.
const cfgHashMagic = "t2t/env.Config/v1\x00"

// Hash returns the config's version id: the first 16 hex digits of the
// SHA-256 of a canonical encoding. The encoding is cfgHashMagic, then
// agents, instances and the number of sizes, then for each size entry in
// order its size and the bits of its data, hole and wait ratios, and last,
// only when the agent count is a range (HasAgentRange), agents_max; every
// number is a little-endian 64-bit word; -0 is encoded as 0 and every NaN
// alike. Equal configs get equal hashes on every machine; changing any
// field (including the order of the sizes) changes the hash, except an
// agents_max that makes no range (0 or at most agents): configs without a
// range hash as they did before the field existed.
func (c Config) Hash() string {
	h := sha256.New()
	buf := make([]byte, 0, len(cfgHashMagic)+8*(3+4*len(c.Sizes)))
	buf = append(buf, cfgHashMagic...)
	buf = binary.LittleEndian.AppendUint64(buf, uint64(int64(c.Agents)))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(int64(c.Instances)))
	buf = binary.LittleEndian.AppendUint64(buf, uint64(len(c.Sizes)))
	for _, s := range c.Sizes {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(int64(s.Size)))
		buf = binary.LittleEndian.AppendUint64(buf, cfgBits(s.DataRatio))
		buf = binary.LittleEndian.AppendUint64(buf, cfgBits(s.HoleRatio))
		buf = binary.LittleEndian.AppendUint64(buf, cfgBits(s.WaitRatio))
	}
	if c.HasAgentRange() {
		buf = binary.LittleEndian.AppendUint64(buf, uint64(int64(c.AgentsMax)))
	}
	h.Write(buf)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// cfgSizeKey names one size entry: its size and which occurrence of that
// size it is (0 for the first), so that unvalidated configs with duplicate
// sizes still diff entry by entry.
type cfgSizeKey struct{ size, nth int }

func (k cfgSizeKey) String() string {
	if k.nth == 0 {
		return "size " + strconv.Itoa(k.size)
	}
	return fmt.Sprintf("size %d#%d", k.size, k.nth+1)
}

func cfgKeys(sizes []SizeConfig) []cfgSizeKey {
	keys := make([]cfgSizeKey, len(sizes))
	seen := map[int]int{}
	for i, s := range sizes {
		keys[i] = cfgSizeKey{s.Size, seen[s.Size]}
		seen[s.Size]++
	}
	return keys
}

// cfgFmtPair formats a and b with the fewest decimals (at least 2) that tell
// them apart.
func cfgFmtPair(a, b float64) (string, string) {
	for prec := 2; prec < 17; prec++ {
		sa, sb := strconv.FormatFloat(a, 'f', prec, 64), strconv.FormatFloat(b, 'f', prec, 64)
		if sa != sb {
			return sa, sb
		}
	}
	return strconv.FormatFloat(a, 'g', -1, 64), strconv.FormatFloat(b, 'g', -1, 64)
}

// Diff describes how c differs from old, one change per line, in a fixed
// order: agents, instances, removed sizes, added sizes, changed ratios of
// sizes present in both (in c's order), and finally a change in the order of
// the sizes. Examples:
//
//	agents 2 → 3
//	agents 2 → 2..5
//	instances 4000 → 512
//	size 3 removed
//	size 11 added: data_ratio 0.10, hole_ratio 0.20, wait_ratio 0.30
//	size 5: hole_ratio 0.20 → 0.35
//
// Ratios are printed with two decimals, or more when two decimals would
// print both values alike. Floats compare as Hash does (-0 equals 0), so
// Diff is empty exactly when the hashes agree.
func (c Config) Diff(old Config) string {
	var lines []string
	if a, b := old.AgentsText(), c.AgentsText(); a != b {
		lines = append(lines, fmt.Sprintf("agents %s → %s", a, b))
	}
	if c.Instances != old.Instances {
		lines = append(lines, fmt.Sprintf("instances %d → %d", old.Instances, c.Instances))
	}
	newKeys, oldKeys := cfgKeys(c.Sizes), cfgKeys(old.Sizes)
	newAt := make(map[cfgSizeKey]int, len(newKeys))
	for i, k := range newKeys {
		newAt[k] = i
	}
	oldAt := make(map[cfgSizeKey]int, len(oldKeys))
	for i, k := range oldKeys {
		oldAt[k] = i
	}
	for _, k := range oldKeys {
		if _, ok := newAt[k]; !ok {
			lines = append(lines, k.String()+" removed")
		}
	}
	for i, k := range newKeys {
		if _, ok := oldAt[k]; !ok {
			s := c.Sizes[i]
			lines = append(lines, fmt.Sprintf("%s added: data_ratio %.2f, hole_ratio %.2f, wait_ratio %.2f",
				k, s.DataRatio, s.HoleRatio, s.WaitRatio))
		}
	}
	var common, commonOld []cfgSizeKey
	for i, k := range newKeys {
		j, ok := oldAt[k]
		if !ok {
			continue
		}
		common = append(common, k)
		ns, os := c.Sizes[i], old.Sizes[j]
		for _, r := range [...]struct {
			name     string
			was, now float64
		}{{"data_ratio", os.DataRatio, ns.DataRatio}, {"hole_ratio", os.HoleRatio, ns.HoleRatio}, {"wait_ratio", os.WaitRatio, ns.WaitRatio}} {
			if cfgBits(r.was) != cfgBits(r.now) {
				a, b := cfgFmtPair(r.was, r.now)
				lines = append(lines, fmt.Sprintf("%s: %s %s → %s", k, r.name, a, b))
			}
		}
	}
	for _, k := range oldKeys {
		if _, ok := newAt[k]; ok {
			commonOld = append(commonOld, k)
		}
	}
	if !slices.Equal(common, commonOld) {
		lines = append(lines, fmt.Sprintf("size order %v → %v", cfgSizeList(old.Sizes), cfgSizeList(c.Sizes)))
	}
	return strings.Join(lines, "\n")
}

func cfgSizeList(sizes []SizeConfig) []int {
	out := make([]int, len(sizes))
	for i, s := range sizes {
		out[i] = s.Size
	}
	return out
}

// ParseConfig decodes one JSON config strictly (unknown fields, field names
// in the wrong case and trailing data are rejected) and validates it. Missing fields stay zero, so a config
// must spell out every field that Validate needs. Errors wrap
// ErrInvalidConfig; decoding and validation errors also wrap a *FieldError
// naming the field.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, cfgJSONErr(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		off := dec.InputOffset()
		if err != nil {
			return Config{}, fmt.Errorf("%w: trailing data at offset %d: %w", ErrInvalidConfig, off, err)
		}
		return Config{}, fmt.Errorf("%w: trailing data at offset %d", ErrInvalidConfig, off)
	}
	if err := cfgExactKeys(data); err != nil {
		return Config{}, err
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

// cfgExactKeys rejects keys that encoding/json matched case-insensitively
// ("Agents" for "agents"): the config format is case-sensitive. It runs
// after a successful strict decode, so data is one well-formed JSON value.
func cfgExactKeys(data []byte) error {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return nil // null or not an object: the struct decode already judged it
	}
	check := func(prefix string, keys map[string]json.RawMessage, known ...string) error {
		var bad []string
		for k := range keys {
			if !slices.Contains(known, k) {
				bad = append(bad, k)
			}
		}
		if len(bad) == 0 {
			return nil
		}
		slices.Sort(bad) // report the first in sorted order, for determinism
		return fmt.Errorf("%w: %w", ErrInvalidConfig, &FieldError{Field: prefix + bad[0], Value: "(any)",
			Reason: fmt.Sprintf("unknown field (field names are case-sensitive: %s)", strings.Join(known, ", "))})
	}
	if err := check("", top, "sizes", "agents", "agents_max", "instances"); err != nil {
		return err
	}
	var sizes []map[string]json.RawMessage
	if raw, ok := top["sizes"]; ok && json.Unmarshal(raw, &sizes) == nil {
		for i, s := range sizes {
			if err := check(fmt.Sprintf("sizes[%d].", i), s, "size", "data_ratio", "hole_ratio", "wait_ratio"); err != nil {
				return err
			}
		}
	}
	return nil
}

// cfgJSONErr turns a decoding error into one that names the field where
// encoding/json says which.
func cfgJSONErr(err error) error {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		field := te.Field
		if field == "" {
			field = "config"
		}
		return fmt.Errorf("%w: %w", ErrInvalidConfig, &FieldError{Field: field, Value: te.Value, Reason: "want a JSON value of Go type " + te.Type.String()})
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		if u, uerr := strconv.Unquote(name); uerr == nil {
			name = u
		}
		return fmt.Errorf("%w: %w", ErrInvalidConfig, &FieldError{Field: name, Value: "(any)", Reason: "unknown field; known: sizes, agents, agents_max, instances and per size: size, data_ratio, hole_ratio, wait_ratio"})
	}
	return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
}
