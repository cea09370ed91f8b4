package hfmodel

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// FuzzParseConfig: a checkpoint's config.json never panics ParseConfig; a
// refusal wraps learner.ErrInvalidConfig; what it accepts validates, has
// a parameter count that did not overflow, and reads back the same from
// the config.json a saved checkpoint would carry.
func FuzzParseConfig(f *testing.F) {
	for _, name := range []string{PresetTiny, Preset06BShape, Preset4BShape} {
		c, err := Preset(name)
		if err != nil {
			f.Fatal(err)
		}
		js, err := c.configJSON(c.TorchDType)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(js)
	}
	for _, s := range []string{
		`{}`, `null`, `[]`, `{"hidden_size":64}`,
		`{"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":512,"rope_parameters":{"rope_theta":1e6},"rms_norm_eps":1e-6,"max_position_embeddings":64,"dtype":"bfloat16","layer_types":["full_attention","full_attention"]}`,
		`{"hidden_size":1099511627776,"num_hidden_layers":1099511627776,"num_attention_heads":1,"intermediate_size":1099511627776,"vocab_size":2147483647,"rope_theta":1e6,"rms_norm_eps":1e-6,"max_position_embeddings":1099511627776}`,
		`{"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":512,"rope_theta":1e6,"rms_norm_eps":1e-6,"max_position_embeddings":64,"rope_scaling":{"type":"yarn"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, js []byte) {
		c, err := ParseConfig(js)
		if err != nil {
			var ce *fielderr.Error
			if !errors.Is(err, learner.ErrInvalidConfig) && !errors.As(err, &ce) {
				t.Fatalf("error %v wraps neither ErrInvalidConfig nor *fielderr.Error", err)
			}
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("accepted an invalid config: %v", err)
		}
		if n := c.NumParams(); n < 1 {
			t.Fatalf("parameter count %d", n)
		}
		out, err := c.configJSON(c.TorchDType)
		if err != nil {
			t.Fatalf("configJSON: %v", err)
		}
		back, err := ParseConfig(out)
		if err != nil {
			t.Fatalf("re-read of %s: %v", out, err)
		}
		back.raw, c.raw = nil, nil
		a, _ := json.Marshal(c)
		b, _ := json.Marshal(back)
		if string(a) != string(b) {
			t.Fatalf("round trip changed the config:\n%s\n%s", a, b)
		}
	})
}
