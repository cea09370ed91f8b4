package hfmodel

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/t2t-lab/t2t/learner/safetensors"
)

// fuzzAdapterFiles returns a valid adapter for the tiny preset (rank 1 on q_proj): its
// adapter_config.json and adapter_model.safetensors bytes.
func fuzzAdapterFiles(t testing.TB, edit func(f []float32)) (cfgJS, weights []byte) {
	model, err := Preset(PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	cfg := LoRAConfig{Rank: 1, Alpha: 2, Targets: []string{"q_proj"}}
	var ts []safetensors.Tensor
	for name, shape := range adapterShapes(model, cfg) {
		f := make([]float32, shape[0]*shape[1])
		for i := range f {
			f[i] = float32(i%7) * 0.01
		}
		if edit != nil {
			edit(f)
		}
		ts = append(ts, safetensors.F32Tensor(name, shape, f))
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	js, err := json.Marshal(PEFTConfig{PeftType: "LORA", R: 1, LoraAlpha: 2, TargetModules: cfg.Targets, Bias: "none"})
	if err != nil {
		t.Fatal(err)
	}
	return js, buf.Bytes()
}

// FuzzReadAdapter: the adapter loader takes any config and safetensors bytes without a panic
// or an unbounded allocation; what it accepts fits the model, is finite and has a bounded scale.
func FuzzReadAdapter(f *testing.F) {
	cfgJS, weights := fuzzAdapterFiles(f, nil)
	_, nanWeights := fuzzAdapterFiles(f, func(v []float32) { v[0] = float32(math.NaN()) })
	f.Add(cfgJS, weights)
	f.Add(cfgJS, nanWeights)
	f.Add([]byte(`{"peft_type":"LORA","r":1,"lora_alpha":1e308,"target_modules":["q_proj"]}`), weights)
	f.Add([]byte("SHELL=/bin/sh"), weights)
	f.Add(cfgJS, []byte("SHELL=/bin/bash\x00PATH=/usr/bin"))
	f.Add(cfgJS, append([]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f}, '{', '}'))
	f.Add(cfgJS, weights[:len(weights)/2])
	model, err := Preset(PresetTiny)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, cfgJS, weights []byte) {
		dir := t.TempDir()
		if err := errors.Join(os.WriteFile(filepath.Join(dir, AdapterConfigFile), cfgJS, 0o644),
			os.WriteFile(filepath.Join(dir, AdapterWeightsFile), weights, 0o644)); err != nil {
			t.Fatal(err)
		}
		ad, err := ReadAdapter(dir, model)
		if err != nil {
			if bytes.Contains([]byte(err.Error()), []byte("SHELL")) {
				t.Fatalf("the error holds file bytes: %v", err)
			}
			return
		}
		if s := ad.Config.Alpha / float64(ad.Config.Rank); !(s <= MaxAdapterScale) {
			t.Fatalf("accepted scale %g", s)
		}
		want := adapterShapes(model, ad.Config)
		if len(ad.Weights) != len(want) {
			t.Fatalf("%d tensors, want %d", len(ad.Weights), len(want))
		}
		for name, shape := range want {
			v := ad.Weights[name]
			if len(v) != shape[0]*shape[1] {
				t.Fatalf("%s: %d values for %v", name, len(v), shape)
			}
			for _, x := range v {
				if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
					t.Fatalf("%s: accepted %v", name, x)
				}
			}
		}
	})
}

// The valid seed loads, with the values written.
func TestReadAdapterSeed(t *testing.T) {
	cfgJS, weights := fuzzAdapterFiles(t, nil)
	dir := t.TempDir()
	if err := errors.Join(os.WriteFile(filepath.Join(dir, AdapterConfigFile), cfgJS, 0o644),
		os.WriteFile(filepath.Join(dir, AdapterWeightsFile), weights, 0o644)); err != nil {
		t.Fatal(err)
	}
	model, _ := Preset(PresetTiny)
	ad, err := ReadAdapter(dir, model)
	if err != nil {
		t.Fatal(err)
	}
	if ad.Config.Rank != 1 || len(ad.Weights) != 2*model.NumHiddenLayers {
		t.Fatalf("%+v, %d tensors", ad.Config, len(ad.Weights))
	}
}
