package qwen3

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/internal/sysmem"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// Init writes what t2t model init writes: the vocabulary fitted to the tokenizer (exactly, or
// grown), the tokenizer files beside the weights, and no 4b-shape checkpoint without Force.
func TestInit(t *testing.T) {
	tokPath := qwenTinyTokenizerJSON(t) // 261 ids, with a tokenizer_config.json beside it
	js, err := os.ReadFile(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	files := func(dir string) map[string]string {
		out := map[string]string{}
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
			if b, err := os.ReadFile(filepath.Join(dir, f)); err == nil {
				out[f] = string(b)
			}
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		o         hfmodel.InitOptions
		vocab     int
		tokConfig string
	}{
		{"exact vocab", hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Seed: 3, Tokenizer: js, TokenizerConfig: []byte(hfmodel.TokenizerConfigJSON), ExactVocab: true}, 261, hfmodel.TokenizerConfigJSON},
		{"grown vocab", hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Seed: 3, Tokenizer: js}, 512, ""},
		{"tokenizer path", hfmodel.InitOptions{Preset: hfmodel.PresetTiny, TokenizerPath: tokPath, ExactVocab: true, Shape: hfmodel.Shape{Layers: 1, Hidden: 32}}, 512, `{"eos_token":"<|im_end|>"}`},
	} {
		dir := filepath.Join(t.TempDir(), "m")
		var planned []hfmodel.Config
		cfg, err := hfmodel.Init(dir, tc.o, func(c hfmodel.Config) { planned = append(planned, c) })
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		fs := files(dir)
		switch {
		case cfg.VocabSize != tc.vocab || len(planned) != 1 || planned[0].VocabSize != tc.vocab:
			t.Errorf("%s: vocab %d (planned %v), want %d", tc.name, cfg.VocabSize, planned, tc.vocab)
		case fs["tokenizer.json"] != string(js) || fs["tokenizer_config.json"] != tc.tokConfig || fs["config.json"] == "" || fs["model.safetensors"] == "":
			t.Errorf("%s: files %v", tc.name, len(fs))
		case tc.o.Shape.Layers == 1 && (cfg.NumHiddenLayers != 1 || cfg.HeadDim != 8):
			t.Errorf("%s: shape %+v", tc.name, cfg)
		}
		ins, err := hfmodel.Inspect(dir)
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := ins.WriteText(&b); err != nil || !strings.Contains(b.String(), "tokenizer: 261 ids") ||
			!strings.Contains(b.String(), "every tensor the config needs") || !strings.Contains(b.String(), "memory, LoRA r16 ") {
			t.Errorf("%s: inspect: %v\n%s", tc.name, err, b.String())
		}
	}

	big := filepath.Join(t.TempDir(), "big")
	planned := 0
	var le *hfmodel.LargeCheckpointError
	if _, err := hfmodel.Init(big, hfmodel.InitOptions{Preset: hfmodel.Preset4BShape}, func(hfmodel.Config) { planned++ }); !errors.As(err, &le) || !errors.Is(err, hfmodel.ErrNeedsForce) ||
		le.Bytes < 14<<30 || planned != 1 {
		t.Errorf("4b-shape without Force: %v (planned %d)", err, planned)
	}
	if _, err := os.Stat(big); !os.IsNotExist(err) {
		t.Errorf("4b-shape without Force wrote %s", big)
	}
	// Any shape whose weights do not fit in the memory available is refused before it is built.
	if avail := sysmem.MemAvailable(); avail > 0 {
		_, err := hfmodel.Init(big, hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Shape: hfmodel.Shape{Hidden: 100_000}}, nil)
		if !errors.As(err, &le) || le.Available <= 0 || le.Bytes <= le.Available {
			t.Errorf("hidden 100000 without Force: %v", err)
		}
	} else {
		t.Log("no /proc/meminfo: the available-memory check is not exercised here")
	}
	for _, tc := range []struct {
		o     hfmodel.InitOptions
		field string
	}{
		{hfmodel.InitOptions{Preset: "huge"}, "preset"},
		{hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Shape: hfmodel.Shape{Hidden: 30}}, "Shape.Hidden"},
		{hfmodel.InitOptions{Preset: hfmodel.PresetTiny, TokenizerPath: "/nonexistent/tokenizer.json"}, "InitOptions.TokenizerPath"},
		{hfmodel.InitOptions{Preset: hfmodel.PresetTiny, Tokenizer: []byte("{")}, "InitOptions.Tokenizer"},
	} {
		var ce *fielderr.Error
		if _, err := hfmodel.Init(big, tc.o, nil); !errors.As(err, &ce) || ce.Field != tc.field {
			t.Errorf("%+v: %v, want a field error naming %s", tc.o, err, tc.field)
		}
	}
}
