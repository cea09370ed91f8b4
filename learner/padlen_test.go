package learner

import (
	"slices"
	"testing"
)

func TestPadLen(t *testing.T) {
	for _, tc := range []struct{ n, want int }{
		{-3, 8}, {0, 8}, {1, 8}, {8, 8}, {9, 16}, {17, 32}, {32, 32}, {33, 64}, {160, 160}, {161, 192},
		{480, 480}, {500, 512}, {512, 512}, {513, 576}, {1000, 1024}, {1024, 1024},
		{1025, 1152}, {2049, 2304}, {4095, 4096}, {4096, 4096}, {4396, 4608}, {8193, 9216},
	} {
		if got := PadLen(tc.n); got != tc.want {
			t.Errorf("PadLen(%d) = %d, want %d", tc.n, got, tc.want)
		}
	}
	// Bounded waste, never above the power of two ≥ 8, idempotent, monotone, and PadLens lists
	// exactly PadLen's values.
	buckets := PadLens(8192)
	if !slices.IsSorted(buckets) || buckets[0] != 8 || buckets[len(buckets)-1] != 8192 {
		t.Fatalf("PadLens(8192) = %v", buckets)
	}
	if n := len(PadLens(4096)); n != 42 {
		t.Errorf("%d buckets up to 4096, want 42 (8, 16, 16 multiples of 32, then 8 per doubling)", n)
	}
	prev := 0
	for n := 1; n <= 9000; n++ {
		p := PadLen(n)
		switch {
		case p < n || p < prev:
			t.Fatalf("PadLen(%d) = %d (previous %d)", n, p, prev)
		case p > max(8, PadRows(n)):
			t.Fatalf("PadLen(%d) = %d: more than the power of two %d", n, p, PadRows(n))
		case n <= 512 && p-n >= 32, n > 512 && float64(p-n) >= 0.125*float64(n):
			t.Fatalf("PadLen(%d) = %d wastes too much", n, p)
		case PadLen(p) != p:
			t.Fatalf("PadLen(PadLen(%d)) = %d ≠ %d", n, PadLen(p), p)
		case n <= 8192 && !slices.Contains(buckets, p):
			t.Fatalf("PadLen(%d) = %d is not in PadLens(8192)", n, p)
		}
		prev = p
	}
	for _, b := range buckets {
		if PadLen(b) != b {
			t.Errorf("bucket %d is not a PadLen value", b)
		}
	}
}

func TestPaddedShape(t *testing.T) {
	cfg := DefaultGRPOConfig()
	cfg.MicroBatch = 8
	cfg.LengthBuckets = PadLens(1024)
	for _, tc := range []struct{ rows, t, wantRows, wantT int }{
		{1, 1, 1, 8}, {3, 160, 4, 160}, {5, 161, 8, 192}, {8, 600, 8, 640}, {8, 1024, 8, 1024},
		{2, 1100, 2, 2048}, // above the last bucket: a multiple of it
	} {
		r, tt := cfg.PaddedShape(tc.rows, tc.t)
		if r != tc.wantRows || tt != tc.wantT {
			t.Errorf("PaddedShape(%d, %d) = (%d, %d), want (%d, %d)", tc.rows, tc.t, r, tt, tc.wantRows, tc.wantT)
		}
	}
	cfg.LengthBuckets = []int{1, 16, 64}
	if _, tt := cfg.PaddedShape(1, 17); tt != 64 {
		t.Errorf("explicit buckets: T 17 → %d, want 64", tt)
	}
}
