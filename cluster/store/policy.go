package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"
)

// Policy distribution between nodes is by pull: the learner's node publishes the run's spec
// before the first stage and every policy version after each update; a rollout node reads the
// spec when it sees a run's first unit and loads the newest weights when the learner's version
// moved past the one it holds. The keys are in the schema of the package doc.

// KeepPolicies is the number of newest policy versions whose weights are kept.
const KeepPolicies = 4

// PutSpec writes the run's spec, opaque bytes (train.RunSpec's JSON); last writer wins.
func (s *Store) PutSpec(ctx context.Context, runID string, spec []byte) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	key := s.runKey(runID, "spec")
	return s.do(ctx, "put_spec", func(ctx context.Context) error {
		return s.rdb.Set(ctx, key, spec, 0).Err()
	})
}

// Spec reads the run's spec; an error wrapping ErrNotFound when none was written.
func (s *Store) Spec(ctx context.Context, runID string) ([]byte, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	return s.getBytes(ctx, "spec", s.runKey(runID, "spec"))
}

// PublishPolicy makes version the run's latest policy, with its weights (nil for a policy
// whose weights travel otherwise), and drops the weights KeepPolicies versions older. The
// weights and the latest version move in one MULTI/EXEC, so whoever reads the latest version
// finds its weights (unless KeepPolicies newer ones were published in between).
func (s *Store) PublishPolicy(ctx context.Context, runID string, version int64, weights []byte) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	if err := checkNonNeg("version", version); err != nil {
		return err
	}
	return s.do(ctx, "publish_policy", func(ctx context.Context) error {
		_, err := s.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			if weights != nil {
				tx.Set(ctx, s.policyKey(runID, version), weights, 0)
			}
			tx.Set(ctx, s.runKey(runID, "policy:latest"), version, 0)
			if old := version - KeepPolicies; old >= 0 {
				tx.Del(ctx, s.policyKey(runID, old))
			}
			return nil
		})
		return err
	})
}

// LatestPolicy returns the run's newest published version; an error wrapping ErrNotFound
// when none was published.
func (s *Store) LatestPolicy(ctx context.Context, runID string) (int64, error) {
	if err := checkRun(runID); err != nil {
		return 0, err
	}
	b, err := s.getBytes(ctx, "latest_policy", s.runKey(runID, "policy:latest"))
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("store: decode latest policy of run %s: %w", runID, err)
	}
	return v, nil
}

// PolicyWeights returns version's weights; an error wrapping ErrNotFound when they are not
// (or no longer) stored.
func (s *Store) PolicyWeights(ctx context.Context, runID string, version int64) ([]byte, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	return s.getBytes(ctx, "policy_weights", s.policyKey(runID, version))
}

func (s *Store) policyKey(runID string, version int64) string {
	return s.runKey(runID, "policy:"+strconv.FormatInt(version, 10))
}

// getBytes reads a string key; an error wrapping ErrNotFound (naming the key) when it is absent.
func (s *Store) getBytes(ctx context.Context, op, key string) ([]byte, error) {
	var raw []byte
	err := s.do(ctx, op, func(ctx context.Context) (err error) {
		raw, err = s.rdb.Get(ctx, key).Bytes()
		return err
	})
	if errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, key)
	}
	return raw, err
}

// PutFlow writes the run's flow record, opaque bytes (train.FlowRecord's JSON); last writer wins.
func (s *Store) PutFlow(ctx context.Context, runID string, rec []byte) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	key := s.runKey(runID, "flow")
	return s.do(ctx, "put_flow", func(ctx context.Context) error {
		return s.rdb.Set(ctx, key, rec, 0).Err()
	})
}

// Flow reads the run's flow record; an error wrapping ErrNotFound when none was written.
func (s *Store) Flow(ctx context.Context, runID string) ([]byte, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	return s.getBytes(ctx, "flow", s.runKey(runID, "flow"))
}

// PutNodes writes the run's nodes record, opaque bytes (train.NodesRecord's
// JSON: each node's roles and load as the run's coordinator accounts it);
// last writer wins.
func (s *Store) PutNodes(ctx context.Context, runID string, rec []byte) error {
	if err := checkRun(runID); err != nil {
		return err
	}
	key := s.runKey(runID, "nodes")
	return s.do(ctx, "put_nodes", func(ctx context.Context) error {
		return s.rdb.Set(ctx, key, rec, 0).Err()
	})
}

// Nodes reads the run's nodes record; an error wrapping ErrNotFound when none was written.
func (s *Store) Nodes(ctx context.Context, runID string) ([]byte, error) {
	if err := checkRun(runID); err != nil {
		return nil, err
	}
	return s.getBytes(ctx, "nodes", s.runKey(runID, "nodes"))
}
