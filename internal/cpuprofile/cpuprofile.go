// Package cpuprofile writes a Go CPU profile of a long command.
package cpuprofile

import (
	"os"
	"runtime/pprof"
)

// Start profiles the CPU into the file path (created; "" profiles nothing).
// stop ends the profile and closes the file; it is never nil.
func Start(path string) (stop func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}, nil
}
