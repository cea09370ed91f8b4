package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// Instance lines for the file tests: solvable, and unsolvable (the goal
// [0,2] is walled in by holes) although every field is valid.
const (
	solvableLine   = `{"width":3,"height":3,"grid":["...","...","..."],"agents":[{"start":[0,0],"goal":[2,2]}]}`
	unsolvableLine = `{"id":"walled","width":3,"height":3,"grid":[".H.","..H","..."],"agents":[{"start":[0,0],"goal":[0,2]}]}`
)

// TestSolveRecordsKeepsGoingPastAFailure: an unsolvable line and a
// malformed one among solvable lines give one output line per instance
// line, in order, the failed ones an ErrorLine naming their file line, and
// a *BatchError counting them.
func TestSolveRecordsKeepsGoingPastAFailure(t *testing.T) {
	t.Parallel()
	file := "\n" + solvableLine + "\n\n" + unsolvableLine + "\n" + `{"width":` + "\n" + solvableLine + "\n"
	recs, err := ReadRecords(strings.NewReader(file), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 4 || recs[0].Line != 2 || recs[1].Line != 4 || recs[2].Line != 5 || recs[3].Line != 6 {
		t.Fatalf("records %+v: want lines 2, 4, 5, 6", recs)
	}
	err = SolveRecords(recs, SolveOptions{}, 2, nil)
	var be *BatchError
	if !errors.As(err, &be) || be.Failed != 2 || be.Total != 4 {
		t.Fatalf("error %v, want a *BatchError with 2 of 4 failed", err)
	}
	if !errors.Is(recs[1].Err, ErrUnsolvable) {
		t.Fatalf("line 4: %v, want ErrUnsolvable", recs[1].Err)
	}
	out, err := EncodeRecords(recs)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d output lines, want 4:\n%s", len(lines), out)
	}
	for _, i := range []int{0, 3} {
		var in Instance
		if err := json.Unmarshal([]byte(lines[i]), &in); err != nil || in.SOC != 4 || len(in.Paths) != 1 {
			t.Errorf("output line %d: %v, soc %d: want a solved instance", i+1, err, in.SOC)
		}
	}
	var e4, e5 ErrorLine
	json.Unmarshal([]byte(lines[1]), &e4)
	json.Unmarshal([]byte(lines[2]), &e5)
	if e4.Line != 4 || e4.ID != "walled" || e4.Hash != recs[1].Instance.ComputeID() || !strings.HasPrefix(e4.Error, "line 4: instance walled: ") {
		t.Errorf("unsolvable line gave %+v", e4)
	}
	if e5.Line != 5 || e5.ID != "" || !strings.HasPrefix(e5.Error, "line 5: ") {
		t.Errorf("malformed line gave %+v", e5)
	}
	if !strings.Contains(be.Error(), "2 of 4") || !strings.Contains(be.Error(), "line 4: instance walled") {
		t.Errorf("batch error %q", be)
	}
}

// TestUserIDIsKeptAndHashed: a user's own id is kept and its content hash
// written beside it; StrictIDs refuses it; a forged hash, an overlong id
// or one with a control character is refused.
func TestUserIDIsKeptAndHashed(t *testing.T) {
	t.Parallel()
	named := strings.Replace(solvableLine, `{`, `{"id":"room-12-a",`, 1)
	var in Instance
	if err := json.Unmarshal([]byte(named), &in); err != nil {
		t.Fatal(err)
	}
	hash := in.ComputeID()
	if in.ID != "room-12-a" || hash == in.ID {
		t.Fatalf("id %q (hash %s): want the user's id kept", in.ID, hash)
	}
	b, err := json.Marshal(&in)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte(`"id":"room-12-a","hash":"`+hash+`"`)) {
		t.Fatalf("written %s: want the id and its hash", b)
	}
	var back Instance
	if err := json.Unmarshal(b, &back); err != nil || back.ID != in.ID {
		t.Fatalf("read back: %v, id %q", err, back.ID)
	}
	// An instance named by its hash writes no "hash" field: files of
	// generated instances are unchanged.
	in.ID = hash
	if b, _ := json.Marshal(&in); bytes.Contains(b, []byte(`"hash"`)) {
		t.Fatalf("hash-named instance written as %s", b)
	}
	recs, err := ReadRecords(strings.NewReader(named+"\n"+solvableLine+"\n"), ReadOptions{StrictIDs: true})
	var fe *FieldError
	if err != nil || !errors.As(recs[0].Err, &fe) || fe.Field != "id" || !strings.Contains(recs[0].Err.Error(), hash) || recs[1].Err != nil {
		t.Fatalf("strict ids: %v, records %+v: want line 1 refused naming the hash, line 2 read", err, recs)
	}
	for _, tc := range []struct{ name, line, field string }{
		{"forged hash", strings.Replace(named, `{`, `{"hash":"0123456789abcdef",`, 1), "hash"},
		{"long id", strings.Replace(solvableLine, `{`, `{"id":"`+strings.Repeat("x", MaxIDLen+1)+`",`, 1), "id"},
		{"control character", strings.Replace(solvableLine, `{`, `{"id":"a\nb",`, 1), "id"},
	} {
		err := json.Unmarshal([]byte(tc.line), new(Instance))
		if !errors.As(err, &fe) || fe.Field != tc.field {
			t.Errorf("%s: %v, want a FieldError on %q", tc.name, err, tc.field)
		}
	}
}

// TestRecordsNameFileLines: with blank lines in the file, errors and Pick
// use file lines, not instance counts.
func TestRecordsNameFileLines(t *testing.T) {
	t.Parallel()
	named := strings.Replace(solvableLine, `{`, `{"id":"a",`, 1)
	file := "\n\n" + named + "\n\n" + unsolvableLine + "\n" + `{"width":"x"}` + "\n"
	recs, err := ReadRecords(strings.NewReader(file), ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = Instances(recs)
	var le *LineError
	if !errors.As(err, &le) || le.Line != 6 || !strings.HasPrefix(err.Error(), `6: field "width"`) {
		t.Fatalf("bad line: %v, want line 6 naming width", err)
	}
	if _, err := ReadInstances(strings.NewReader(file)); !errors.As(err, &le) || le.Line != 6 {
		t.Fatalf("ReadInstances: %v, want line 6", err)
	}
	for _, tc := range []struct {
		id      string
		line    int
		wantID  string
		wantErr string
	}{
		{"", 0, "a", ""}, {"", 3, "a", ""}, {"", 5, "walled", ""}, {"a", 0, "a", ""},
		{"", 4, "", "4: no instance on this line (instances are on lines 3..6"},
		{"", 6, "", `6: field "width"`}, {"nope", 0, "", `no instance with id "nope"`}, {"", -1, "", "line -1: want a file line"},
	} {
		in, err := Pick(recs, tc.id, tc.line)
		switch {
		case tc.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tc.wantErr)):
			t.Errorf("Pick(%q, %d): %v, want %q", tc.id, tc.line, err, tc.wantErr)
		case tc.wantErr == "" && (err != nil || in.ID != tc.wantID):
			t.Errorf("Pick(%q, %d): %v, want id %q", tc.id, tc.line, err, tc.wantID)
		}
	}
	// By content hash, and an id on two lines is ambiguous.
	in, _ := Pick(recs, "a", 0)
	if got, err := Pick(recs, in.ComputeID(), 0); err != nil || got != in {
		t.Errorf("Pick by hash: %v", err)
	}
	twice, _ := ReadRecords(strings.NewReader(named+"\n"+strings.Replace(unsolvableLine, `"walled"`, `"a"`, 1)+"\n"), ReadOptions{})
	if _, err := Pick(twice, "a", 0); err == nil || !strings.Contains(err.Error(), "lines 1 and 2") {
		t.Errorf("ambiguous id: %v", err)
	}
}
