package store

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Failure categories, one per verifier check (see env). An invalid episode
// counts under every check it failed.
const (
	CatParse       = "parse"
	CatIllegalMove = "illegal_move"
	CatConflict    = "conflict"
	CatHole        = "hole"
	CatOutOfBounds = "out_of_bounds"
	CatGoal        = "goal"
	CatStart       = "start"
	CatAgentCount  = "agent_count"
)

// CategoryNames returns the known failure categories, in check order.
func CategoryNames() []string {
	return []string{CatParse, CatIllegalMove, CatConflict, CatHole, CatOutOfBounds, CatGoal, CatStart, CatAgentCount}
}

func knownCategory(c string) bool {
	switch c {
	case CatParse, CatIllegalMove, CatConflict, CatHole, CatOutOfBounds, CatGoal, CatStart, CatAgentCount:
		return true
	}
	return false
}

// RewardQuantum is the resolution at which reward sums are stored: each
// recorded Counts.RewardSum is rounded to a multiple of it and summed as an
// integer, so aggregates are exact and independent of arrival order.
const RewardQuantum = 1.0 / rewardScale

// rewardScale is 1/RewardQuantum; dividing by it (rather than multiplying
// by the inexact RewardQuantum) gives the double nearest the stored sum.
const rewardScale = 1e9

// maxRewardSum bounds |Counts.RewardSum| of one bucket so that its
// quantised value fits comfortably in an int64.
const maxRewardSum = 1e9

// Key identifies an aggregate bucket: map size and agent count.
type Key struct{ Size, Agents int }

// Counts is one bucket of episode outcomes.
type Counts struct {
	// Episodes run; Valid of them passed all checks; Optimal of those had
	// the optimal cost. 0 <= Optimal <= Valid <= Episodes.
	Episodes, Valid, Optimal int64
	// Categories counts failed checks by category name (CategoryNames).
	// Each value is <= Episodes-Valid. Aggregates returns only non-zero
	// entries, and a nil map when there are none.
	Categories map[string]int64
	// RewardSum is the sum of episode rewards, stored at RewardQuantum
	// resolution; |RewardSum| <= 1e9 per recorded bucket.
	RewardSum float64
}

// UnitResult is what one work unit produced.
type UnitResult struct {
	RunID string
	Stage int
	// Split is "train", "val" or "eval:<suite>".
	Split string
	// UnitID is unique per run; a second RecordUnit with the same
	// (RunID, Stage, Split, UnitID) is not applied.
	UnitID  string
	Buckets map[Key]Counts
	// Examples are failure examples kept for the engineer (bounded stream).
	Examples      []Example
	PolicyVersion int64
	ConfigVersion string
}

// Example is one failed episode kept for inspection.
type Example struct {
	InstanceID string `json:"instance_id"`
	Size       int    `json:"size"`
	Agents     int    `json:"agents"`
	Category   string `json:"category"`
	// Detail and Answer are truncated to MaxExampleText bytes.
	Detail string `json:"detail,omitempty"`
	Answer string `json:"answer,omitempty"`
	// Filled by RecordUnit from the UnitResult; ignored on input.
	UnitID        string `json:"unit_id"`
	PolicyVersion int64  `json:"policy_version"`
	ConfigVersion string `json:"config_version,omitempty"`
}

// Add returns the sum of c and b (episodes, valid, optimal, reward and every
// category). It writes into c's category map, creating one when c has
// none: sum into an accumulator that owns its map, as in
// all = all.Add(x).
func (c Counts) Add(b Counts) Counts {
	c.Episodes += b.Episodes
	c.Valid += b.Valid
	c.Optimal += b.Optimal
	c.RewardSum += b.RewardSum
	for k, v := range b.Categories {
		if c.Categories == nil {
			c.Categories = map[string]int64{}
		}
		c.Categories[k] += v
	}
	return c
}

// recordUnitScript applies a unit at most once. The applied hash maps
// each unit id to the token of the RecordUnit call that applied it; only a
// new unit's counters and examples are written. The script runs
// atomically, so concurrent and retried calls cannot double count, and a
// retry of the call that applied the unit (its reply was lost) still
// reports applied.
//
//	KEYS[1] applied hash, KEYS[2] aggregate hash, KEYS[3] example stream
//	ARGV[1] unit id, ARGV[2] call token, ARGV[3] stream MAXLEN,
//	ARGV[4] number n of counters, ARGV[5 .. 4+2n] field/delta pairs,
//	the rest example JSON documents.
//
// It returns 1 when this call applied the unit, 0 for a duplicate.
var recordUnitScript = redis.NewScript(`
local tok = redis.call('HGET', KEYS[1], ARGV[1])
if tok then
  if tok == ARGV[2] then
    return 1
  end
  return 0
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
local n = tonumber(ARGV[4])
local i = 5
for _ = 1, n do
  redis.call('HINCRBY', KEYS[2], ARGV[i], ARGV[i + 1])
  i = i + 2
end
for j = i, #ARGV do
  redis.call('XADD', KEYS[3], 'MAXLEN', ARGV[3], '*', 'e', ARGV[j])
end
return 1
`)

// Aggregate hash field names: "<size>x<agents>:<counter>".
const (
	fieldEpisodes = "episodes"
	fieldValid    = "valid"
	fieldOptimal  = "optimal"
	fieldReward   = "reward_nano"
	fieldCatPfx   = "cat:"
)

func validateCounts(k Key, c Counts) error {
	at := func(f string) string { return fmt.Sprintf("Buckets[%dx%d].%s", k.Size, k.Agents, f) }
	if k.Size < 1 || k.Agents < 1 {
		return invalid("Buckets key", fmt.Sprintf("%+v", k), "Size and Agents must be >= 1")
	}
	if err := checkNonNeg(at("Episodes"), c.Episodes); err != nil {
		return err
	}
	if c.Valid < 0 || c.Valid > c.Episodes {
		return invalid(at("Valid"), c.Valid, fmt.Sprintf("must be in [0, Episodes=%d]", c.Episodes))
	}
	if c.Optimal < 0 || c.Optimal > c.Valid {
		return invalid(at("Optimal"), c.Optimal, fmt.Sprintf("must be in [0, Valid=%d]", c.Valid))
	}
	for name, v := range c.Categories {
		if !knownCategory(name) {
			return invalid(at("Categories"), fmt.Sprintf("%q", name), "unknown category")
		}
		if v < 0 || v > c.Episodes-c.Valid {
			return invalid(at("Categories["+name+"]"), v, fmt.Sprintf("must be in [0, Episodes-Valid=%d]", c.Episodes-c.Valid))
		}
	}
	if math.IsNaN(c.RewardSum) || math.Abs(c.RewardSum) > maxRewardSum {
		return invalid(at("RewardSum"), c.RewardSum, "must be finite with magnitude <= 1e9")
	}
	return nil
}

func validateUnit(r *UnitResult) error {
	if err := checkRun(r.RunID); err != nil {
		return err
	}
	if err := checkStage(r.Stage); err != nil {
		return err
	}
	if err := checkSplit(r.Split); err != nil {
		return err
	}
	if r.UnitID == "" || len(r.UnitID) > MaxUnitIDLen {
		return invalid("UnitID", fmt.Sprintf("%.32q", r.UnitID), fmt.Sprintf("must be 1..%d bytes", MaxUnitIDLen))
	}
	if err := checkNonNeg("PolicyVersion", r.PolicyVersion); err != nil {
		return err
	}
	if len(r.ConfigVersion) > MaxIDLen {
		return invalid("ConfigVersion", fmt.Sprintf("%.16q...", r.ConfigVersion), fmt.Sprintf("longer than %d bytes", MaxIDLen))
	}
	for k, c := range r.Buckets {
		if err := validateCounts(k, c); err != nil {
			return err
		}
	}
	for i, e := range r.Examples {
		if e.InstanceID == "" || len(e.InstanceID) > MaxUnitIDLen {
			return invalid(fmt.Sprintf("Examples[%d].InstanceID", i), fmt.Sprintf("%.32q", e.InstanceID), fmt.Sprintf("must be 1..%d bytes", MaxUnitIDLen))
		}
		if e.Size < 1 || e.Agents < 1 {
			return invalid(fmt.Sprintf("Examples[%d]", i), fmt.Sprintf("%dx%d", e.Size, e.Agents), "Size and Agents must be >= 1")
		}
		if !knownCategory(e.Category) {
			return invalid(fmt.Sprintf("Examples[%d].Category", i), fmt.Sprintf("%q", e.Category), "unknown category")
		}
	}
	return nil
}

// unitArgs builds the script's ARGV.
func (s *Store) unitArgs(r *UnitResult) ([]any, error) {
	keys := make([]Key, 0, len(r.Buckets))
	for k := range r.Buckets {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b Key) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Agents, b.Agents))
	})
	args := make([]any, 4, 4+len(keys)*2*(4+len(CategoryNames()))+len(r.Examples))
	args[0], args[1], args[2] = r.UnitID, rand.Text(), s.opt.MaxExamples
	n := 0
	add := func(pfx, field string, v int64) {
		if v != 0 {
			args = append(args, pfx+field, v)
			n++
		}
	}
	for _, k := range keys {
		c := r.Buckets[k]
		pfx := strconv.Itoa(k.Size) + "x" + strconv.Itoa(k.Agents) + ":"
		add(pfx, fieldEpisodes, c.Episodes)
		add(pfx, fieldValid, c.Valid)
		add(pfx, fieldOptimal, c.Optimal)
		add(pfx, fieldReward, quantReward(c.RewardSum))
		for _, name := range CategoryNames() {
			add(pfx, fieldCatPfx+name, c.Categories[name])
		}
	}
	args[3] = n
	ex := r.Examples
	if len(ex) > s.opt.MaxExamples {
		ex = ex[len(ex)-s.opt.MaxExamples:] // only the newest survive MAXLEN anyway
	}
	for _, e := range ex {
		e.Detail = truncateUTF8(e.Detail, MaxExampleText)
		e.Answer = truncateUTF8(e.Answer, MaxExampleText)
		e.UnitID, e.PolicyVersion, e.ConfigVersion = r.UnitID, r.PolicyVersion, r.ConfigVersion
		b, err := json.Marshal(e)
		if err != nil {
			return nil, fmt.Errorf("store: encode example: %w", err)
		}
		args = append(args, string(b))
	}
	return args, nil
}

func quantReward(r float64) int64 { return int64(math.Round(r * rewardScale)) }

// RecordUnit adds a unit's buckets to the (run, stage, split) aggregates and
// appends its examples to the bounded example stream, atomically and at
// most once per unit id: applied is false when the unit was already
// recorded by another call (its new content is then ignored). Retries
// after ambiguous failures are therefore safe, and the call whose write
// went through reports applied=true even if its first reply was lost.
func (s *Store) RecordUnit(ctx context.Context, r UnitResult) (applied bool, err error) {
	if err := validateUnit(&r); err != nil {
		return false, err
	}
	args, err := s.unitArgs(&r)
	if err != nil {
		return false, err
	}
	keys := []string{
		s.stageKey(r.RunID, r.Stage, r.Split, "units"),
		s.stageKey(r.RunID, r.Stage, r.Split, "agg"),
		s.stageKey(r.RunID, r.Stage, r.Split, "examples"),
	}
	err = s.do(ctx, "record_unit", func(ctx context.Context) error {
		v, err := recordUnitScript.Run(ctx, s.rdb, keys, args...).Int64()
		applied = v == 1
		return err
	})
	return applied, err
}

func checkStageSplit(runID string, stage int, split string) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if err := checkStage(stage); err != nil {
		return err
	}
	return checkSplit(split)
}

// Aggregates returns the summed buckets of every unit recorded for (run,
// stage, split); an empty map when there are none.
func (s *Store) Aggregates(ctx context.Context, runID string, stage int, split string) (map[Key]Counts, error) {
	if err := checkStageSplit(runID, stage, split); err != nil {
		return nil, err
	}
	key := s.stageKey(runID, stage, split, "agg")
	var h map[string]string
	if err := s.do(ctx, "aggregates", func(ctx context.Context) (err error) {
		h, err = s.rdb.HGetAll(ctx, key).Result()
		return err
	}); err != nil {
		return nil, err
	}
	out := make(map[Key]Counts)
	for f, v := range h {
		if err := addField(out, f, v); err != nil {
			return nil, fmt.Errorf("store: aggregates %s: %w", key, err)
		}
	}
	return out, nil
}

// addField parses one aggregate hash field into out.
func addField(out map[Key]Counts, field, value string) error {
	bad := func() error { return fmt.Errorf("malformed field %q = %q", field, value) }
	kpart, name, ok := strings.Cut(field, ":")
	if !ok {
		return bad()
	}
	ss, as, ok := strings.Cut(kpart, "x")
	if !ok {
		return bad()
	}
	size, err1 := strconv.Atoi(ss)
	agents, err2 := strconv.Atoi(as)
	v, err3 := strconv.ParseInt(value, 10, 64)
	if err := errors.Join(err1, err2, err3); err != nil {
		return fmt.Errorf("%w: %w", bad(), err)
	}
	k := Key{Size: size, Agents: agents}
	c := out[k]
	switch {
	case name == fieldEpisodes:
		c.Episodes = v
	case name == fieldValid:
		c.Valid = v
	case name == fieldOptimal:
		c.Optimal = v
	case name == fieldReward:
		c.RewardSum = float64(v) / rewardScale
	case strings.HasPrefix(name, fieldCatPfx) && knownCategory(name[len(fieldCatPfx):]):
		if v != 0 {
			if c.Categories == nil {
				c.Categories = make(map[string]int64)
			}
			c.Categories[name[len(fieldCatPfx):]] = v
		}
	default:
		return bad()
	}
	out[k] = c
	return nil
}

// UnitsApplied returns how many distinct units were recorded for (run,
// stage, split).
func (s *Store) UnitsApplied(ctx context.Context, runID string, stage int, split string) (int64, error) {
	if err := checkStageSplit(runID, stage, split); err != nil {
		return 0, err
	}
	key := s.stageKey(runID, stage, split, "units")
	var n int64
	err := s.do(ctx, "units_applied", func(ctx context.Context) (err error) {
		n, err = s.rdb.HLen(ctx, key).Result()
		return err
	})
	return n, err
}

// Examples returns the newest n retained examples of (run, stage, split),
// oldest first; n <= 0 returns all retained (at most Options.MaxExamples).
func (s *Store) Examples(ctx context.Context, runID string, stage int, split string, n int) ([]Example, error) {
	if err := checkStageSplit(runID, stage, split); err != nil {
		return nil, err
	}
	key := s.stageKey(runID, stage, split, "examples")
	var msgs []redis.XMessage
	if err := s.do(ctx, "examples", func(ctx context.Context) (err error) {
		if n > 0 {
			msgs, err = s.rdb.XRevRangeN(ctx, key, "+", "-", int64(n)).Result()
		} else {
			msgs, err = s.rdb.XRevRange(ctx, key, "+", "-").Result()
		}
		return err
	}); err != nil {
		return nil, err
	}
	out := make([]Example, len(msgs))
	for i, m := range msgs {
		raw, _ := m.Values["e"].(string)
		if err := json.Unmarshal([]byte(raw), &out[len(msgs)-1-i]); err != nil {
			return nil, fmt.Errorf("store: examples %s entry %s: %w", key, m.ID, err)
		}
	}
	return out, nil
}
