package daemon

import (
	"context"
	"flag"
	"io"
	"log/slog"
	"testing"

	"github.com/t2t-lab/t2t/train"
)

// TestFlagsRunSetup: the run id defaults to run-<seed> and a flag's is
// kept; Build builds the flags' policy and options.
func TestFlagsRunSetup(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "scripted", "--seed", "5"}, "run-5"},
		{[]string{"--policy", "scripted", "--run-id", "mine"}, "mine"},
	} {
		var tf train.Flags
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		tf.Register(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		run := FlagsRunSetup(context.Background(), &tf)
		if run.RunID != tc.want {
			t.Fatalf("%v: run id %q, want %q", tc.args, run.RunID, tc.want)
		}
		tr, err := run.Build(slog.New(slog.DiscardHandler), io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		if tr.Policy == nil || tr.Options.Seed != tf.Opt.Seed {
			t.Fatalf("%v: training %+v", tc.args, tr)
		}
		if tr.Close != nil {
			if err := tr.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}
