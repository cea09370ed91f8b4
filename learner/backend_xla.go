//go:build cgo

package learner

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/xla"
)

// xlaAvailable reports whether this build can create XLA backends.
const xlaAvailable = true

// newXLABackend loads the PJRT plugin at the absolute path plugin, with auto-install off.
func newXLABackend(plugin string) (backends.Backend, error) {
	xla.EnableAutoInstall(false)
	b, err := xla.New(plugin)
	if err != nil {
		return nil, fmt.Errorf("learner: XLA backend with plugin %q: %w", plugin, err)
	}
	return b, nil
}
