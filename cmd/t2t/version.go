package main

import (
	"context"
	"io"
	"time"

	"github.com/t2t-lab/t2t/internal/buildinfo"
	"github.com/t2t-lab/t2t/learner/engines"
)

// runVersion prints the build (module version, commit, Go) and which
// engines and devices this binary can use here.
func runVersion(args []string, stdout, stderr io.Writer) error {
	fs := newFlags("t2t version", "t2t version (or t2t --version)", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if err := buildinfo.Write(stdout); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return engines.WriteUsable(ctx, stdout)
}
