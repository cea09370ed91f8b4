// Package buildinfo describes the running binary's build: the module
// version, the VCS commit and time (with -buildvcs), and the Go version
// and platform, as `t2t version` prints them. It reads runtime/debug's
// build information and has no state; it is safe for concurrent use.
package buildinfo

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// Write writes the module version, the VCS commit and time, and the Go
// version, three lines:
//
//	t2t VERSION
//	commit: COMMIT[ TIME][ (modified)]
//	go: GOVERSION GOOS/GOARCH
//
// "(unknown)" stands for what the build does not record.
func Write(w io.Writer) error {
	version, commit, when, modified := "(unknown)", "(unknown)", "", ""
	if bi, ok := debug.ReadBuildInfo(); ok {
		version = bi.Main.Version
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				commit = s.Value
			case "vcs.time":
				when = " " + s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = " (modified)"
				}
			}
		}
	}
	_, err := fmt.Fprintf(w, "t2t %s\ncommit: %s%s%s\ngo: %s %s/%s\n", version, commit, when, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
	return err
}
