package train

import (
	"reflect"
	"testing"

	"github.com/t2t-lab/t2t/env"
)

// TestSetDefaults: zero options take DefaultOptions and the derived
// defaults; set fields stay; a deterministic run has one rollout with one
// unit in flight and keeps stale groups.
func TestSetDefaults(t *testing.T) {
	t.Parallel()
	var o Options
	o.SetDefaults()
	d := DefaultOptions()
	if o.RunID != "run-1" || o.MaxLag != DefaultMaxLag || o.KeepLateK != 8 || d.RunID != "" || d.MaxLag != 0 || d.KeepLateK != 0 {
		t.Fatalf("derived defaults: run %q, max lag %d, keep late %d (DefaultOptions: %q, %d, %d)", o.RunID, o.MaxLag, o.KeepLateK, d.RunID, d.MaxLag, d.KeepLateK)
	}
	o.RunID, o.MaxLag, o.KeepLateK = "", 0, 0
	o.Out, o.Logger, d.Out, d.Logger = nil, nil, nil, nil
	if !reflect.DeepEqual(o, d) {
		t.Fatalf("SetDefaults gave\n%+v\nDefaultOptions is\n%+v", o, d)
	}
	if !reflect.DeepEqual(d.Config, env.DefaultLocalConfig()) || d.Stages != 8 || d.GroupSize != 8 || d.LearnerBatch != 32 || d.SuiteSeed != 2026 {
		t.Fatalf("DefaultOptions %+v", d)
	}
	s := Options{Seed: 5, StalenessK: 1, Rollouts: 4, Deterministic: true}
	s.SetDefaults()
	if s.RunID != DefaultRunID(5) || s.RunID != "run-5" || s.MaxLag != 1 || s.KeepLateK != 2 || s.Rollouts != 1 || s.MaxInFlight != 1 || !s.KeepStale {
		t.Fatalf("options %+v", s)
	}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
}
