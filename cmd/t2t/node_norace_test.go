//go:build !race

package main

// nodeRace: the tests run without the race detector.
const nodeRace = false
