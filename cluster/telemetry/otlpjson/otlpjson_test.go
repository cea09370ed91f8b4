package otlpjson

import (
	"encoding/json"
	"math"
	"testing"
)

func TestScalarsMarshal(t *testing.T) {
	t.Parallel()
	cases := []struct {
		v    any
		want string
	}{
		{Uint64(1700000000000000001), `"1700000000000000001"`},
		{Int64(-5), `"-5"`},
		{Double(0.25), `0.25`},
		{Double(1e21), `1e+21`},
		{Double(math.NaN()), `"NaN"`},
		{Double(math.Inf(1)), `"Infinity"`},
		{Double(math.Inf(-1)), `"-Infinity"`},
		{SpanKindConsumer, `5`},
		{StatusError, `2`},
		{Status{}, `{}`},
		{Array(Int(1), String("a")), `{"arrayValue":{"values":[{"intValue":"1"},{"stringValue":"a"}]}}`},
		{Bool(false), `{"boolValue":false}`},
		{Float(0), `{"doubleValue":0}`},
	}
	for _, c := range cases {
		b, err := json.Marshal(c.v)
		if err != nil || string(b) != c.want {
			t.Errorf("Marshal(%#v) = %s, %v; want %s", c.v, b, err, c.want)
		}
	}
}

func TestScalarsUnmarshal(t *testing.T) {
	t.Parallel()
	var s struct {
		U Uint64     `json:"u"`
		I Int64      `json:"i"`
		D Double     `json:"d"`
		K SpanKind   `json:"k"`
		C StatusCode `json:"c"`
	}
	good := []struct {
		in   string
		want func() bool
	}{
		{`{"u":"12","i":"-3","d":"1.5","k":"SPAN_KIND_CLIENT","c":"STATUS_CODE_OK"}`,
			func() bool { return s.U == 12 && s.I == -3 && s.D == 1.5 && s.K == SpanKindClient && s.C == StatusOk }},
		{`{"u":13,"i":4,"d":2,"k":4,"c":2}`,
			func() bool { return s.U == 13 && s.I == 4 && s.D == 2 && s.K == SpanKindProducer && s.C == StatusError }},
		{`{"d":"Infinity"}`, func() bool { return math.IsInf(float64(s.D), 1) }},
		{`{"d":"-Infinity"}`, func() bool { return math.IsInf(float64(s.D), -1) }},
		{`{"d":"NaN"}`, func() bool { return math.IsNaN(float64(s.D)) }},
		{`{"u":null,"k":"3"}`, func() bool { return s.U == 0 && s.K == SpanKindClient }},
	}
	for _, c := range good {
		s.U, s.I, s.D, s.K, s.C = 0, 0, 0, 0, 0
		if err := json.Unmarshal([]byte(c.in), &s); err != nil || !c.want() {
			t.Errorf("Unmarshal(%s) = %+v, %v", c.in, s, err)
		}
	}
	for _, bad := range []string{`{"u":"-1"}`, `{"u":true}`, `{"i":"1.5"}`, `{"i":"9223372036854775808"}`,
		`{"d":"inf"}`, `{"d":"1e999"}`, `{"k":"SPAN_KIND_SIDEWAYS"}`, `{"c":[]}`} {
		if err := json.Unmarshal([]byte(bad), &s); err == nil {
			t.Errorf("Unmarshal(%s) accepted: %+v", bad, s)
		}
	}
}

func TestEnumStrings(t *testing.T) {
	t.Parallel()
	if SpanKindServer.String() != "server" || SpanKind(9).String() != "unspecified" ||
		StatusOk.String() != "ok" || StatusCode(-1).String() != "unset" {
		t.Error("enum text")
	}
}
