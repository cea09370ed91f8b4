package rolloutengine

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests if a goroutine (a Run loop, a fake engine's handler)
// outlives them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
