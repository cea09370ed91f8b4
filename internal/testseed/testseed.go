// Package testseed gives randomised tests one -seed flag: a test takes its seed from Get, which
// logs it so that a failure can be replayed with -seed=N.
package testseed

import (
	"flag"
	"testing"
)

var seed = flag.Uint64("seed", 0, "seed for randomised tests (0 = each test's fixed default)")

// Get returns the -seed flag, or def when it is 0, and logs the seed with the flag that replays it.
func Get(t testing.TB, def uint64) uint64 {
	t.Helper()
	s := def
	if *seed != 0 {
		s = *seed
	}
	t.Logf("seed=%d (replay with -seed=%d)", s, s)
	return s
}
