package rolloutengine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/t2t-lab/t2t/internal/fielderr"
)

// call is one request the fake engine received.
type call struct {
	Path, Auth string
	Body       map[string]string
}

func (c call) String() string {
	switch c.Path {
	case "/v1/load_lora_adapter":
		return "load " + c.Body["lora_name"]
	case "/v1/unload_lora_adapter":
		return "unload " + c.Body["lora_name"]
	case "/update_weights_from_disk":
		return "update " + filepath.Base(c.Body["model_path"])
	}
	return c.Path
}

// fakeEngine speaks vLLM's adapter endpoints and SGLang's weight update, records every
// request, and answers from a script: fail(path) returns the status and body to answer
// instead of success (0: succeed), consulted once per request.
type fakeEngine struct {
	t    *testing.T
	srv  *httptest.Server
	mu   sync.Mutex
	got  []call
	seen chan call // every request, as it arrives
	// gate, when set, is received from before a load answers.
	gate chan struct{}
	fail func(path string, n int) (int, string)
	// adapters the engine holds, and its weights' path (SGLang)
	adapters map[string]string
	weights  string
}

func newFakeEngine(t *testing.T) *fakeEngine {
	f := &fakeEngine{t: t, seen: make(chan call, 256), adapters: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeEngine) serve(w http.ResponseWriter, r *http.Request) {
	var body map[string]string
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c := call{Path: r.URL.Path, Auth: r.Header.Get("Authorization"), Body: body}
	f.mu.Lock()
	f.got = append(f.got, c)
	n := len(f.got)
	gate, fail := f.gate, f.fail
	f.mu.Unlock()
	f.seen <- c
	if gate != nil && c.Path != "/v1/unload_lora_adapter" {
		<-gate
	}
	if fail != nil {
		if status, msg := fail(c.Path, n); status != 0 {
			w.WriteHeader(status)
			fmt.Fprint(w, msg)
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	switch c.Path {
	case "/v1/load_lora_adapter":
		if _, err := os.Stat(filepath.Join(body["lora_path"], "adapter_model.safetensors")); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"Loading lora %s failed: %v"}}`, body["lora_name"], err)
			return
		}
		if _, ok := f.adapters[body["lora_name"]]; ok {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"error":{"message":"The lora adapter '%s' has already been loaded."}}`, body["lora_name"])
			return
		}
		f.adapters[body["lora_name"]] = body["lora_path"]
		fmt.Fprintf(w, "Success: LoRA adapter '%s' added successfully.", body["lora_name"])
	case "/v1/unload_lora_adapter":
		if _, ok := f.adapters[body["lora_name"]]; !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error":{"message":"The lora adapter '%s' cannot be found."}}`, body["lora_name"])
			return
		}
		delete(f.adapters, body["lora_name"])
		fmt.Fprintf(w, "Success: LoRA adapter '%s' removed successfully.", body["lora_name"])
	case "/update_weights_from_disk":
		if _, err := os.Stat(filepath.Join(body["model_path"], "model.safetensors")); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"success":false,"message":"Failed to get weights iterator: %v"}`, err)
			return
		}
		f.weights = body["model_path"]
		fmt.Fprint(w, `{"success":true,"message":"Succeeded to update model weights.","num_paused_requests":0}`)
	default:
		http.NotFound(w, r)
	}
}

// calls returns the requests so far as strings ("load t2t-v3").
func (f *fakeEngine) calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.got))
	for i, c := range f.got {
		out[i] = c.String()
	}
	return out
}

// next waits for the next request the engine receives.
func (f *fakeEngine) next(what string) call {
	f.t.Helper()
	select {
	case c := <-f.seen:
		return c
	case <-time.After(10 * time.Second):
		f.t.Fatalf("the engine received no request (%s) in 10s; it had %v", what, f.calls())
		return call{}
	}
}

// adapterFiles writes what a PEFT adapter directory holds (the fake engine checks the
// weights file is there).
func adapterFiles(dir string) error {
	for _, n := range []string{"adapter_config.json", "adapter_model.safetensors"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(filepath.Base(dir)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

func checkpointFiles(dir string) error {
	for _, n := range []string{"config.json", "model.safetensors"} {
		if err := os.WriteFile(filepath.Join(dir, n), []byte(filepath.Base(dir)), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// dirs lists the version directories under dir.
func dirs(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	slices.Sort(out)
	return out
}

func newPusher(t *testing.T, cfg Config) *Pusher {
	t.Helper()
	cfg.Backoff = time.Millisecond
	p, err := New(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runPusher runs p in the background until the test ends; loaded gets each version Run
// loaded.
func runPusher(t *testing.T, p *Pusher) <-chan int64 {
	loaded := make(chan int64, 64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx, func(v int64) { loaded <- v })
	}()
	t.Cleanup(func() { cancel(); <-done })
	return loaded
}

func push(t *testing.T, p *Pusher, v int64, write func(string) error) {
	t.Helper()
	if err := p.Write(v, write); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := p.WaitLoaded(ctx, v); err != nil {
		t.Fatalf("version %d: %v", v, err)
	}
}

// TestPusherAdapters pushes versions 0..4 to a vLLM-like engine keeping 2: each version is
// loaded under its own name from its own directory (absolute, complete when the engine is
// told), with the API key, in order, and each load unloads the adapter that falls out of
// the newest 2 and removes its directory.
func TestPusherAdapters(t *testing.T) {
	eng := newFakeEngine(t)
	dir := filepath.Join(t.TempDir(), "push")
	p := newPusher(t, Config{Kind: VLLM, URL: eng.srv.URL + "/v1/", Dir: dir, Adapters: true, Keep: 2, APIKey: "k"})
	if p.BaseURL() != eng.srv.URL+"/v1" || p.ModelFor(3) != "t2t-v3" || p.ModelPrefix() != AdapterPrefix || p.Dir(3) != filepath.Join(dir, "v3") {
		t.Fatalf("base %q, model %q, prefix %q, dir %q", p.BaseURL(), p.ModelFor(3), p.ModelPrefix(), p.Dir(3))
	}
	if _, _, err := p.Acquire(); !errors.Is(err, ErrNotLoaded) {
		t.Fatalf("Acquire before a load: %v", err)
	}
	if err := p.Write(0, adapterFiles); err != nil {
		t.Fatal(err)
	}
	if err := p.Load(context.Background(), 0); err != nil {
		t.Fatal(err)
	}
	loaded := runPusher(t, p)
	for v := int64(1); v <= 4; v++ {
		push(t, p, v, adapterFiles)
		if got := <-loaded; got != v {
			t.Fatalf("onLoaded(%d), want %d", got, v)
		}
	}
	want := []string{"load t2t-v0", "load t2t-v1", "load t2t-v2", "unload t2t-v0", "load t2t-v3", "unload t2t-v1", "load t2t-v4", "unload t2t-v2"}
	if got := eng.calls(); !reflect.DeepEqual(got, want) {
		t.Fatalf("engine calls %v, want %v", got, want)
	}
	for _, c := range eng.got {
		if c.Auth != "Bearer k" {
			t.Fatalf("%v sent Authorization %q", c, c.Auth)
		}
		if p := c.Body["lora_path"]; c.Path == "/v1/load_lora_adapter" && (!filepath.IsAbs(p) || p != filepath.Join(dir, "v"+strings.TrimPrefix(c.Body["lora_name"], AdapterPrefix))) {
			t.Fatalf("%v: lora_path %q", c, p)
		}
	}
	if got := p.Loaded(); !reflect.DeepEqual(got, []int64{3, 4}) {
		t.Fatalf("loaded %v", got)
	}
	if got := dirs(t, dir); !reflect.DeepEqual(got, []string{"v3", "v4"}) {
		t.Fatalf("directories %v, want v3 v4", got)
	}
	if st := p.Stats(); st.Written != 5 || st.Loaded != 5 || st.Unloaded != 3 || st.Removed != 3 || st.LoadFailures != 0 {
		t.Fatalf("stats %+v", st)
	}
	if err := p.Write(4, adapterFiles); err == nil {
		t.Fatal("rewriting the loaded version 4 was accepted")
	}
}

// TestPusherHoldsAdapter: an adapter a rollout of this process holds stays loaded, with its
// directory, however many versions follow, and goes once released.
func TestPusherHoldsAdapter(t *testing.T) {
	eng := newFakeEngine(t)
	dir := t.TempDir()
	p := newPusher(t, Config{Kind: T2T, URL: eng.srv.URL, Dir: dir, Adapters: true, Keep: 1})
	loaded := runPusher(t, p)
	push(t, p, 0, adapterFiles)
	<-loaded
	eng.next("load t2t-v0")
	v, release, err := p.Acquire()
	if err != nil || v != 0 {
		t.Fatalf("Acquire: %d, %v", v, err)
	}
	_, release2, _ := p.Acquire() // a second rollout on the same version
	push(t, p, 1, adapterFiles)
	push(t, p, 2, adapterFiles)
	for _, want := range []string{"load t2t-v1", "load t2t-v2", "unload t2t-v1"} {
		if c := eng.next(want); c.String() != want {
			t.Fatalf("engine call %v, want %s", c, want)
		}
	}
	<-loaded
	<-loaded // reported after the prune that followed the load
	if got := dirs(t, dir); !reflect.DeepEqual(got, []string{"v0", "v2"}) {
		t.Fatalf("directories %v, want the held v0 and v2", got)
	}
	release()
	release() // a second call does nothing
	release2()
	if c := eng.next("unload of the released v0"); c.String() != "unload t2t-v0" {
		t.Fatalf("after the release: %v", c)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for !reflect.DeepEqual(dirs(t, dir), []string{"v2"}) { // removed right after the unload answered
		select {
		case <-ctx.Done():
			t.Fatalf("directories %v after the release", dirs(t, dir))
		case <-time.After(5 * time.Millisecond):
		}
	}
	if got := p.Loaded(); !reflect.DeepEqual(got, []int64{2}) {
		t.Fatalf("loaded %v", got)
	}
}

// TestPusherSkipsSuperseded: versions written while the engine loads another are not loaded
// one by one: the next load takes the newest, and the skipped one's directory goes.
func TestPusherSkipsSuperseded(t *testing.T) {
	eng := newFakeEngine(t)
	dir := t.TempDir()
	p := newPusher(t, Config{Kind: VLLM, URL: eng.srv.URL, Dir: dir, Adapters: true})
	loaded := runPusher(t, p)
	push(t, p, 0, adapterFiles)
	<-loaded
	eng.next("load t2t-v0")
	gate := make(chan struct{})
	eng.mu.Lock()
	eng.gate = gate
	eng.mu.Unlock()
	if err := p.Write(1, adapterFiles); err != nil {
		t.Fatal(err)
	}
	eng.next("load t2t-v1") // v1 is loading
	for v := int64(2); v <= 3; v++ {
		if err := p.Write(v, adapterFiles); err != nil {
			t.Fatal(err)
		}
	}
	if v, release, _ := p.Acquire(); v != 0 { // rollouts sample v0 until v1 is in
		t.Fatalf("sampling %d while v1 loads", v)
	} else {
		release()
	}
	close(gate)
	if a, b := <-loaded, <-loaded; a != 1 || b != 3 {
		t.Fatalf("loaded %d then %d, want 1 then 3", a, b)
	}
	if got := eng.calls(); !reflect.DeepEqual(got, []string{"load t2t-v0", "load t2t-v1", "load t2t-v3"}) {
		t.Fatalf("engine calls %v", got)
	}
	if got := dirs(t, dir); !reflect.DeepEqual(got, []string{"v0", "v1", "v3"}) {
		t.Fatalf("directories %v: the skipped v2 should be gone", got)
	}
}

// TestPusherLoadErrors maps the engine's answers: transient failures are retried and then
// succeed; a 400 is a *EngineError with the URL, status and the engine's message, tried
// once, and leaves the loaded version and the learner's next version alone; a 400 saying the
// adapter is loaded already counts as loaded; an unload of an adapter the engine lost counts
// as done.
func TestPusherLoadErrors(t *testing.T) {
	eng := newFakeEngine(t)
	dir := t.TempDir()
	p := newPusher(t, Config{Kind: VLLM, URL: eng.srv.URL, Dir: dir, Adapters: true, Keep: 1, MaxRetries: 3})
	loaded := runPusher(t, p)
	push(t, p, 0, adapterFiles)
	<-loaded
	// v1: two 503s, then success.
	eng.mu.Lock()
	eng.fail = func(path string, n int) (int, string) {
		if path == "/v1/load_lora_adapter" && n <= 3 {
			return http.StatusServiceUnavailable, "overloaded"
		}
		return 0, ""
	}
	eng.mu.Unlock()
	push(t, p, 1, adapterFiles)
	if <-loaded != 1 {
		t.Fatal("v1 not loaded")
	}
	// v2: a 400 with the engine's JSON error, not retried.
	eng.mu.Lock()
	before := len(eng.got)
	eng.fail = func(path string, n int) (int, string) {
		if path == "/v1/load_lora_adapter" {
			return http.StatusBadRequest, `{"error":{"message":"max_lora_rank 2 is less than the adapter's rank 4","type":"BadRequestError","code":400}}`
		}
		return 0, ""
	}
	eng.mu.Unlock()
	if err := p.Write(2, adapterFiles); err != nil {
		t.Fatal(err)
	}
	err := p.WaitLoaded(context.Background(), 2)
	var ee *EngineError
	if !errors.As(err, &ee) || ee.Op != OpLoadAdapter || ee.URL != eng.srv.URL+"/v1/load_lora_adapter" || ee.StatusCode != 400 ||
		ee.Message != "max_lora_rank 2 is less than the adapter's rank 4" || ee.Attempts != 1 || ee.Transient() {
		t.Fatalf("load error %#v (%v)", ee, err)
	}
	if !strings.Contains(err.Error(), "HTTP 400") || !strings.Contains(err.Error(), ee.URL) {
		t.Fatalf("error text %q", err)
	}
	eng.mu.Lock()
	tries := len(eng.got) - before
	eng.mu.Unlock()
	if tries != 1 {
		t.Fatalf("a 400 was tried %d times", tries)
	}
	if v, release, _ := p.Acquire(); v != 1 {
		t.Fatalf("after the failed load rollouts sample %d, want 1", v)
	} else {
		release()
	}
	// v3 loads again; the adapter was loaded already (an answer lost): counts as loaded.
	eng.mu.Lock()
	eng.fail = nil
	eng.adapters["t2t-v3"] = filepath.Join(dir, "v3")
	delete(eng.adapters, "t2t-v1") // and v1 went missing at the engine: its unload is a 404
	eng.mu.Unlock()
	push(t, p, 3, adapterFiles)
	if <-loaded != 3 {
		t.Fatal("v3 not loaded")
	}
	if got := p.Loaded(); !reflect.DeepEqual(got, []int64{3}) {
		t.Fatalf("loaded %v", got)
	}
	if got := dirs(t, dir); !reflect.DeepEqual(got, []string{"v3"}) {
		t.Fatalf("directories %v", got)
	}
	if st := p.Stats(); st.LoadFailures != 1 || st.UnloadFailures != 0 {
		t.Fatalf("stats %+v", st)
	}
}

// TestClientNoAnswer: an engine that does not answer is a transient *EngineError with no
// status, after MaxRetries further tries.
func TestClientNoAnswer(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := NewClient(Config{Kind: VLLM, URL: url, MaxRetries: 2, Backoff: time.Millisecond}, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = c.LoadAdapter(context.Background(), "t2t-v1", "/x/v1")
	var ee *EngineError
	if !errors.As(err, &ee) || ee.StatusCode != 0 || ee.Attempts != 3 || !ee.Transient() || ee.Err == nil || !strings.Contains(err.Error(), "no answer") {
		t.Fatalf("%#v (%v)", ee, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.UnloadAdapter(ctx, "t2t-v1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

// TestPusherSGLang pushes full checkpoints: each version replaces the engine's weights
// (/update_weights_from_disk at the server root), rollouts sample the base model's name,
// only the newest directory stays, and SGLang's {"success": false} is an *EngineError with
// its message.
func TestPusherSGLang(t *testing.T) {
	eng := newFakeEngine(t)
	dir := t.TempDir()
	p := newPusher(t, Config{Kind: SGLang, URL: eng.srv.URL + "/v1", Dir: dir, Model: "qwen"})
	if p.ModelFor(7) != "qwen" || p.ModelPrefix() != "" || p.Adapters() {
		t.Fatalf("model %q prefix %q", p.ModelFor(7), p.ModelPrefix())
	}
	loaded := runPusher(t, p)
	for v := int64(0); v < 3; v++ {
		push(t, p, v, checkpointFiles)
		<-loaded
	}
	if got := eng.calls(); !reflect.DeepEqual(got, []string{"update v0", "update v1", "update v2"}) {
		t.Fatalf("engine calls %v", got)
	}
	if eng.weights != filepath.Join(dir, "v2") || !reflect.DeepEqual(p.Loaded(), []int64{2}) {
		t.Fatalf("engine weights %q, loaded %v", eng.weights, p.Loaded())
	}
	if got := dirs(t, dir); !reflect.DeepEqual(got, []string{"v2"}) {
		t.Fatalf("directories %v", got)
	}
	// A checkpoint SGLang cannot read: 400 {"success": false, "message"}.
	if err := p.Write(3, func(string) error { return nil }); err != nil {
		t.Fatal(err)
	}
	err := p.WaitLoaded(context.Background(), 3)
	var ee *EngineError
	if !errors.As(err, &ee) || ee.Op != OpUpdateWeights || ee.StatusCode != 400 || !strings.HasPrefix(ee.Message, "Failed to get weights iterator") ||
		ee.URL != eng.srv.URL+"/update_weights_from_disk" {
		t.Fatalf("%#v (%v)", ee, err)
	}
	// 200 with "success": false is a failure too.
	eng.mu.Lock()
	eng.fail = func(string, int) (int, string) {
		return http.StatusOK, `{"success":false,"message":"weights do not match"}`
	}
	eng.mu.Unlock()
	c, _ := NewClient(Config{Kind: SGLang, URL: eng.srv.URL}, nil)
	if _, err := c.UpdateWeights(context.Background(), "/x"); !errors.As(err, &ee) || ee.Message != "weights do not match" {
		t.Fatalf("success false: %v", err)
	}
}

// TestPusherWriteAtomic: a version whose writer fails leaves no directory and nothing to
// load; a version directory appears whole.
func TestPusherWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	p := newPusher(t, Config{Kind: T2T, URL: "http://127.0.0.1:1", Dir: dir, Adapters: true})
	boom := errors.New("disk full")
	err := p.Write(1, func(d string) error {
		if err := adapterFiles(d); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) || !strings.Contains(err.Error(), "version 1") {
		t.Fatalf("Write: %v", err)
	}
	if got := dirs(t, dir); len(got) != 0 {
		t.Fatalf("a failed write left %v", got)
	}
	if err := p.Load(context.Background(), 1); err == nil || !strings.Contains(err.Error(), "not written") {
		t.Fatalf("Load of an unwritten version: %v", err)
	}
}

// TestConfigValidate: each bad setting names its field.
func TestConfigValidate(t *testing.T) {
	ok := Config{Kind: VLLM, URL: "http://h:8000/v1", Dir: "/d", Adapters: true}
	for _, c := range []struct {
		name  string
		edit  func(*Config)
		field string
	}{
		{"ok", func(*Config) {}, ""},
		{"t2t", func(c *Config) { c.Kind = "T2T" }, ""},
		{"sglang", func(c *Config) { c.Kind, c.Adapters, c.Model = SGLang, false, "m" }, ""},
		{"kind", func(c *Config) { c.Kind = "tgi" }, "Kind"},
		{"no kind", func(c *Config) { c.Kind = "" }, "Kind"},
		{"url scheme", func(c *Config) { c.URL = "ftp://h/v1" }, "URL"},
		{"url host", func(c *Config) { c.URL = "http:///v1" }, "URL"},
		{"url query", func(c *Config) { c.URL = "http://h/v1?x=1" }, "URL"},
		{"dir", func(c *Config) { c.Dir = " " }, "Dir"},
		{"vllm full", func(c *Config) { c.Adapters = false }, "Adapters"},
		{"t2t full", func(c *Config) { c.Kind, c.Adapters, c.Model = T2T, false, "base" }, ""},
		{"t2t full without model", func(c *Config) { c.Kind, c.Adapters = T2T, false }, "Model"},
		{"sglang adapters", func(c *Config) { c.Kind, c.Model = SGLang, "m" }, "Adapters"},
		{"sglang model", func(c *Config) { c.Kind, c.Adapters = SGLang, false }, "Model"},
		{"keep", func(c *Config) { c.Keep = -1 }, "Keep"},
	} {
		cfg := ok
		c.edit(&cfg)
		_, err := New(cfg, nil)
		var ce *fielderr.Error
		switch {
		case c.field == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.field != "" && (!errors.As(err, &ce) || ce.Field != c.field || !errors.Is(err, ErrConfig)):
			t.Errorf("%s: %v, want a field error about %s", c.name, err, c.field)
		}
	}
}

// TestRoot: the engine URL may name the server or its /v1 API root.
func TestRoot(t *testing.T) {
	for in, want := range map[string]string{
		"http://h:8000": "http://h:8000", "http://h:8000/": "http://h:8000", "http://h:8000/v1": "http://h:8000",
		"https://h/v1/": "https://h", "http://h/api/v1": "http://h/api", "http://h/api": "http://h/api",
	} {
		if got, err := root(in); err != nil || got != want {
			t.Errorf("root(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
