package env

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// FuzzReadRecords: the instance-file reader never panics nor fails on
// lines it can hold; each record is an instance or a *LineError on its own
// line; what it accepts validates, follows the id rules, and survives a
// JSON round trip unchanged.
func FuzzReadRecords(f *testing.F) {
	cfg := DefaultLocalConfig()
	cfg.Instances = 2
	ins, err := GenerateAll(cfg, 4, 1, nil)
	if err != nil {
		f.Fatal(err)
	}
	if err := SolveRecords([]Record{{Line: 1, Instance: ins[0]}}, SolveOptions{}, 1, nil); err != nil {
		f.Fatal(err)
	}
	gen, err := EncodeJSONL(ins)
	if err != nil {
		f.Fatal(err)
	}
	named := strings.Replace(solvableLine, `{`, `{"id":"room-1",`, 1)
	for _, s := range []string{
		string(gen), "\n\n" + string(gen), solvableLine, named, unsolvableLine + "\n" + named,
		strings.Replace(named, `{`, `{"hash":"27f3bbe6b5c08f59",`, 1), strings.Replace(named, `{`, `{"hash":"00",`, 1),
		`{"id":"a\u0007","width":2,"height":2,"grid":["..",".."],"agents":[{"start":[0,0],"goal":[1,1]}]}`,
		`{"width":2,"height":2,"grid":["..",".."],"agents":[{"start":[0,0],"goal":[1,1]}],"paths":[[[0,0],[0,1],[1,1]]],"soc":2}`,
		`{"width":2,"height":2,"grid":["..",".."],"agents":[{"start":[0,0],"goal":[1,1]}],"paths":[]}`,
		`{"width":"x"}`, `{"width":`, "null", "[]", `{"width":33,"height":33}`, "\x00\n\r\n \t\n{}",
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, data []byte, strict bool) {
		recs, err := ReadRecords(bytes.NewReader(data), ReadOptions{StrictIDs: strict})
		if err != nil {
			t.Fatalf("read error on %d bytes: %v", len(data), err)
		}
		last := 0
		for _, r := range recs {
			if r.Line <= last {
				t.Fatalf("line %d after line %d", r.Line, last)
			}
			last = r.Line
			var le *LineError
			if r.Err != nil {
				if r.Instance != nil || !errors.As(r.Err, &le) || le.Line != r.Line || r.Err.Error() == "" {
					t.Fatalf("line %d: bad record %+v", r.Line, r)
				}
				continue
			}
			checkReadInstance(t, r.Instance, strict)
			if got, err := Pick(recs, "", r.Line); err != nil || got != r.Instance {
				t.Fatalf("Pick line %d: %v", r.Line, err)
			}
		}
		out, err := EncodeRecords(recs)
		if err != nil || bytes.Count(out, []byte("\n")) != len(recs) {
			t.Fatalf("EncodeRecords: %v, %d lines for %d records", err, bytes.Count(out, []byte("\n")), len(recs))
		}
	})
}

// checkReadInstance holds an instance the reader accepted to its rules.
func checkReadInstance(t *testing.T, in *Instance, strict bool) {
	t.Helper()
	if err := in.Validate(); err != nil {
		t.Fatalf("accepted an invalid instance: %v", err)
	}
	hash := in.ComputeID()
	if in.ID == "" || len(in.ID) > MaxIDLen || (strict && in.ID != hash) {
		t.Fatalf("id %q (hash %s, strict %v)", in.ID, hash, strict)
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("re-encode: %v", err)
	}
	back := new(Instance)
	if err := json.Unmarshal(b, back); err != nil {
		t.Fatalf("re-decode of %s: %v", b, err)
	}
	if len(in.Paths) == 0 {
		in.Paths = nil // an empty "paths" is written as none
	}
	if !reflect.DeepEqual(back, in) {
		t.Fatalf("round trip changed the instance:\n%+v\n%+v", in, back)
	}
}
