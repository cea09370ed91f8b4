package learner

import "testing"

// PadRows is the row bucket of every padded batch: a power of two, GRPOConfig.PaddedShape caps
// it at MicroBatch.
func TestPadRowsBucket(t *testing.T) {
	for _, tc := range []struct{ n, want int }{{-1, 1}, {0, 1}, {1, 1}, {2, 2}, {3, 4}, {5, 8}, {8, 8}, {9, 16}, {1000, 1024}} {
		if got := PadRows(tc.n); got != tc.want {
			t.Errorf("PadRows(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
	cfg := DefaultGRPOConfig()
	cfg.MicroBatch = 6
	if rows, _ := cfg.PaddedShape(5, 1); rows != 6 {
		t.Errorf("5 rows with MicroBatch 6 pad to %d, want 6", rows)
	}
}
