package fielderr_test

import (
	"errors"
	"fmt"
	"io/fs"
	"strconv"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

var errOptions = errors.New("pkg: invalid options")

// TestWording: Error and Usage of every shape the packages report, each
// part present only where its field is set.
func TestWording(t *testing.T) {
	t.Parallel()
	cause := errors.New("learner: bad device")
	for _, c := range []struct {
		name       string
		e          *fielderr.Error
		err, usage string
	}{
		{"flag and value", &fielderr.Error{Kind: errOptions, Flag: "stages", Value: -1, Reason: "must be in [1,1000]"},
			"pkg: invalid options: stages = -1: must be in [1,1000]", "--stages -1: must be in [1,1000]"},
		{"flag without value", &fielderr.Error{Kind: errOptions, Flag: "device", Err: cause},
			"pkg: invalid options: device: learner: bad device", "--device: learner: bad device"},
		{"quoted value", &fielderr.Error{Flag: "modules", Value: strconv.Quote(""), Reason: "empty"}, `modules = "": empty`, `--modules "": empty`},
		{"flag as written", &fielderr.Error{Flag: "$T2T_KEY", Reason: "not base64"}, "$T2T_KEY: not base64", "$T2T_KEY: not base64"},
		{"two flags", &fielderr.Error{Flag: "--a and --b", Reason: "give one"}, "--a and --b: give one", "--a and --b: give one"},
		{"field and flag", &fielderr.Error{Kind: errOptions, Field: "HTTPAddr", Flag: "http", Value: "h:x", Reason: "bad port"},
			"pkg: invalid options: HTTPAddr = h:x: bad port", "--http h:x: bad port"},
		{"field, no flag", &fielderr.Error{Kind: errOptions, Field: "GRPOConfig.ClipEps", Value: 2, Reason: "must be in (0, 1)"},
			"pkg: invalid options: GRPOConfig.ClipEps = 2: must be in (0, 1)", "pkg: invalid options: GRPOConfig.ClipEps = 2: must be in (0, 1)"},
		{"reason alone", &fielderr.Error{Kind: errOptions, Reason: "--resume needs --redis"}, "pkg: invalid options: --resume needs --redis", "--resume needs --redis"},
		{"file line", &fielderr.Error{File: "a.jsonl", Line: 3, Reason: "missing instance_id"}, "a.jsonl:3: missing instance_id", "a.jsonl:3: missing instance_id"},
		{"whole file", &fielderr.Error{File: "m.map", Err: fs.ErrNotExist}, "m.map: file does not exist", "m.map: file does not exist"},
		{"file and field", &fielderr.Error{File: "r.json", Line: 2, Field: "stages", Value: "x", Reason: "want a number"},
			"r.json:2: stages = x: want a number", "r.json:2: stages = x: want a number"},
	} {
		if got := c.e.Error(); got != c.err {
			t.Errorf("%s: Error %q, want %q", c.name, got, c.err)
		}
		if got := c.e.Usage(); got != c.usage {
			t.Errorf("%s: Usage %q, want %q", c.name, got, c.usage)
		}
	}
}

// TestWrapping: errors.As finds the error through wrapping, and errors.Is
// matches both its Kind and its cause.
func TestWrapping(t *testing.T) {
	t.Parallel()
	cause := &fs.PathError{Op: "open", Path: "/x", Err: fs.ErrNotExist}
	inner := &fielderr.Error{Kind: errOptions, Flag: "unit-log", Err: cause}
	err := fmt.Errorf("daemon: start: %w", inner)
	var fe *fielderr.Error
	if !errors.As(err, &fe) || fe != inner {
		t.Fatalf("errors.As(%v) = %v", err, fe)
	}
	if !errors.Is(err, errOptions) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("%v: does not match its kind and its cause", err)
	}
	var pe *fs.PathError
	if !errors.As(err, &pe) || pe != cause {
		t.Fatalf("the cause is not reachable: %v", pe)
	}
	// The outermost field error is found first: one package's error about
	// its option, caused by another's about a field.
	outer := &fielderr.Error{Flag: "model", Err: &fielderr.Error{Field: "hidden_size", Value: 0, Reason: "must be ≥ 1"}}
	if !errors.As(fmt.Errorf("x: %w", outer), &fe) || fe != outer || fe.Usage() != "--model: hidden_size = 0: must be ≥ 1" {
		t.Fatalf("outer: %v, usage %q", fe, fe.Usage())
	}
	if got := (&fielderr.Error{Reason: "r"}).Unwrap(); len(got) != 0 {
		t.Fatalf("Unwrap without kind or cause: %v", got)
	}
}

func TestFlagName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"batch": "--batch", "tls-*": "--tls-*", "--listen": "--listen", "$ENV": "$ENV", "4bit": "--4bit"} {
		if got := fielderr.FlagName(in); got != want {
			t.Errorf("FlagName(%q) = %q, want %q", in, got, want)
		}
	}
}

func ExampleError_Usage() {
	err := fmt.Errorf("train: %w", &fielderr.Error{Kind: errOptions, Flag: "stages", Value: 0, Reason: "must be in [1,1000]"})
	var fe *fielderr.Error
	if errors.As(err, &fe) {
		fmt.Println(fe.Usage())
		fmt.Println(fe)
	}
	// Output:
	// --stages 0: must be in [1,1000]
	// pkg: invalid options: stages = 0: must be in [1,1000]
}
