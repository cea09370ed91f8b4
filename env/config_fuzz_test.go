package env

import (
	"encoding/json"
	"testing"
)

// FuzzParseConfig: ParseConfig never panics; whatever it accepts validates,
// and survives a JSON round trip with the same hash.
func FuzzParseConfig(f *testing.F) {
	for _, c := range []Config{DefaultConfig(), DefaultLocalConfig(), cfgOdd()} {
		b, err := json.Marshal(c)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `{"sizes":[]}`,
		`{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0.2,"wait_ratio":0.3}],"agents":2,"instances":10}`,
		`{"sizes":[{"size":3,"data_ratio":1,"hole_ratio":0.2,"wait_ratio":0.3}],"agents":2,"instances":10} {}`,
		`{"sizes":[{"size":3,"data_ratio":1e400}],"agents":2}`,
		`{"sizes":[{"size":3,"data_ratio":-0,"hole_ratio":-0.0,"wait_ratio":0}],"agents":1,"instances":0}`,
		// Sums to 1 - 7e-7: valid, so Project may only nudge the ratios.
		`{"sizes":[{"size":2,"data_ratio":0,"hole_ratio":0,"wait_ratio":0},{"size":7,"data_ratio":0.33333300000001,"hole_ratio":0,"wait_ratio":0},{"size":10,"data_ratio":0.666666,"hole_ratio":0,"wait_ratio":0}],"agents":1,"instances":0}`,
		`{"SIZES":[{"Size":3,"DATA_RATIO":1,"hole_ratio":0,"wait_ratio":0}],"Agents":1,"instances":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		if err := c.Validate(); err != nil {
			t.Fatalf("ParseConfig accepted an invalid config: %v", err)
		}
		b, err := json.Marshal(c)
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		c2, err := ParseConfig(b)
		if err != nil {
			t.Fatalf("re-decode of %s: %v", b, err)
		}
		if c.Hash() != c2.Hash() {
			t.Fatalf("round trip changed the hash:\n%s", c2.Diff(c))
		}
		// A valid config's data ratios sum to 1 within DataRatioTolerance, so
		// renormalising moves each by at most about that much.
		if p := c.Project(); !cfgNear(p, c, 2*DataRatioTolerance) {
			t.Fatalf("Project moved a valid config:\n%s", p.Diff(c))
		}
	})
}
