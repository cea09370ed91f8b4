//go:build !cgo

package main

// xlaBuilt: this binary can load an XLA PJRT plugin.
const xlaBuilt = false
