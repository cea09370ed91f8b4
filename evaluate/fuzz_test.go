package evaluate

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/report"
)

// FuzzReadSuite: a suite file and its manifest never panic the reader;
// what fails is a *fielderr.Error; what is read has one subset per instance.
// The manifest's "SHA" is replaced by the file's sha256, so that the
// fuzzer reaches the checks behind the checksum.
func FuzzReadSuite(f *testing.F) {
	spec := env.QuickSpec(3, 1)
	ins, err := env.GenerateSuite(&spec, 0, 3)
	if err != nil {
		f.Fatal(err)
	}
	spec.Groups = spec.Groups[:1]
	spec.Groups[0].Count = 3
	data, man, err := env.EncodeSuite(spec, ins)
	if err != nil {
		f.Fatal(err)
	}
	man.SHA256 = "SHA"
	mb, _ := json.Marshal(man)
	f.Add(data, mb)
	f.Add(data, []byte(nil))
	f.Add(data, bytes.Replace(mb, []byte(`"lo":0`), []byte(`"lo":1000`), 1))
	f.Add(data, bytes.Replace(mb, []byte(`"count":3`), []byte(`"count":-3`), 1))
	f.Add(append([]byte("\n\n"), data...), []byte(`{"sha256":"SHA","spec":{"groups":[{"count":1,"lo":0},{"count":2,"lo":1}]}}`))
	f.Add([]byte(`{"width":"x"}`), []byte(`{`))
	f.Fuzz(func(t *testing.T, data, man []byte) {
		sum := sha256.Sum256(data)
		man = bytes.ReplaceAll(man, []byte("SHA"), []byte(hex.EncodeToString(sum[:])))
		s, err := readSuite("s.jsonl", data, man, env.ReadOptions{})
		var ie *fielderr.Error
		if err != nil {
			if !errors.As(err, &ie) || ie.Line < 0 || err.Error() == "" {
				t.Fatalf("error %v, want a *fielderr.Error", err)
			}
			return
		}
		if len(s.Instances) != len(s.Subsets) || len(s.Instances) != len(s.lines) {
			t.Fatalf("%d instances, %d subsets, %d lines", len(s.Instances), len(s.Subsets), len(s.lines))
		}
		for i, in := range s.Instances {
			if in == nil || in.Validate() != nil || s.lines[i] < 1 {
				t.Fatalf("instance %d on line %d: %+v", i, s.lines[i], in)
			}
		}
	})
}

// FuzzReadCache: the answer cache's lines never panic the reader; a bad
// line is a *fielderr.Error naming it; the answers read are keyed by their
// instance and read back the same once written again.
func FuzzReadCache(f *testing.F) {
	f.Add([]byte(`{"policy":"p","instance_id":"a","agents":2,"size":3,"valid":true,"optimal":true}`+"\n"+
		`{"policy":"q","instance_id":"b","agents":2,"size":3,"valid":false,"optimal":false,"failed":["goal"]}`+"\n\n"+
		`{"policy":"p","instance_id":"c","agents":2,"size":4,"subset":0.25,"valid":false,"optimal":false,"failed":["hole"]}`+"\n"), "p")
	f.Add([]byte("{\"policy\":\"x\",\"instance_id\":\"a\"}\nnot json\n"), "x")
	f.Add([]byte("{\"policy\":\"x\"}\n"), "x")
	f.Add([]byte(`{"policy":"x","instance_id":"b","agents":"two"}`), "x")
	f.Fuzz(func(t *testing.T, data []byte, policy string) {
		got, err := parseCache("answers.jsonl", data, policy)
		var ie *fielderr.Error
		if err != nil {
			if !errors.As(err, &ie) || ie.Line < 1 {
				t.Fatalf("error %v, want a *fielderr.Error naming a line", err)
			}
			return
		}
		var buf bytes.Buffer
		enc := json.NewEncoder(&buf)
		for id, o := range got {
			if id == "" || o.InstanceID != id {
				t.Fatalf("answer %+v under key %q", o, id)
			}
			if err := enc.Encode(CacheLine{Policy: policy, Outcome: o}); err != nil {
				t.Fatal(err)
			}
		}
		back, err := parseCache("answers.jsonl", buf.Bytes(), policy)
		if err != nil || !reflect.DeepEqual(back, got) && !(len(back) == 0 && len(got) == 0) {
			t.Fatalf("written again: %v\n%+v\n%+v", err, got, back)
		}
		_ = report.Tally(policy, "s", values(got))
	})
}

func values(m map[string]report.Outcome) []report.Outcome {
	out := make([]report.Outcome, 0, len(m))
	for _, o := range m {
		out = append(out, o)
	}
	return out
}
