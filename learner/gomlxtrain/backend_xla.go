//go:build cgo

package gomlxtrain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/xla"
)

// xlaAvailable reports whether this build can create XLA backends.
const xlaAvailable = true

// newXLABackend loads the PJRT plugin at the absolute path plugin (followed by options, see
// NewBackend), with auto-install off.
func newXLABackend(plugin string) (backends.Backend, error) {
	xla.EnableAutoInstall(false)
	parts := strings.Split(plugin, ",")
	var opts pjrt.NamedValuesMap
	if i := slices.Index(parts, OptNoPreallocate); i > 0 {
		opts = pjrt.NamedValuesMap{"preallocate": false}
		parts = slices.Delete(parts, i, i+1)
	}
	b, err := xla.NewWithOptions(strings.Join(parts, ","), opts)
	if err != nil {
		return nil, fmt.Errorf("learner: XLA backend with plugin %q: %w", plugin, err)
	}
	return b, nil
}
