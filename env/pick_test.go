package env

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// TestPickFrom: by line it stops reading at the line asked (a broken line
// after it is never read); by id it reports each bad line and goes on.
func TestPickFrom(t *testing.T) {
	file := solvableLine + "\n{\"width\":\n" + unsolvableLine + "\n[1,2\n"
	for _, line := range []int{0, 1} {
		in, err := PickFrom(strings.NewReader(file), ReadOptions{}, "", line, func(Record) { t.Fatal("skipped called by line") })
		if err != nil || in == nil || in.Width != 3 {
			t.Fatalf("line %d: %+v, %v", line, in, err)
		}
	}
	var le *LineError
	if _, err := PickFrom(strings.NewReader(file), ReadOptions{}, "", 2, nil); !errors.As(err, &le) || le.Line != 2 {
		t.Fatalf("broken line 2: %v", err)
	}
	var skipped []int
	in, err := PickFrom(strings.NewReader(file), ReadOptions{}, "walled", 0, func(r Record) { skipped = append(skipped, r.Line) })
	if err != nil || in.ID != "walled" || fmt.Sprint(skipped) != "[2 4]" {
		t.Fatalf("by id: %+v, %v, skipped lines %v", in, err, skipped)
	}
}

// TestFileError: a line error names the file and its line, another error
// the file; nil stays nil.
func TestFileError(t *testing.T) {
	if FileError("f.jsonl", nil) != nil {
		t.Fatal("nil is not nil")
	}
	var fe *fielderr.Error
	if err := FileError("f.jsonl", fmt.Errorf("x: %w", &LineError{Line: 3, Err: errors.New("bad")})); !errors.As(err, &fe) || fe.Usage() != "f.jsonl:3: bad" {
		t.Fatalf("line error: %v", err)
	}
	if err := FileError("f.jsonl", errors.New("no instances")); !errors.As(err, &fe) || fe.Usage() != "f.jsonl: no instances" {
		t.Fatalf("file error: %v", err)
	}
}
