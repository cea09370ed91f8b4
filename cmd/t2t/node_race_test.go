//go:build race

package main

// nodeRace: the tests run with the race detector; the node binary is built
// with it too.
const nodeRace = true
