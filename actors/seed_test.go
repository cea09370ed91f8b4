package actors

import "testing"

// TestSeedValuesPinned pins the seed derivations to values computed with
// the code they replaced (actors.unitSeed, train.stageSeed, train.chunkSeed
// and the evaluation's stageSeed(seed^0xe7a1, stage)): a run's instances
// and samples must not change.
func TestSeedValuesPinned(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		seed        uint64
		stage, unit int
		want        uint64
	}{
		{1, 0, 0, 0x910a2dec89025cc1},
		{1, 0, 1, 0xe99ff867dbf682c9},
		{1, 3, 5, 0x1658fde45b0484bd},
		{7, 2, 11, 0xa3a40dd943444c28},
		{2026, 7, 63, 0xd15841e72516b45f},
		{0xdeadbeef, 999, 4095, 0x8eb3674a6e083611},
	} {
		if got := UnitSeed(c.seed, c.stage, c.unit); got != c.want {
			t.Errorf("UnitSeed(%d, %d, %d) = %#x, want %#x", c.seed, c.stage, c.unit, got, c.want)
		}
	}
	for _, c := range []struct {
		seed  uint64
		stage int
		want  uint64
	}{
		{1, 0, 0xd1b81552cad8bb4c},
		{1, 1, 0xc1574d78b9d74d81},
		{7, 2, 0xd262804e3d02d195},
		{2026, 7, 0xe6991ede55e2c207},
		{1 ^ 0xe7a1, -1, 0xa59079a2762abed},
		{1 ^ 0xe7a1, 0, 0xe4514e724136872b},
		{7 ^ 0xe7a1, 3, 0x41d1e7bde3108e66},
	} {
		if got := StageSeed(c.seed, c.stage); got != c.want {
			t.Errorf("StageSeed(%d, %d) = %#x, want %#x", c.seed, c.stage, got, c.want)
		}
	}
	for _, c := range []struct {
		seed  uint64
		stage int
		want  uint64
	}{
		{1, -1, 0xa59079a2762abed},
		{1, 0, 0xe4514e724136872b},
		{7, 3, 0x41d1e7bde3108e66},
	} {
		if got := EvalSeed(c.seed, c.stage); got != c.want {
			t.Errorf("EvalSeed(%d, %d) = %#x, want %#x", c.seed, c.stage, got, c.want)
		}
	}
	for _, c := range []struct {
		seed  uint64
		chunk int
		want  uint64
	}{
		{0x1234, 0, 0x1234},
		{0x1234, 1, 0xf00a249a8634e97f},
		{0x1234, 2, 0x558d6ed9be1b4828},
		{1, 3, 0x6d1db36ccba982d2},
		{0xffffffffffffffff, 7, 0x8f1fb04eb547c8ec},
	} {
		if got := ChunkSeed(c.seed, c.chunk); got != c.want {
			t.Errorf("ChunkSeed(%#x, %d) = %#x, want %#x", c.seed, c.chunk, got, c.want)
		}
	}
}
