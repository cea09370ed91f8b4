package train

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/t2t-lab/t2t/internal/testutil"
)

// TestMain fails the package's tests if a goroutine outlives them, apart
// from those protoactor-go is known to leave (see testutil.IgnoreProtoactor).
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, testutil.IgnoreProtoactor()...)
}
