//go:build !cgo

package gomlxtrain

import (
	"fmt"

	"github.com/gomlx/gomlx/backends"
	"github.com/t2t-lab/t2t/learner"
)

// xlaAvailable reports whether this build can create XLA backends.
const xlaAvailable = false

// newXLABackend always fails: the XLA backend needs cgo.
func newXLABackend(plugin string) (backends.Backend, error) {
	return nil, fmt.Errorf("learner: XLA plugin %q: %w", plugin, learner.ErrNoXLA)
}
