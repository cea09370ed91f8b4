package bench

import (
	"errors"
	"fmt"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestClusterParseLists: t2t bench cluster's --rollouts and --profiles
// parse into the options; a count that is not an integer is a field error
// about --rollouts.
func TestClusterParseLists(t *testing.T) {
	o := DefaultClusterOptions()
	if err := o.ParseLists("1, 8,64", "gridnet, qwen3 "); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(o.Rollouts) != "[1 8 64]" || fmt.Sprint(o.Profiles) != "[gridnet qwen3]" {
		t.Fatalf("rollouts %v, profiles %q", o.Rollouts, o.Profiles)
	}
	if err := o.ParseLists("2", ""); err != nil || len(o.Profiles) != 0 || fmt.Sprint(o.Rollouts) != "[2]" {
		t.Fatalf("%v: rollouts %v, profiles %q", err, o.Rollouts, o.Profiles)
	}
	var fe *fielderr.Error
	if err := o.ParseLists("1,x", ""); !errors.As(err, &fe) || fe.Usage() != `--rollouts "x": want integers in [1,4096]` {
		t.Fatalf("bad count: %v", err)
	}
}
