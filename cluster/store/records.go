package store

import (
	"bytes"
	"cmp"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// ConfigRecord is the environment config of one stage. The config itself is
// opaque JSON (the env package's Config); Version is its hash.
type ConfigRecord struct {
	Stage   int
	Version string
	// JSON is stored compacted (whitespace removed, nothing escaped); a
	// compact document comes back byte for byte.
	JSON      []byte
	Proposer  string
	Rationale string
}

type configWire struct {
	Stage     int             `json:"stage"`
	Version   string          `json:"version"`
	Config    json.RawMessage `json:"config"`
	Proposer  string          `json:"proposer,omitempty"`
	Rationale string          `json:"rationale,omitempty"`
}

// AuditRecord is one engineer proposal attempt for a stage.
type AuditRecord struct {
	Stage      int    `json:"stage"`
	Attempt    int    `json:"attempt"`
	PromptHash string `json:"prompt_hash,omitempty"`
	RawAnswer  string `json:"raw_answer,omitempty"`
	Parsed     string `json:"parsed,omitempty"`
	Projected  string `json:"projected,omitempty"`
	Accepted   bool   `json:"accepted"`
	Reason     string `json:"reason,omitempty"`
	// Engineer names the model that answered: "self@v12" (the policy being trained, at
	// version 12), "base@DIR" (its frozen starting checkpoint) or an endpoint.
	Engineer string `json:"engineer,omitempty"`
}

// CheckpointRecord indexes one saved policy checkpoint.
type CheckpointRecord struct {
	Version int64  `json:"version"`
	Step    int64  `json:"step"`
	Path    string `json:"path"`
	// SHA256 of the checkpoint, 64 lowercase hex digits.
	SHA256        string `json:"sha256"`
	ConfigVersion string `json:"config_version,omitempty"`
}

// RunState is the latest known state of a run, for status pages and resume.
type RunState struct {
	RunID         string `json:"run_id"`
	Stage         int    `json:"stage"`
	Phase         string `json:"phase"`
	PolicyVersion int64  `json:"policy_version"`
	ConfigVersion string `json:"config_version,omitempty"`
	// UpdatedUnixMs is set to the current time by PutRunState when zero.
	UpdatedUnixMs int64 `json:"updated_unix_ms"`
}

// putOnceScript sets a hash field unless it exists; it returns 1 when it
// wrote, else the existing value.
//
//	KEYS[1] hash, ARGV[1] field, ARGV[2] value
var putOnceScript = redis.NewScript(`
local cur = redis.call('HGET', KEYS[1], ARGV[1])
if cur then
  return cur
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
`)

// putOnce writes field=value unless the field exists, and returns the
// existing value (nil when it wrote).
func (s *Store) putOnce(ctx context.Context, op, key, field string, value []byte) (existing []byte, err error) {
	err = s.do(ctx, op, func(ctx context.Context) error {
		v, err := putOnceScript.Run(ctx, s.rdb, []string{key}, field, value).Result()
		if err != nil {
			return err
		}
		switch v := v.(type) {
		case int64:
			existing = nil
		case string:
			existing = []byte(v)
		default:
			return fmt.Errorf("unexpected script reply %T", v)
		}
		return nil
	})
	return existing, err
}

// marshal encodes v without HTML escaping, so embedded raw JSON is only
// compacted.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, fmt.Errorf("store: encode %T: %w", v, err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// hgetAll reads a whole hash with retries.
func (s *Store) hgetAll(ctx context.Context, op, key string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, op, func(ctx context.Context) (err error) {
		h, err = s.rdb.HGetAll(ctx, key).Result()
		return err
	})
	return h, err
}

func validateConfig(rec *ConfigRecord) error {
	if err := checkStage(rec.Stage); err != nil {
		return err
	}
	if err := checkText("Version", rec.Version, MaxIDLen); err != nil {
		return err
	}
	if rec.Version == "" {
		return invalid("Version", `""`, "must not be empty")
	}
	if len(rec.JSON) > MaxRecordText || !json.Valid(rec.JSON) {
		return invalid("JSON", fmt.Sprintf("%d bytes", len(rec.JSON)), "must be a valid JSON document of at most 1 MiB")
	}
	if err := checkText("Proposer", rec.Proposer, MaxIDLen); err != nil {
		return err
	}
	return checkText("Rationale", rec.Rationale, MaxRecordText)
}

// PutConfig records the config of rec.Stage. It is idempotent per stage:
// putting the same Version again is a no-op (the first record is kept),
// and a different Version fails with ErrConflict.
func (s *Store) PutConfig(ctx context.Context, runID string, rec ConfigRecord) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if err := validateConfig(&rec); err != nil {
		return err
	}
	b, err := marshal(configWire{rec.Stage, rec.Version, rec.JSON, rec.Proposer, rec.Rationale})
	if err != nil {
		return err
	}
	key := s.runKey(runID, "configs")
	old, err := s.putOnce(ctx, "put_config", key, strconv.Itoa(rec.Stage), b)
	if err != nil || old == nil {
		return err
	}
	var w configWire
	if err := json.Unmarshal(old, &w); err != nil {
		return fmt.Errorf("store: put_config: decode existing %s[%d]: %w", key, rec.Stage, err)
	}
	if w.Version != rec.Version {
		return fmt.Errorf("%w: run %s stage %d already has config version %q, not %q", ErrConflict, runID, rec.Stage, w.Version, rec.Version)
	}
	return nil
}

func decodeConfig(key, field, raw string) (ConfigRecord, error) {
	var w configWire
	if err := json.Unmarshal([]byte(raw), &w); err != nil {
		return ConfigRecord{}, fmt.Errorf("store: decode %s[%s]: %w", key, field, err)
	}
	return ConfigRecord{Stage: w.Stage, Version: w.Version, JSON: []byte(w.Config), Proposer: w.Proposer, Rationale: w.Rationale}, nil
}

// Configs returns the run's config history ordered by stage.
func (s *Store) Configs(ctx context.Context, runID string) ([]ConfigRecord, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	key := s.runKey(runID, "configs")
	h, err := s.hgetAll(ctx, "configs", key)
	if err != nil {
		return nil, err
	}
	out := make([]ConfigRecord, 0, len(h))
	for f, v := range h {
		rec, err := decodeConfig(key, f, v)
		if err != nil {
			return nil, err
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b ConfigRecord) int { return cmp.Compare(a.Stage, b.Stage) })
	return out, nil
}

// Config returns the config of one stage, or ErrNotFound.
func (s *Store) Config(ctx context.Context, runID string, stage int) (ConfigRecord, error) {
	if err := checkRun(runID); err != nil {
		return ConfigRecord{}, err
	}
	if err := checkStage(stage); err != nil {
		return ConfigRecord{}, err
	}
	key, field := s.runKey(runID, "configs"), strconv.Itoa(stage)
	var raw string
	err := s.do(ctx, "config", func(ctx context.Context) (err error) {
		raw, err = s.rdb.HGet(ctx, key, field).Result()
		if errors.Is(err, redis.Nil) {
			return fmt.Errorf("%w: config of run %s stage %d", ErrNotFound, runID, stage)
		}
		return err
	})
	if err != nil {
		return ConfigRecord{}, err
	}
	return decodeConfig(key, field, raw)
}

// AppendAudit records an engineer attempt. Records are keyed by (Stage,
// Attempt): appending an identical record again is a no-op, a different
// one for the same key fails with ErrConflict.
func (s *Store) AppendAudit(ctx context.Context, runID string, a AuditRecord) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if err := checkStage(a.Stage); err != nil {
		return err
	}
	if a.Attempt < 0 {
		return invalid("Attempt", a.Attempt, "must be >= 0")
	}
	for _, f := range []struct{ n, v string }{{"PromptHash", a.PromptHash}, {"RawAnswer", a.RawAnswer}, {"Parsed", a.Parsed}, {"Projected", a.Projected}, {"Reason", a.Reason}} {
		if err := checkText(f.n, f.v, MaxRecordText); err != nil {
			return err
		}
	}
	b, err := marshal(a)
	if err != nil {
		return err
	}
	old, err := s.putOnce(ctx, "append_audit", s.runKey(runID, "audit"), strconv.Itoa(a.Stage)+":"+strconv.Itoa(a.Attempt), b)
	if err != nil || old == nil || bytes.Equal(old, b) {
		return err
	}
	return fmt.Errorf("%w: run %s already has a different audit record for stage %d attempt %d", ErrConflict, runID, a.Stage, a.Attempt)
}

// Audit returns the run's engineer audit ordered by (Stage, Attempt).
func (s *Store) Audit(ctx context.Context, runID string) ([]AuditRecord, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	key := s.runKey(runID, "audit")
	h, err := s.hgetAll(ctx, "audit", key)
	if err != nil {
		return nil, err
	}
	out := make([]AuditRecord, 0, len(h))
	for f, v := range h {
		var a AuditRecord
		if err := json.Unmarshal([]byte(v), &a); err != nil {
			return nil, fmt.Errorf("store: decode %s[%s]: %w", key, f, err)
		}
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b AuditRecord) int {
		return cmp.Or(cmp.Compare(a.Stage, b.Stage), cmp.Compare(a.Attempt, b.Attempt))
	})
	return out, nil
}

// PutCheckpoint indexes a checkpoint. Records are keyed by Version: putting
// an identical record again is a no-op, a different one fails with
// ErrConflict.
func (s *Store) PutCheckpoint(ctx context.Context, runID string, c CheckpointRecord) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if err := checkNonNeg("Version", c.Version); err != nil {
		return err
	}
	if err := checkNonNeg("Step", c.Step); err != nil {
		return err
	}
	if c.Path == "" {
		return invalid("Path", `""`, "must not be empty")
	}
	if err := checkText("Path", c.Path, MaxRecordText); err != nil {
		return err
	}
	if _, err := hex.DecodeString(c.SHA256); err != nil || len(c.SHA256) != 64 || c.SHA256 != toLowerASCII(c.SHA256) {
		return invalid("SHA256", fmt.Sprintf("%.16q", c.SHA256), "must be 64 lowercase hex digits")
	}
	if err := checkText("ConfigVersion", c.ConfigVersion, MaxIDLen); err != nil {
		return err
	}
	b, err := marshal(c)
	if err != nil {
		return err
	}
	old, err := s.putOnce(ctx, "put_checkpoint", s.runKey(runID, "checkpoints"), strconv.FormatInt(c.Version, 10), b)
	if err != nil || old == nil || bytes.Equal(old, b) {
		return err
	}
	return fmt.Errorf("%w: run %s already has a different checkpoint version %d", ErrConflict, runID, c.Version)
}

func toLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// Checkpoints returns the run's checkpoints ordered by Version.
func (s *Store) Checkpoints(ctx context.Context, runID string) ([]CheckpointRecord, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	key := s.runKey(runID, "checkpoints")
	h, err := s.hgetAll(ctx, "checkpoints", key)
	if err != nil {
		return nil, err
	}
	out := make([]CheckpointRecord, 0, len(h))
	for f, v := range h {
		var c CheckpointRecord
		if err := json.Unmarshal([]byte(v), &c); err != nil {
			return nil, fmt.Errorf("store: decode %s[%s]: %w", key, f, err)
		}
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b CheckpointRecord) int { return cmp.Compare(a.Version, b.Version) })
	return out, nil
}

// LatestCheckpoint returns the checkpoint with the highest Version; ok is
// false when the run has none.
func (s *Store) LatestCheckpoint(ctx context.Context, runID string) (c CheckpointRecord, ok bool, err error) {
	all, err := s.Checkpoints(ctx, runID)
	if err != nil || len(all) == 0 {
		return CheckpointRecord{}, false, err
	}
	return all[len(all)-1], true, nil
}

// PutRunState replaces the run's state (last writer wins) and lists the run
// in Runs. A zero UpdatedUnixMs is set to the current time.
func (s *Store) PutRunState(ctx context.Context, st RunState) error {
	if err := checkRun(st.RunID); err != nil {
		return err
	}
	if err := checkStage(st.Stage); err != nil {
		return err
	}
	if err := checkID("Phase", st.Phase); err != nil {
		return err
	}
	if err := checkNonNeg("PolicyVersion", st.PolicyVersion); err != nil {
		return err
	}
	if err := checkText("ConfigVersion", st.ConfigVersion, MaxIDLen); err != nil {
		return err
	}
	if err := checkNonNeg("UpdatedUnixMs", st.UpdatedUnixMs); err != nil {
		return err
	}
	if st.UpdatedUnixMs == 0 {
		st.UpdatedUnixMs = time.Now().UnixMilli()
	}
	b, err := marshal(st)
	if err != nil {
		return err
	}
	key := s.runKey(st.RunID, "state")
	return s.do(ctx, "put_run_state", func(ctx context.Context) error {
		_, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, b, 0)
			p.SAdd(ctx, s.runsKey(), st.RunID)
			return nil
		})
		return err
	})
}

// RunState returns the run's state; ok is false when none was put.
func (s *Store) RunState(ctx context.Context, runID string) (st RunState, ok bool, err error) {
	if err := checkRun(runID); err != nil {
		return RunState{}, false, err
	}
	key := s.runKey(runID, "state")
	var raw []byte
	err = s.do(ctx, "run_state", func(ctx context.Context) (err error) {
		raw, err = s.rdb.Get(ctx, key).Bytes()
		if errors.Is(err, redis.Nil) {
			raw, err = nil, nil
		}
		return err
	})
	if err != nil || raw == nil {
		return RunState{}, false, err
	}
	if err := json.Unmarshal(raw, &st); err != nil {
		return RunState{}, false, fmt.Errorf("store: decode %s: %w", key, err)
	}
	return st, true, nil
}

// Runs returns the ids of runs that have a run state, sorted.
func (s *Store) Runs(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.do(ctx, "runs", func(ctx context.Context) (err error) {
		ids, err = s.rdb.SMembers(ctx, s.runsKey()).Result()
		return err
	})
	slices.Sort(ids)
	return ids, err
}
