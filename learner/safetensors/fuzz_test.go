package safetensors

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzOpenSafetensorsDir: a sharded model's index never panics
// OpenDir nor opens a file outside the folder; a refusal wraps
// ErrMalformed or is a file error; what it opens finds every tensor the
// index names.
func FuzzOpenSafetensorsDir(f *testing.F) {
	a := fuzzSafetensors(f, []Tensor{F32Tensor("a", []int{1}, []float32{1}), F32Tensor("b", []int{2}, []float32{1, 2})})
	c := fuzzSafetensors(f, []Tensor{F32Tensor("c", []int{1}, []float32{3})})
	f.Add([]byte(`{"metadata":{},"weight_map":{"a":"s1.safetensors","b":"s1.safetensors","c":"s2.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"s1.safetensors","c":"s1.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":"../s1.safetensors"}}`))
	f.Add([]byte(`{"weight_map":{"a":".."}}`))
	f.Add([]byte(`{"weight_map":{}}`))
	f.Add([]byte(`[`))
	f.Fuzz(func(t *testing.T, index []byte) {
		dir := t.TempDir()
		for name, b := range map[string][]byte{IndexFile: index, "s1.safetensors": a, "s2.safetensors": c} {
			if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		set, err := OpenDir(dir)
		if err != nil {
			var pe *os.PathError
			if !errors.Is(err, ErrMalformed) && !errors.As(err, &pe) {
				t.Fatalf("error %v", err)
			}
			return
		}
		defer set.Close()
		var idx struct {
			WeightMap map[string]string `json:"weight_map"`
		}
		if err := json.Unmarshal(index, &idx); err != nil {
			t.Fatalf("opened a set from an index that does not parse: %v", err)
		}
		for name := range idx.WeightMap {
			if _, ok := set.where[name]; !ok {
				t.Fatalf("tensor %q of the index is not in the set", name)
			}
		}
	})
}

// fuzzSafetensors encodes ts as a safetensors file.
func fuzzSafetensors(f *testing.F, ts []Tensor) []byte {
	var buf bytes.Buffer
	if err := Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		f.Fatal(err)
	}
	return buf.Bytes()
}
