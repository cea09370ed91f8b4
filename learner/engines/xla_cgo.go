//go:build cgo

package engines

// xlaBuilt: this binary can load an XLA PJRT plugin.
const xlaBuilt = true
