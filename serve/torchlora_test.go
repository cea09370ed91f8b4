package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/t2t-lab/t2t/internal/genmetrics"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/torch"
	"github.com/t2t-lab/t2t/serve"
)

// srvRequireTorch skips where no Python imports torch (fails with T2T_REQUIRE_TORCH=1, as in CI).
func srvRequireTorch(t *testing.T) {
	t.Helper()
	if _, err := torch.FindPython(t.Context(), ""); err != nil {
		if os.Getenv("T2T_REQUIRE_TORCH") == "1" {
			t.Fatalf("T2T_REQUIRE_TORCH=1 but %v", err)
		}
		t.Skipf("skipping: %v", err)
	}
}

// t2t serve on the torch engine serves LoRA adapters through vLLM's runtime API, also through
// its generation scheduler: an adapter's greedy answers equal the gomlx engine's (ids, and
// log-probs within 1e-4), and after the unload the base model's answers are what they were.
func TestTorchServesAdapters(t *testing.T) {
	srvRequireTorch(t)
	seed := srvTestSeed(t)
	glm := srvCheckpoint(t, seed)
	dirA := srvAdapter(t, glm.Dir, seed+1)
	tlm, err := textpolicy.OpenLM(t.Context(), engine.Spec{Kind: engine.Torch, Threads: 1}, glm.Dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tlm.Close() })
	_, ghs, gc := srvStart(t, glm, serve.Options{})
	_, ths, tc := srvStart(t, tlm, serve.Options{GenSlots: 4, GenSlotLen: 128})
	asIDs := option.WithJSONSet("return_tokens_as_token_ids", true)
	sample := func(c openai.Client, model string) ([]int32, []float64) {
		t.Helper()
		p := srvChatParams(model, 3)
		p.Temperature, p.N = openai.Float(0), openai.Int(1)
		res, err := c.Chat.Completions.New(context.Background(), p, asIDs)
		if err != nil {
			t.Fatalf("model %s: %v", model, err)
		}
		return srvIDs(t, res.Choices[0].Logprobs.Content)
	}
	same := func(what string, gi, ti []int32, gl, tl []float64) {
		t.Helper()
		if !slices.Equal(gi, ti) {
			t.Fatalf("%s: torch ids %v, gomlx %v", what, ti, gi)
		}
		for k := range gl {
			if math.Abs(gl[k]-tl[k]) > 1e-4 {
				t.Fatalf("%s token %d: torch log-prob %v, gomlx %v", what, k, tl[k], gl[k])
			}
		}
	}
	gBase, gBaseLP := sample(gc, "tiny")
	tBase, tBaseLP := sample(tc, "tiny")
	same("base", gBase, tBase, gBaseLP, tBaseLP)
	for _, hs := range []string{ghs.URL, ths.URL} {
		if code, body := srvPostKey(t, hs+"/v1/load_lora_adapter", "", loraBody("a", dirA)); code != http.StatusOK {
			t.Fatalf("load on %s: %d %s", hs, code, body)
		}
	}
	gA, gALP := sample(gc, "a")
	tA, tALP := sample(tc, "a")
	same("adapter a", gA, tA, gALP, tALP)
	if slices.Equal(tALP, tBaseLP) {
		t.Fatal("the adapter's answer equals the base model's: it was not applied")
	}
	if _, lp := sample(tc, "tiny"); !slices.Equal(lp, tBaseLP) {
		t.Errorf("base after an adapter request: %v, want %v", lp, tBaseLP)
	}
	if code, body := srvPostKey(t, ths.URL+"/v1/unload_lora_adapter", "", `{"lora_name":"a"}`); code != http.StatusOK {
		t.Fatalf("unload: %d %s", code, body)
	}
	if _, lp := sample(tc, "tiny"); !slices.Equal(lp, tBaseLP) {
		t.Errorf("base after the unload: %v, want %v", lp, tBaseLP)
	}
	if v := srvMetric(t, ths.URL, genmetrics.Requests); v != 4 {
		t.Errorf("%s = %v on the torch server, want its 4 generations", genmetrics.Requests, v)
	}
}

// kill -9 of the torch worker while a batch of streaming requests decodes fails each of them
// with the worker's death in its error event, the server stays up, and the next request runs
// on a new worker (the model loaded again from its directory).
func TestTorchWorkerKilledMidBatch(t *testing.T) {
	srvRequireTorch(t)
	seed := srvTestSeed(t)
	glm := srvCheckpointOf(t, seed, func(c *hfmodel.Config) { c.MaxPositionEmbeddings = 4096 })
	spec := engine.Spec{Kind: engine.Torch, Threads: 1}
	tlm, err := textpolicy.OpenLM(t.Context(), spec, glm.Dir)
	if err != nil {
		t.Fatal(err)
	}
	load := func(ctx context.Context, dir string) (*textpolicy.LM, error) {
		return textpolicy.OpenLM(ctx, spec, dir)
	}
	// A memory budget of its own: the default is a share of the memory free when the server
	// starts, which a loaded machine may not have for this pool (a CI run at a513cfe failed so).
	srv, hs, c := srvStart(t, tlm, serve.Options{GenSlots: 4, GenSlotLen: 4096, MaxTokens: 4000, MaxMemory: 16 << 30, LoadWeights: load})
	t.Cleanup(func() { cur, _ := srv.Current(); _ = cur.Close() })
	const n = 3
	bodies := make([]*bufio.Reader, n)
	for i := range n {
		bodies[i] = srvStreamStarted(t, t.Context(), hs.URL,
			fmt.Sprintf(`{"model":"tiny","stream":true,"temperature":0,"max_tokens":3000,"prompt":"go %d"}`, i))
	}
	pid := tlm.Model.(*torch.Model).Worker().PID()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for i, rd := range bodies {
		rest, _ := io.ReadAll(rd)
		if !strings.Contains(string(rest), `"error"`) || !strings.Contains(string(rest), "worker died") {
			t.Errorf("request %d after the kill: no worker-died error event in %q", i, tail(string(rest), 300))
		}
	}
	p := srvChatParams("tiny", 5)
	p.N = openai.Int(1)
	if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
		t.Fatalf("the next request: %v", err)
	}
	cur, rev := srv.Current()
	if rev != 1 || cur == tlm || workerPID(cur) == pid {
		t.Errorf("after the kill: revision %d, same model %v: want a new worker", rev, cur == tlm)
	}
}

func workerPID(lm *textpolicy.LM) int {
	if m, ok := lm.Model.(*torch.Model); ok {
		return m.Worker().PID()
	}
	return 0
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
