package serve

import (
	"encoding/json"
	"math"
	"testing"
)

// A log-prob that is not a finite number is written as OpenAI's -9999.0, so an answer or a
// stream never fails with "json: unsupported value: NaN".
func TestJSONLogprobIsAlwaysEncodable(t *testing.T) {
	for _, lp := range []float32{float32(math.NaN()), float32(math.Inf(-1)), float32(math.Inf(1)), -1.5} {
		b, err := json.Marshal(tokenLogprob{Logprob: jsonLogprob(lp), TopLogprobs: []topLogprob{{Logprob: jsonLogprob(lp)}}})
		if err != nil {
			t.Fatalf("%v: %v", lp, err)
		}
		if !json.Valid(b) {
			t.Fatalf("%v: %s", lp, b)
		}
	}
	if jsonLogprob(float32(math.NaN())) != minLogprob || jsonLogprob(-1.5) != -1.5 {
		t.Fatal("jsonLogprob")
	}
}
