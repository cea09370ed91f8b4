package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/qwen3"
	"github.com/t2t-lab/t2t/learner/safetensors"
	"github.com/t2t-lab/t2t/serve"
)

// srvAdapter writes a PEFT LoRA adapter for the checkpoint in base (AddLoRA from seed,
// SaveAdapter) whose B matrices are then drawn from seed too: fresh adapters have B = 0 and
// would not change the model.
func srvAdapter(t *testing.T, base string, seed uint64) string {
	t.Helper()
	m, err := qwen3.Load(srvBackend, base)
	if err != nil {
		t.Fatal(err)
	}
	if err := m.AddLoRA(hfmodel.LoRAConfig{Rank: 2, Alpha: 4, Targets: []string{"q_proj", "v_proj", "down_proj"}}, seed); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "adapter")
	if err := m.SaveAdapter(dir); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, hfmodel.AdapterWeightsFile)
	ts, _, err := safetensors.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 0xb))
	for i, x := range ts {
		if !strings.Contains(x.Name, "lora_B") {
			continue
		}
		f := make([]float32, x.Shape[0]*x.Shape[1])
		for k := range f {
			f[k] = float32(rng.NormFloat64() * 0.5)
		}
		ts[i] = safetensors.F32Tensor(x.Name, x.Shape, f)
	}
	var buf bytes.Buffer
	if err := safetensors.Write(&buf, ts, map[string]string{"format": "pt"}); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(file, buf.Bytes()); err != nil {
		t.Fatal(err)
	}
	return dir
}

// srvPostKey posts a JSON body with the API key (none when empty) and returns the status and
// the body, which may be plain text (vLLM answers adapter loads so).
func srvPostKey(t *testing.T, url, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return res.StatusCode, string(b)
}

func loraBody(name, path string) string {
	b, _ := json.Marshal(map[string]string{"lora_name": name, "lora_path": path})
	return string(b)
}

// The vLLM adapter endpoints over real HTTP: two adapters load, are listed, sample
// differently from each other and from the base model (and the same again after swaps),
// unload (then 404), and bad bodies are 400s that change nothing.
func TestLoRAAdapters(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	dirA, dirB := srvAdapter(t, lm.Dir, seed+1), srvAdapter(t, lm.Dir, seed+2)
	const key = "k3y"
	_, hs, _ := srvStart(t, lm, serve.Options{APIKey: key})
	c := openai.NewClient(option.WithBaseURL(hs.URL+"/v1"), option.WithAPIKey(key), option.WithMaxRetries(0))
	ctx := context.Background()
	load, unload := hs.URL+"/v1/load_lora_adapter", hs.URL+"/v1/unload_lora_adapter"

	asIDs := option.WithJSONSet("return_tokens_as_token_ids", true)
	sample := func(model string) []float64 {
		t.Helper()
		res, err := c.Chat.Completions.New(ctx, srvChatParams(model, 7), asIDs)
		if err != nil {
			t.Fatalf("model %s: %v", model, err)
		}
		if res.Model != model {
			t.Fatalf("answer names model %q, want %q", res.Model, model)
		}
		var lps []float64
		for _, ch := range res.Choices {
			_, lp := srvIDs(t, ch.Logprobs.Content)
			lps = append(lps, lp...)
			for _, top := range ch.Logprobs.Content[0].TopLogprobs {
				lps = append(lps, top.Logprob)
			}
		}
		return lps
	}
	base := sample("tiny")

	if code, body := srvPostKey(t, load, "", loraBody("a", dirA)); code != http.StatusUnauthorized {
		t.Fatalf("load without the key: %d %s", code, body)
	}
	for _, ad := range []struct{ name, dir string }{{"a", dirA}, {"b", dirB}} {
		code, body := srvPostKey(t, load, key, loraBody(ad.name, ad.dir))
		if code != http.StatusOK || body != "Success: LoRA adapter '"+ad.name+"' added successfully." {
			t.Fatalf("load %s: %d %s", ad.name, code, body)
		}
	}
	for _, bad := range []struct {
		body string
		want int
	}{
		{`{"lora_name": "a", "lora_path": ` + string(mustJSON(dirB)) + `}`, 400}, // already loaded
		{loraBody("tiny", dirA), 400},                                            // the base model's name
		{loraBody("c", filepath.Join(t.TempDir(), "none")), 400},                 // no adapter there
		{loraBody("c", lm.Dir), 400},                                             // a checkpoint, not an adapter
		{`{"lora_name": "c"}`, 400},
		{`{"lora_name": 3, "lora_path": "x"}`, 400},
		{`not json`, 400},
	} {
		if code, body := srvPostKey(t, load, key, bad.body); code != bad.want || !strings.Contains(body, `"error"`) {
			t.Errorf("load %s: %d %s, want %d", bad.body, code, body, bad.want)
		}
	}

	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range page.Data {
		ids = append(ids, m.ID)
	}
	if !slices.Equal(ids, []string{"tiny", "a", "b"}) {
		t.Fatalf("models %v, want tiny, a, b", ids)
	}
	var card struct {
		ID     string  `json:"id"`
		Root   string  `json:"root"`
		Parent *string `json:"parent"`
	}
	if err := json.Unmarshal([]byte(page.Data[1].RawJSON()), &card); err != nil || card.Root != dirA || card.Parent == nil || *card.Parent != "tiny" {
		t.Fatalf("adapter card %s: want root %s, parent tiny", page.Data[1].RawJSON(), dirA)
	}
	if m, err := c.Models.Get(ctx, "b"); err != nil || m.ID != "b" {
		t.Fatalf("get b: %v %+v", err, m)
	}

	a, b := sample("a"), sample("b")
	if slices.Equal(a, base) || slices.Equal(b, base) || slices.Equal(a, b) {
		t.Fatalf("same log-probs: base %v\na %v\nb %v", base[:3], a[:3], b[:3])
	}
	// Swapping back and forth gives the same answers again.
	for _, m := range []struct {
		name string
		want []float64
	}{{"a", a}, {"tiny", base}, {"b", b}, {"a", a}} {
		if got := sample(m.name); !slices.Equal(got, m.want) {
			t.Fatalf("model %s after swaps: log-probs changed", m.name)
		}
	}

	if code, body := srvPostKey(t, unload, key, `{"lora_name": "a"}`); code != http.StatusOK || !strings.Contains(body, "removed") {
		t.Fatalf("unload a: %d %s", code, body)
	}
	var ae *openai.Error
	if _, err := c.Chat.Completions.New(ctx, srvChatParams("a", 7)); !errors.As(err, &ae) || ae.StatusCode != 404 {
		t.Fatalf("chat with an unloaded adapter: %v", err)
	}
	if code, body := srvPostKey(t, unload, key, `{"lora_name": "a"}`); code != http.StatusNotFound {
		t.Fatalf("unload a twice: %d %s", code, body)
	}
	if code, body := srvPostKey(t, unload, key, `{}`); code != http.StatusBadRequest {
		t.Fatalf("unload without a name: %d %s", code, body)
	}
	if got := sample("b"); !slices.Equal(got, b) {
		t.Fatal("b changed after a was unloaded")
	}
	if got := sample("tiny"); !slices.Equal(got, base) {
		t.Fatal("the base model changed after the adapters")
	}
	// The name is free again: a loads from b's directory and samples as b.
	if code, body := srvPostKey(t, load, key, loraBody("a", dirB)); code != http.StatusOK {
		t.Fatalf("reload a: %d %s", code, body)
	}
	if got := sample("a"); !slices.Equal(got, b) {
		t.Fatal("a loaded from b's directory samples unlike b")
	}
}

func writeFile(name string, b []byte) error { return os.WriteFile(name, b, 0o644) }

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
