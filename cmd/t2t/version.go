package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"time"

	"github.com/t2t-lab/t2t/learner/torch"
)

// runVersion prints the build (module version, commit, Go) and which
// engines and devices this binary can use here.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t version", "t2t version (or t2t --version)", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	writeBuild(stdout)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fmt.Fprintln(stdout, "engines:")
	fmt.Fprintln(stdout, "  gomlx   usable (pure Go, CPU)")
	if py, err := torch.FindPython(ctx, ""); err != nil {
		fmt.Fprintf(stdout, "  torch   not usable: %v\n", err)
	} else {
		fmt.Fprintf(stdout, "  torch   usable (%s)\n", py)
	}
	if xlaBuilt {
		fmt.Fprintln(stdout, "  xla     built in (cgo); needs a PJRT plugin (--device xla:PLUGIN)")
	} else {
		fmt.Fprintln(stdout, "  xla     not built in (this binary was built without cgo)")
	}
	fmt.Fprintf(stdout, "devices: cpu (%d cores)", runtime.NumCPU())
	if gpus, _ := filepath.Glob("/dev/nvidia[0-9]*"); len(gpus) > 0 {
		fmt.Fprintf(stdout, ", %d NVIDIA GPU device(s)", len(gpus))
	}
	fmt.Fprintln(stdout)
	return nil
}

// writeBuild writes the module version, the VCS commit and time, and the Go version.
func writeBuild(w io.Writer) {
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
	fmt.Fprintf(w, "t2t %s\ncommit: %s%s%s\ngo: %s %s/%s\n", version, commit, when, modified, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
