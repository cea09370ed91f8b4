package serve_test

import (
	"flag"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

var srvSeed = flag.Uint64("srvseed", 0, "seed for the serve tests (0: a fixed default)")

func srvTestSeed(t testing.TB) uint64 {
	s := *srvSeed
	if s == 0 {
		s = 8000
	}
	t.Logf("seed %d (replay with -srvseed %d)", s, s)
	return s
}

var (
	srvOnce    sync.Once
	srvBackend backends.Backend
	srvTokPath string
	srvErr     error
)

// srvCheckpoint writes a tiny random Qwen3 checkpoint with the tiny tokenizer (as `t2t model
// init --preset tiny` does) and loads it.
func srvCheckpoint(t testing.TB, seed uint64) *textpolicy.LM {
	t.Helper()
	return srvCheckpointOf(t, seed, func(*hfmodel.Config) {})
}

// srvCheckpointOf is srvCheckpoint with the tiny config changed by edit.
func srvCheckpointOf(t testing.TB, seed uint64, edit func(*hfmodel.Config)) *textpolicy.LM {
	t.Helper()
	srvOnce.Do(func() {
		if srvBackend, srvErr = gomlxtrain.NewBackend("cpu"); srvErr != nil {
			return
		}
		var js []byte
		if js, srvErr = textpolicy.TinyTokenizerJSON(textpolicy.DefaultTinyVocab); srvErr != nil {
			return
		}
		dir, err := os.MkdirTemp("", "srv-tokenizer-")
		if err != nil {
			srvErr = err
			return
		}
		srvTokPath = filepath.Join(dir, "tokenizer.json")
		srvErr = os.WriteFile(srvTokPath, js, 0o644)
	})
	if srvErr != nil {
		t.Fatal(srvErr)
	}
	cfg, err := hfmodel.Preset(hfmodel.PresetTiny)
	if err != nil {
		t.Fatal(err)
	}
	edit(&cfg)
	dir := filepath.Join(t.TempDir(), "tiny")
	if _, err := hfmodel.WriteRandomCheckpoint(dir, cfg, seed, srvTokPath); err != nil {
		t.Fatal(err)
	}
	lm, err := loadTestLM(dir)
	if err != nil {
		t.Fatal(err)
	}
	return lm
}

// srvStart serves lm over a real HTTP listener and returns the server and an OpenAI client
// (no retries) pointed at it.
func srvStart(t testing.TB, lm *textpolicy.LM, opt serve.Options) (*serve.Server, *httptest.Server, openai.Client) {
	t.Helper()
	s, err := serve.New(lm, opt)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	c := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	return s, hs, c
}

// loadTestLM loads the checkpoint directory dir on the tests' shared GoMLX backend.
func loadTestLM(dir string) (*textpolicy.LM, error) {
	return textpolicy.LoadLM(dir, func() (engine.Model, error) { return qwen3.LoadEngine(srvBackend, dir) })
}
