package actors

import (
	"bytes"
	"errors"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func wireRegistry(t testing.TB) *Registry {
	t.Helper()
	r := NewRegistry()
	if err := RegisterMessages(r); err != nil {
		t.Fatal(err)
	}
	return r
}

func wireGroups() []Group {
	return []Group{
		{InstanceID: "inst-a", Seed: 1<<63 + 5, PolicyVersion: 7, ConfigVersion: "cfg-3", Samples: []Sample{
			{Tokens: []int32{1, -2, 1 << 30}, LogProbs: []float32{-0.5, -1.25, -3e-8}, Reward: 0.75, Valid: true, Optimal: true},
			{Tokens: []int32{0}, LogProbs: []float32{-9}, Reward: -1},
		}},
		{InstanceID: "inst-b", Seed: 2, PolicyVersion: 6, ConfigVersion: "cfg-3", Samples: []Sample{
			{Tokens: []int32{4, 4}, LogProbs: []float32{-0.1, -0.2}, Reward: 1, Valid: true},
		}},
	}
}

// wireSamples returns one fully populated value of every registered message.
func wireSamples() []any {
	cfg := ConfigUpdate{Version: "cfg-3", Stage: 3, JSON: []byte(`{"agents":[2,4]}`)}
	return []any{
		&StartRun{RunID: "r1", Stages: 4, Units: 12, InstancesPerUnit: 8, Split: "train", Seed: 99, Config: cfg, FirstStage: 2, Epochs: 2},
		&WorkUnit{UnitID: "r1/s3/u7", RunID: "r1", Stage: 3, Split: "val", ConfigVersion: "cfg-3",
			ConfigJSON: []byte(`{"x":1}`), Seed: 1<<64 - 1, Lo: 56, Hi: 64, Attempt: 2,
			LeaseDeadlineUnixMs: 1_700_000_000_123, TraceHeaders: map[string]string{"traceparent": "00-abc-def-01"}, PolicyVersion: 17},
		&RequestWork{Node: "n1", Credits: 4},
		&UnitDone{UnitID: "r1/s3/u7", Node: "n1", Result: []byte{0, 1, 2, 255}, Groups: wireGroups(),
			Stats: UnitStats{Instances: 8, Samples: 16, Valid: 9, Optimal: 3, RewardSum: 4.5, Millis: 1234}, GroupCount: 8},
		&UnitGroups{UnitID: "r1/s3/u7", Node: "n1", Stage: 3, Groups: wireGroups()},
		&UnitRejected{UnitID: "r1/s3/u7", Node: "n1", Reason: "config", NeedConfig: true},
		&cfg,
		&ConfigAck{Node: "n1", Version: "cfg-3"},
		&PolicyVersion{Version: -3},
		&PolicyAck{Node: "n1", Version: 1 << 40},
		&SubscribePolicy{Node: "n2"},
		&StageStart{RunID: "r1", Stage: 3, ConfigVersion: "cfg-3", Units: 12},
		&StageDone{RunID: "r1", Stage: 3, ConfigVersion: "cfg-3", Units: 12, Completed: 12, Issued: 15,
			Reissued: 3, Duplicates: 1, Rejected: 1, Last: true, LearnerWaitMs: 2500},
		&ProposalFailed{RunID: "r1", Stage: 4, Error: "llm timeout"},
		&RunDone{RunID: "r1", Stages: 4, Error: "boom"},
		&NodeLeft{Node: "n3"},
		&Tick{},
		&Shutdown{Reason: "done"},
	}
}

func TestWireRoundTripEveryMessage(t *testing.T) {
	reg := wireRegistry(t)
	s := NewSerializer(reg)
	seen := map[string]bool{}
	for _, m := range wireSamples() {
		name, err := s.GetTypeName(m)
		if err != nil {
			t.Fatalf("%T: %v", m, err)
		}
		seen[name] = true
		b, err := s.Serialize(m)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got, err := s.Deserialize(name, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, m) {
			t.Errorf("%s: round trip\n got %#v\nwant %#v", name, got, m)
		}
		// A value (not pointer) serializes the same.
		bv, err := s.Serialize(reflect.ValueOf(m).Elem().Interface())
		if err != nil || string(bv) != string(b) {
			t.Errorf("%s: value and pointer encodings differ (%v)", name, err)
		}
	}
	names := reg.Names()
	for _, n := range names {
		if !seen[n] {
			t.Errorf("registered message %s has no round-trip sample", n)
		}
	}
	if st := s.Stats(); st.Decoded != uint64(len(names)) || st.Unknown+st.Corrupt+st.Version+st.EncodeErrors != 0 {
		t.Errorf("stats %+v, want %d decoded and no errors", st, len(names))
	}
}

func TestWireZeroValuesRoundTrip(t *testing.T) {
	s := NewSerializer(wireRegistry(t))
	for _, m := range wireSamples() {
		zero := reflect.New(reflect.TypeOf(m).Elem()).Interface()
		name, _ := s.GetTypeName(zero)
		b, err := s.Serialize(zero)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.Deserialize(name, b)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, zero) {
			t.Errorf("%s: zero value round trip got %#v", name, got)
		}
	}
}

func TestWireRejects(t *testing.T) {
	s := NewSerializer(wireRegistry(t))
	good, err := s.Serialize(&WorkUnit{UnitID: "u", Lo: 1, Hi: 2, TraceHeaders: map[string]string{"a": "b"}})
	if err != nil {
		t.Fatal(err)
	}
	badVersion := append([]byte{}, good...)
	badVersion[1] = WireVersion + 1
	badMagic := append([]byte{}, good...)
	badMagic[0] = 0
	wrongShape, _ := s.Serialize(&PolicyVersion{Version: 3}) // an int where WorkUnit wants a map is fine; use a string
	_ = wrongShape
	strPayload := append([]byte{wireMagic, WireVersion}, 0xa3, 'a', 'b', 'c') // msgpack "abc"

	cases := []struct {
		name, typ string
		b         []byte
		want      error
	}{
		{"unknown type", "t2t.Nope", good, ErrUnknownType},
		{"empty", "t2t.WorkUnit", nil, ErrCorrupt},
		{"header only", "t2t.WorkUnit", good[:1], ErrCorrupt},
		{"bad magic", "t2t.WorkUnit", badMagic, ErrCorrupt},
		{"bad version", "t2t.WorkUnit", badVersion, ErrVersion},
		{"truncated", "t2t.WorkUnit", good[:len(good)-3], ErrCorrupt},
		{"trailing bytes", "t2t.WorkUnit", append(append([]byte{}, good...), 0xc0), ErrCorrupt},
		{"not a map", "t2t.WorkUnit", strPayload, ErrCorrupt},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			v, err := s.Deserialize(c.typ, c.b)
			if !errors.Is(err, c.want) || v != nil {
				t.Fatalf("got %v, %v; want %v", v, err, c.want)
			}
			var we *WireError
			if !errors.As(err, &we) || we.TypeName != c.typ {
				t.Fatalf("error %v is not a *WireError for %q", err, c.typ)
			}
		})
	}
	st := s.Stats()
	if st.Unknown != 1 || st.Version != 1 || st.Corrupt != uint64(len(cases)-2) {
		t.Errorf("stats %+v: want 1 unknown, 1 version, %d corrupt", st, len(cases)-2)
	}

	type notRegistered struct{ A int }
	for _, m := range []any{notRegistered{}, (*WorkUnit)(nil), nil, 3} {
		if _, err := s.Serialize(m); !errors.Is(err, ErrUnknownType) {
			t.Errorf("Serialize(%#v) = %v, want ErrUnknownType", m, err)
		}
	}
	if got := s.Stats().EncodeErrors; got != 4 {
		t.Errorf("EncodeErrors = %d, want 4", got)
	}
}

func TestRegistryRejectsBadRegistrations(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("a", WorkUnit{}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		proto any
	}{
		{"", Tick{}},
		{"a", Tick{}},            // name taken
		{"b", &WorkUnit{}},       // type taken (pointer form)
		{"c", 5},                 // not a struct
		{"d", nil},               // nil
		{"e", []WorkUnit{}},      // not a struct
		{"f", (*StageDone)(nil)}, // typed nil pointer to a struct is fine
	} {
		err := r.Register(c.name, c.proto)
		if c.name == "f" {
			if err != nil {
				t.Errorf("Register(f, (*StageDone)(nil)) = %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrRegistry) {
			t.Errorf("Register(%q, %T) = %v, want ErrRegistry", c.name, c.proto, err)
		}
	}
	names := r.Names()
	if !sort.StringsAreSorted(names) || len(names) != 2 {
		t.Errorf("Names() = %v", names)
	}
	if v, ok := r.New("f"); !ok || reflect.TypeOf(v) != reflect.TypeOf(&StageDone{}) {
		t.Errorf("New(f) = %T, %v", v, ok)
	}
	// The serializer is a snapshot: later registrations do not reach it.
	s := NewSerializer(r)
	if err := r.Register("g", Tick{}); err != nil {
		t.Fatal(err)
	}
	if s.Knows(&Tick{}) {
		t.Error("serializer saw a registration made after it was built")
	}
}

func FuzzDeserialize(f *testing.F) {
	s := NewSerializer(wireRegistry(f))
	names := NewRegistry()
	_ = RegisterMessages(names)
	all := names.Names()
	for _, m := range wireSamples() {
		b, err := s.Serialize(m)
		if err != nil {
			f.Fatal(err)
		}
		name, _ := s.GetTypeName(m)
		f.Add(name, b)
		f.Add(name, b[:len(b)/2])
	}
	f.Add("t2t.WorkUnit", []byte{wireMagic, WireVersion, 0xdf, 0xff, 0xff, 0xff, 0xff}) // map claiming 4G entries
	f.Add("t2t.UnitGroups", []byte{wireMagic, WireVersion, 0x81, 0xa6, 'g', 'r', 'o', 'u', 'p', 's', 0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		// Try the fuzzed name and, so that the decoder itself is
		// exercised, every registered name.
		for _, n := range append([]string{name}, all...) {
			v, err := s.Deserialize(n, b)
			if err == nil {
				// Whatever decodes must re-encode.
				if _, err := s.Serialize(v); err != nil {
					t.Fatalf("%s decoded but does not re-encode: %v", n, err)
				}
			} else if !IsWireError(err) {
				t.Fatalf("%s: untyped error %v", n, err)
			}
		}
	})
}

// FuzzCheckMsgpack checks the pre-decode walker against msgpack's own Skip:
// whatever the walker accepts, the decoder can skip exactly; whatever the
// decoder skips exactly (within the depth bound), the walker accepts.
func FuzzCheckMsgpack(f *testing.F) {
	s := NewSerializer(wireRegistry(f))
	for _, m := range wireSamples() {
		b, _ := s.Serialize(m)
		f.Add(b[wireHeader:])
	}
	f.Add([]byte{0xdd, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte{0x91, 0x91, 0x91, 0xc0})
	f.Add([]byte{0xc7, 0x02, 0x05, 0xaa, 0xbb})
	f.Fuzz(func(t *testing.T, b []byte) {
		werr := checkMsgpack(b)
		r := bytes.NewReader(b)
		dec := msgpack.NewDecoder(r)
		derr := dec.Skip()
		if derr == nil && r.Len() != 0 {
			derr = errors.New("trailing bytes")
		}
		if werr == nil && derr != nil {
			t.Fatalf("walker accepts % x, decoder: %v", b, derr)
		}
		if werr != nil && derr == nil && !strings.Contains(werr.Error(), "nesting") {
			t.Fatalf("walker rejects % x (%v), decoder skips it", b, werr)
		}
	})
}

func TestWireSamplePacking(t *testing.T) {
	s := NewSerializer(wireRegistry(t))
	in := &UnitGroups{UnitID: "u", Groups: []Group{{Samples: []Sample{
		{Tokens: []int32{}, LogProbs: nil, Reward: -0.25},
		{Tokens: []int32{-1 << 31, 1<<31 - 1, 0}, LogProbs: []float32{float32(math.Inf(-1)), math.SmallestNonzeroFloat32, 0}},
	}}}}
	b, err := s.Serialize(in)
	if err != nil {
		t.Fatal(err)
	}
	out, err := s.Deserialize("t2t.UnitGroups", b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(out, in) {
		t.Fatalf("got %#v\nwant %#v", out, in)
	}
	// 4 bytes per token: the packed form is much smaller than 5-byte ints.
	big := &UnitGroups{Groups: []Group{{Samples: []Sample{{Tokens: make([]int32, 1000), LogProbs: make([]float32, 1000)}}}}}
	for i := range 1000 {
		big.Groups[0].Samples[0].Tokens[i] = 1 << 20
	}
	if b, _ := s.Serialize(big); len(b) > 8300 { // arrays would take ~10000
		t.Errorf("1000 tokens + 1000 logprobs take %d bytes", len(b))
	}

	// A sample map written by a newer node, with a key this one does not
	// know and a packed length that is not a multiple of 4.
	enc := func(extra string, tokens []byte) []byte {
		var buf bytes.Buffer
		buf.Write([]byte{wireMagic, WireVersion})
		e := msgpack.NewEncoder(&buf)
		e.EncodeMapLen(1)
		e.EncodeString("groups")
		e.EncodeArrayLen(1)
		e.EncodeMapLen(1)
		e.EncodeString("samples")
		e.EncodeArrayLen(1)
		e.EncodeMapLen(2)
		e.EncodeString(extra)
		e.EncodeInt(7)
		e.EncodeString("tokens")
		e.EncodeBytes(tokens)
		return buf.Bytes()
	}
	v, err := s.Deserialize("t2t.UnitGroups", enc("future_field", []byte{1, 0, 0, 0}))
	if err != nil || v.(*UnitGroups).Groups[0].Samples[0].Tokens[0] != 1 {
		t.Fatalf("unknown key: %v %#v", err, v)
	}
	if _, err := s.Deserialize("t2t.UnitGroups", enc("x", []byte{1, 0, 0})); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("3-byte packed tokens: %v", err)
	}
}
