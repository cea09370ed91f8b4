package daemon

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/t2t-lab/t2t/internal/testutil"
)

// TestMain fails the package's tests when a goroutine outlives them: Run
// must stop everything it starts (HTTP servers, the membership watch, the
// rollout actors, the run's actor system), apart from those protoactor-go is
// known to leave (testutil.IgnoreProtoactor).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testutil.IgnoreProtoactor()...)
}
