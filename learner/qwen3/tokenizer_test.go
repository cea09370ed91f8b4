package qwen3

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"unicode/utf8"

	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// qwenTinyTokenizerJSON writes a byte-level tokenizer.json (256 byte tokens, no merges, Qwen's
// special tokens) and returns its path.
func qwenTinyTokenizerJSON(t testing.TB) string {
	t.Helper()
	vocab := map[string]int{}
	n := 0
	for b := range 256 {
		r := rune(b)
		if !((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) {
			r = rune(256 + n)
			n++
		}
		vocab[string(r)] = b
	}
	var added []map[string]any
	for i, s := range []string{tokenizer.EndOfText, tokenizer.ImStart, tokenizer.ImEnd, tokenizer.ThinkOpen, tokenizer.ThinkClose} {
		added = append(added, map[string]any{"id": 256 + i, "content": s, "special": i < 3})
	}
	js, err := json.Marshal(map[string]any{
		"added_tokens":  added,
		"normalizer":    map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": true},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "tokenizer.json")
	if err := os.WriteFile(path, js, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), []byte(`{"eos_token":"<|im_end|>"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCheckpointWithTokenizerEndToEnd(t *testing.T) {
	seed := qwenTestSeed(t)
	backend := qwenBackend(t)
	tokPath := qwenTinyTokenizerJSON(t)
	tok, err := tokenizer.Load(tokPath)
	if err != nil {
		t.Fatal(err)
	}
	cfg := qwenTiny(t)
	cfg.VocabSize = 100 // smaller than the tokenizer: raised to its 261 ids
	dir := t.TempDir()
	written, err := hfmodel.WriteRandomCheckpoint(dir, cfg, seed, tokPath)
	if err != nil {
		t.Fatal(err)
	}
	if written.VocabSize != tok.VocabSize() {
		t.Fatalf("vocab %d, want the tokenizer's %d", written.VocabSize, tok.VocabSize())
	}
	for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s not written: %v", f, err)
		}
	}
	m, err := Load(backend, dir)
	if err != nil {
		t.Fatal(err)
	}
	imEnd, _ := tok.TokenID(tokenizer.ImEnd)
	prompt := tok.Encode(tokenizer.ChatPrompt([]tokenizer.Message{{Role: tokenizer.RoleUser, Content: "Solve the MAPF instance."}}, true, false))
	rng := rand.New(rand.NewPCG(seed, 11))
	gen, err := m.Generate([][]int32{prompt, prompt[:10]}, engine.SampleConfig{MaxNewTokens: 12, Temperature: 0.8, TopK: 50, TopP: 0.95, StopTokens: []int32{imEnd}}, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i, ids := range gen.Tokens {
		if len(ids) == 0 || len(ids) > 12 || len(gen.LogProbs[i]) != len(ids) {
			t.Fatalf("row %d: %d tokens, %d log-probs", i, len(ids), len(gen.LogProbs[i]))
		}
		for k, lp := range gen.LogProbs[i] {
			if !(lp <= 0) {
				t.Fatalf("row %d token %d: log-prob %v", i, k, lp)
			}
		}
		if text := tok.Decode(ids); !utf8.ValidString(text) {
			t.Errorf("row %d decodes to invalid UTF-8", i)
		}
	}
	out := t.TempDir()
	if err := m.Save(out); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"tokenizer.json", "tokenizer_config.json"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, err := os.ReadFile(filepath.Join(out, f))
		if err != nil || string(a) != string(b) {
			t.Errorf("Save did not copy %s: %v", f, err)
		}
	}
}

func TestGenerateAndLoRAErrors(t *testing.T) {
	cfg := qwenTiny(t)
	m, err := NewRandom(qwenBackend(t), cfg, 3)
	if err != nil {
		t.Fatal(err)
	}
	sc := engine.SampleConfig{MaxNewTokens: 2}
	for name, call := range map[string]func() error{
		"no prompts":   func() error { _, err := m.Generate(nil, sc, nil); return err },
		"empty prompt": func() error { _, err := m.Generate([][]int32{{}}, sc, nil); return err },
		"bad token":    func() error { _, err := m.Generate([][]int32{{int32(cfg.VocabSize)}}, sc, nil); return err },
		"no rng": func() error {
			_, err := m.Generate([][]int32{{1}}, engine.SampleConfig{MaxNewTokens: 2, Temperature: 1}, nil)
			return err
		},
		"too long": func() error {
			_, err := m.Generate([][]int32{{1}}, engine.SampleConfig{MaxNewTokens: cfg.MaxPositionEmbeddings}, nil)
			return err
		},
		"empty logits seq": func() error { _, err := m.Logits([][]int32{{}}); return err },
	} {
		if err := call(); !errors.Is(err, learner.ErrBadBatch) {
			t.Errorf("%s: %v, want ErrBadBatch", name, err)
		}
	}
	if err := m.AddLoRA(hfmodel.LoRAConfig{Rank: 0, Alpha: 1, Targets: []string{"q_proj"}}, 1); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Errorf("rank 0: %v", err)
	}
	if err := m.AddLoRA(hfmodel.LoRAConfig{Rank: 2, Alpha: 1, Targets: []string{"lm_head"}}, 1); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Errorf("bad target: %v", err)
	}
	if err := m.SaveAdapter(t.TempDir()); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Errorf("SaveAdapter without LoRA: %v", err)
	}
	if _, err := m.NewTrainer(learner.DefaultGRPOConfig()); err != nil {
		t.Fatal(err)
	}
	if err := m.AddLoRA(hfmodel.DefaultLoRAConfig(), 1); !errors.Is(err, learner.ErrInvalidConfig) {
		t.Errorf("AddLoRA after NewTrainer: %v", err)
	}
}
