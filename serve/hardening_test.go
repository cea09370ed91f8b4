package serve_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/serve"
)

// copyAdapter copies an adapter directory's two files to a new directory.
func copyAdapter(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "adapter")
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{hfmodel.AdapterConfigFile, hfmodel.AdapterWeightsFile} {
		b, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			t.Fatal(err)
		}
		if err := writeFile(filepath.Join(dst, f), b); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

// mkfifo replaces path by a FIFO nothing writes to.
func mkfifo(t *testing.T, path string) {
	t.Helper()
	_ = os.Remove(path)
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

// postGuarded posts body with a generous hang guard (a FIFO used to stall the request forever).
func postGuarded(t *testing.T, url, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v (a FIFO stalling the server?)", url, err)
	}
	defer res.Body.Close()
	var b bytes.Buffer
	_, _ = b.ReadFrom(res.Body)
	return res.StatusCode, b.String()
}

// TestAdapterFilesThatAreNotRegularAreRefused: a FIFO adapter_config.json or
// adapter_model.safetensors, and a FIFO model.safetensors or tokenizer.json in a weights
// update, are 400s at once; the server keeps generating.
func TestAdapterFilesThatAreNotRegularAreRefused(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	good := srvAdapter(t, lm.Dir, seed+1)
	load := func(_ context.Context, dir string) (*textpolicy.LM, error) { return loadTestLM(dir) }
	_, hs, c := srvStart(t, lm, serve.Options{LoadWeights: load})
	for i, f := range []string{hfmodel.AdapterConfigFile, hfmodel.AdapterWeightsFile} {
		dir := copyAdapter(t, good)
		mkfifo(t, filepath.Join(dir, f))
		code, body := postGuarded(t, hs.URL+"/v1/load_lora_adapter", loraBody("fifo"+strconv.Itoa(i), dir))
		if code != http.StatusBadRequest || !strings.Contains(body, "FIFO") {
			t.Fatalf("FIFO %s: %d %s; want 400 naming a FIFO", f, code, body)
		}
	}
	for _, f := range []string{"model.safetensors", "tokenizer.json", "config.json"} {
		dir := filepath.Join(t.TempDir(), "ckpt")
		if err := os.CopyFS(dir, os.DirFS(lm.Dir)); err != nil {
			t.Fatal(err)
		}
		mkfifo(t, filepath.Join(dir, f))
		b, _ := json.Marshal(map[string]string{"model_path": dir})
		if code, body := postGuarded(t, hs.URL+"/update_weights_from_disk", string(b)); code != http.StatusBadRequest {
			t.Fatalf("FIFO %s in a weights update: %d %s; want 400", f, code, body)
		}
	}
	srvAwaitHealth(t, hs.URL, 0, 0)
	if _, err := c.Chat.Completions.New(context.Background(), srvChatParams(srvModelName(lm), 1)); err != nil {
		t.Fatalf("generation after the refusals: %v", err)
	}
}

// srvModelName is the id a server started by srvStart serves lm under.
func srvModelName(lm *textpolicy.LM) string { return filepath.Base(lm.Dir) }

// TestAdapterHeldInMemory: once loaded, an adapter answers the same whatever happens to its
// files (replaced by another adapter's, then deleted), across swaps with the base model.
func TestAdapterHeldInMemory(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	dirD, other := copyAdapter(t, srvAdapter(t, lm.Dir, seed+1)), srvAdapter(t, lm.Dir, seed+2)
	_, hs, c := srvStart(t, lm, serve.Options{})
	ctx := context.Background()
	sample := func(model string) []float64 {
		t.Helper()
		res, err := c.Chat.Completions.New(ctx, srvChatParams(model, 7))
		if err != nil {
			t.Fatalf("model %s: %v", model, err)
		}
		var lps []float64
		for _, ch := range res.Choices {
			for _, x := range ch.Logprobs.Content {
				lps = append(lps, x.Logprob)
			}
		}
		return lps
	}
	if code, body := srvPostKey(t, hs.URL+"/v1/load_lora_adapter", "", loraBody("d", dirD)); code != http.StatusOK {
		t.Fatalf("load: %d %s", code, body)
	}
	before := sample("d")
	copyInto := func(src string) {
		for _, f := range []string{hfmodel.AdapterConfigFile, hfmodel.AdapterWeightsFile} {
			b, err := os.ReadFile(filepath.Join(src, f))
			if err != nil {
				t.Fatal(err)
			}
			if err := writeFile(filepath.Join(dirD, f), b); err != nil {
				t.Fatal(err)
			}
		}
	}
	copyInto(other)
	sample(srvModelName(lm)) // detach d
	if got := sample("d"); !floatsEqual(got, before) {
		t.Fatal("adapter d answers differently after its files were replaced")
	}
	if err := os.RemoveAll(dirD); err != nil {
		t.Fatal(err)
	}
	sample(srvModelName(lm))
	if got := sample("d"); !floatsEqual(got, before) {
		t.Fatal("adapter d answers differently after its files were deleted")
	}
}

func floatsEqual(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// rewriteAdapter rewrites dir's adapter weights through edit and its config through cfgEdit.
func rewriteAdapter(t *testing.T, dir string, edit func([]safetensors.Tensor) []safetensors.Tensor, cfgEdit func(map[string]any)) {
	t.Helper()
	if edit != nil {
		file := filepath.Join(dir, hfmodel.AdapterWeightsFile)
		ts, _, err := safetensors.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := safetensors.Write(&buf, edit(ts), nil); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(file, buf.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	if cfgEdit != nil {
		file := filepath.Join(dir, hfmodel.AdapterConfigFile)
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]any{}
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		cfgEdit(m)
		if b, err = json.Marshal(m); err != nil {
			t.Fatal(err)
		}
		if err := writeFile(file, b); err != nil {
			t.Fatal(err)
		}
	}
}

// TestAdapterBadContentRefused: NaN weights, lora_alpha 1e308, a huge header of zero-size
// entries and file bytes that are not an adapter (environ, a JSON file starting with 'S') are
// 400s whose message names the file and the problem and holds none of its bytes.
func TestAdapterBadContentRefused(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	good := srvAdapter(t, lm.Dir, seed+1)
	_, hs, c := srvStart(t, lm, serve.Options{})
	environ, _ := os.ReadFile("/proc/self/environ")
	if len(environ) < 16 {
		environ = []byte("SHELL=/bin/bash\x00PATH=/usr/bin\x00")
	}
	environFile := filepath.Join(t.TempDir(), "environ")
	if err := writeFile(environFile, environ); err != nil {
		t.Fatal(err)
	}
	leak := []string{strconv.FormatUint(binary.LittleEndian.Uint64(environ[:8]), 10), string(environ[:8])}
	cases := []struct {
		name, want string
		edit       func(dir string)
	}{
		{"nan weights", "non-finite", func(dir string) {
			rewriteAdapter(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
				f, _ := ts[0].Float32(nil)
				f[0] = float32(math.NaN())
				ts[0] = safetensors.F32Tensor(ts[0].Name, ts[0].Shape, f)
				return ts
			}, nil)
		}},
		{"alpha 1e308", "lora_alpha", func(dir string) {
			rewriteAdapter(t, dir, nil, func(m map[string]any) { m["lora_alpha"] = 1e308 })
		}},
		{"huge header", "header length out of range", func(dir string) {
			rewriteAdapter(t, dir, func(ts []safetensors.Tensor) []safetensors.Tensor {
				for i := range 20000 {
					ts = append(ts, safetensors.F32Tensor("z"+strconv.Itoa(i), []int{0}, nil))
				}
				return ts
			}, nil)
		}},
		{"environ bytes", "header length out of range", func(dir string) {
			p := filepath.Join(dir, hfmodel.AdapterWeightsFile)
			_ = os.Remove(p)
			if err := os.Symlink(environFile, p); err != nil {
				t.Fatal(err)
			}
		}},
		{"json of S", "not valid JSON", func(dir string) {
			if err := writeFile(filepath.Join(dir, hfmodel.AdapterConfigFile), []byte("SECRET=hunter2")); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for i, tc := range cases {
		dir := copyAdapter(t, good)
		tc.edit(dir)
		code, body := postGuarded(t, hs.URL+"/v1/load_lora_adapter", loraBody("bad"+strconv.Itoa(i), dir))
		if code != http.StatusBadRequest || !strings.Contains(body, tc.want) {
			t.Errorf("%s: %d %s; want 400 with %q", tc.name, code, body, tc.want)
		}
		for _, l := range append(leak, "SECRET", "hunter2", "'S'") {
			if strings.Contains(body, l) {
				t.Errorf("%s: the answer holds file bytes %q: %s", tc.name, l, body)
			}
		}
	}
	if _, err := c.Chat.Completions.New(context.Background(), srvChatParams(srvModelName(lm), 1)); err != nil {
		t.Fatalf("generation after the refusals: %v", err)
	}
}

// TestWeightsUpdateErrorsHoldNoFileBytes: a weights update whose config.json is not JSON (a
// secret, say) answers 400 naming the file and the offset, not its first character.
func TestWeightsUpdateErrorsHoldNoFileBytes(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	load := func(_ context.Context, dir string) (*textpolicy.LM, error) { return loadTestLM(dir) }
	_, hs, _ := srvStart(t, lm, serve.Options{LoadWeights: load})
	dir := filepath.Join(t.TempDir(), "ckpt")
	if err := os.CopyFS(dir, os.DirFS(lm.Dir)); err != nil {
		t.Fatal(err)
	}
	if err := writeFile(filepath.Join(dir, "config.json"), []byte("SECRET=hunter2")); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(map[string]string{"model_path": dir})
	code, body := postGuarded(t, hs.URL+"/update_weights_from_disk", string(b))
	if code != http.StatusBadRequest || !strings.Contains(body, "not valid JSON") || strings.Contains(body, "'S'") || strings.Contains(body, "hunter2") {
		t.Fatalf("%d %s; want 400 saying not valid JSON, without the file's bytes", code, body)
	}
}

// doReq sends method url with body and headers over real HTTP and returns the status.
func doReq(t *testing.T, method, url, body string, hdr map[string]string) int {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
		} else {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestCrossSiteRequestsRefused: over real HTTP, a foreign Origin is 403, a state-changing
// route takes JSON only (415), and without an API key a foreign Host (DNS rebinding) is 403;
// --allow-origin (Options.AllowOrigins) lets a named origin in; with a key the Host is free.
func TestCrossSiteRequestsRefused(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	good := srvAdapter(t, lm.Dir, seed+1)
	load := func(_ context.Context, dir string) (*textpolicy.LM, error) { return loadTestLM(dir) }
	_, hs, _ := srvStart(t, lm, serve.Options{LoadWeights: load})
	weights, _ := json.Marshal(map[string]string{"model_path": lm.Dir})
	host := strings.TrimPrefix(hs.URL, "http://")
	evil := map[string]string{"Origin": "http://evil.example", "Content-Type": "text/plain"}
	for _, tc := range []struct {
		method, path, body string
		hdr                map[string]string
		want               int
	}{
		{"POST", "/update_weights_from_disk", string(weights), evil, http.StatusForbidden},
		{"POST", "/update_weights_from_disk", string(weights), map[string]string{"Content-Type": "text/plain"}, http.StatusUnsupportedMediaType},
		{"POST", "/v1/load_lora_adapter", loraBody("form", good), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, http.StatusUnsupportedMediaType},
		{"POST", "/v1/unload_lora_adapter", `{"lora_name":"x"}`, map[string]string{}, http.StatusUnsupportedMediaType},
		{"GET", "/v1/models", "", map[string]string{"Origin": "http://evil.example"}, http.StatusForbidden},
		{"GET", "/v1/models", "", map[string]string{"Host": "evil.example"}, http.StatusForbidden},
		{"GET", "/v1/models", "", map[string]string{"Host": "evil.example:" + strings.Split(host, ":")[1]}, http.StatusForbidden},
		{"GET", "/health", "", map[string]string{"Host": "evil.example"}, http.StatusOK},
		{"GET", "/v1/models", "", map[string]string{"Host": "localhost"}, http.StatusOK},
		{"GET", "/v1/models", "", map[string]string{"Origin": "http://" + host}, http.StatusOK},
		{"POST", "/v1/load_lora_adapter", loraBody("json", good), map[string]string{"Content-Type": "application/json; charset=utf-8"}, http.StatusOK},
	} {
		if got := doReq(t, tc.method, hs.URL+tc.path, tc.body, tc.hdr); got != tc.want {
			t.Errorf("%s %s %v: %d, want %d", tc.method, tc.path, tc.hdr, got, tc.want)
		}
	}
	if code := doReq(t, "GET", hs.URL+"/v1/models", "", nil); code != http.StatusOK {
		t.Fatalf("plain request: %d", code)
	}

	_, hs2, _ := srvStart(t, lm, serve.Options{AllowOrigins: []string{"http://ui.example"}})
	if code := doReq(t, "GET", hs2.URL+"/v1/models", "", map[string]string{"Origin": "http://ui.example", "Host": "ui.example"}); code != http.StatusOK {
		t.Fatalf("allowed origin: %d", code)
	}
	if code := doReq(t, "GET", hs2.URL+"/v1/models", "", map[string]string{"Origin": "http://evil.example"}); code != http.StatusForbidden {
		t.Fatalf("other origin with an allow list: %d", code)
	}
	_, hs3, _ := srvStart(t, lm, serve.Options{APIKey: "k"})
	if code := doReq(t, "GET", hs3.URL+"/v1/models", "", map[string]string{"Host": "any.example", "Authorization": "Bearer k"}); code != http.StatusOK {
		t.Fatalf("a keyed server with another Host: %d", code)
	}
}
