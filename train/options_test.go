package train

import (
	"errors"
	"math"
	"reflect"
	"testing"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
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

// ParseRetry normalises the paper's conversation retries to "" at 0 (the settings of runs made
// before the flags) and refuses an unknown mode or resampling at a temperature outside (0, 2].
func TestParseRetry(t *testing.T) {
	for _, c := range []struct {
		mode     string
		temp     float64
		wantMode string
		wantTemp float64
		flag     string
	}{
		{"", 0.6, "", 0, ""},
		{"conversation", 0.6, "", 0, ""},
		{" Resample ", 0.6, engineer.RetryResample, 0.6, ""},
		{"resample", 2, engineer.RetryResample, 2, ""},
		{"resample", 0, "", 0, "engineer-retry-temperature"},
		{"resample", 2.1, "", 0, "engineer-retry-temperature"},
		{"resample", math.NaN(), "", 0, "engineer-retry-temperature"},
		{"again", 0.6, "", 0, "engineer-retry"},
	} {
		mode, temp, err := ParseRetry(c.mode, c.temp, "engineer-retry")
		var fe *fielderr.Error
		switch {
		case c.flag == "" && (err != nil || mode != c.wantMode || temp != c.wantTemp):
			t.Errorf("ParseRetry(%q, %g) = %q, %g, %v; want %q, %g", c.mode, c.temp, mode, temp, err, c.wantMode, c.wantTemp)
		case c.flag != "" && (!errors.As(err, &fe) || fe.Flag != c.flag || !errors.Is(err, ErrOptions)):
			t.Errorf("ParseRetry(%q, %g): err %v, want an ErrOptions error naming --%s", c.mode, c.temp, err, c.flag)
		}
	}
}
