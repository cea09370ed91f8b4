package serve_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/t2t-lab/t2t/internal/genmetrics"
	"github.com/t2t-lab/t2t/internal/testutil"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/serve"
)

// srvMetric reads one unlabelled metric from a server's GET /metrics (NaN when absent).
func srvMetric(t *testing.T, base, name string) float64 {
	t.Helper()
	res, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", res.Status)
	}
	sc := bufio.NewScanner(res.Body)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatal(err)
			}
			return x
		}
	}
	return math.NaN()
}

// With --gen-slots, concurrent greedy requests get the ids and log-probs they get one at a
// time without a scheduler, and /metrics reports the scheduler's counters.
func TestSchedulerServesConcurrentRequests(t *testing.T) {
	seed := srvTestSeed(t)
	_, _, plain := srvStart(t, srvCheckpoint(t, seed), serve.Options{})
	lm := srvCheckpoint(t, seed)
	t.Cleanup(func() { _ = lm.Close() }) // stops the scheduler
	_, hs, batched := srvStart(t, lm, serve.Options{GenSlots: 8, GenSlotLen: 96})
	if v := srvMetric(t, hs.URL, genmetrics.Slots); v != 8 {
		t.Fatalf("%s = %v, want 8", genmetrics.Slots, v)
	}
	const n = 6
	params := make([]openai.ChatCompletionNewParams, n)
	for i := range params {
		p := srvChatParams("tiny", int64(i))
		p.Messages = append(p.Messages, openai.UserMessage(strings.Repeat("go ", i+1)))
		p.Temperature, p.N, p.MaxTokens = openai.Float(0), openai.Int(int64(1+i%2)), openai.Int(int64(6+i))
		params[i] = p
	}
	ctx := context.Background()
	asIDs := option.WithJSONSet("return_tokens_as_token_ids", true)
	want := make([]*openai.ChatCompletion, n)
	for i, p := range params {
		r, err := plain.Chat.Completions.New(ctx, p, asIDs)
		if err != nil {
			t.Fatal(err)
		}
		want[i] = r
	}
	got := make([]*openai.ChatCompletion, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i, p := range params {
		wg.Go(func() { got[i], errs[i] = batched.Chat.Completions.New(ctx, p, asIDs) })
	}
	wg.Wait()
	for i := range params {
		if errs[i] != nil {
			t.Fatalf("request %d: %v", i, errs[i])
		}
		if len(got[i].Choices) != len(want[i].Choices) {
			t.Fatalf("request %d: %d choices, want %d", i, len(got[i].Choices), len(want[i].Choices))
		}
		for c := range want[i].Choices {
			gi, gl := srvIDs(t, got[i].Choices[c].Logprobs.Content)
			wi, wl := srvIDs(t, want[i].Choices[c].Logprobs.Content)
			if !slices.Equal(gi, wi) {
				t.Errorf("request %d choice %d: ids %v with the scheduler, %v without", i, c, gi, wi)
			}
			for k := range min(len(gl), len(wl)) {
				if math.Abs(gl[k]-wl[k]) > 1e-5 {
					t.Errorf("request %d choice %d token %d: log-prob %v with the scheduler, %v without", i, c, k, gl[k], wl[k])
				}
			}
			if got[i].Choices[c].FinishReason != want[i].Choices[c].FinishReason {
				t.Errorf("request %d choice %d: finish %q, want %q", i, c, got[i].Choices[c].FinishReason, want[i].Choices[c].FinishReason)
			}
		}
	}
	if v := srvMetric(t, hs.URL, genmetrics.Requests); v != n {
		t.Errorf("%s = %v, want %d", genmetrics.Requests, v, n)
	}
	steps, rows := srvMetric(t, hs.URL, genmetrics.Steps), srvMetric(t, hs.URL, genmetrics.StepRows)
	if !(steps > 0 && rows >= steps) {
		t.Errorf("%s = %v, %s = %v", genmetrics.Steps, steps, genmetrics.StepRows, rows)
	}
	t.Logf("%v decode steps, %.2f rows per step", steps, rows/steps)
	if v := srvMetric(t, hs.URL, serve.MetricRunning); v != 0 {
		t.Errorf("%s = %v after every request ended", serve.MetricRunning, v)
	}
}

// A streaming client that disconnects frees its slot at the next decode step: the request
// ends as abandoned long before its max_tokens, and the pool is empty again.
func TestSchedulerFreesSlotOfLeavingClient(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpointOf(t, seed, func(c *hfmodel.Config) { c.MaxPositionEmbeddings = 4096 })
	t.Cleanup(func() { _ = lm.Close() })
	var logs testutil.SyncBuffer
	_, hs, _ := srvStart(t, lm, serve.Options{GenSlots: 2, GenSlotLen: 4096, MaxTokens: 4000, MaxMemory: 16 << 30, // not the free memory's share
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const maxTokens = 4000
	ctx, cancel := context.WithCancel(context.Background())
	res := srvStreamStarted(t, ctx, hs.URL, fmt.Sprintf(`{"model":"tiny","stream":true,"temperature":0,"max_tokens":%d,"prompt":"go"}`, maxTokens))
	cancel() // the client leaves
	_, _ = io.Copy(io.Discard, res)
	deadline := time.Now().Add(2 * time.Minute) // liveness, not speed
	for srvMetric(t, hs.URL, genmetrics.Requests) != 1 || srvMetric(t, hs.URL, genmetrics.InUse) != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("the slot was not freed; log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	if tok := srvMetric(t, hs.URL, genmetrics.Tokens); tok >= maxTokens {
		t.Errorf("%v tokens sampled: the request ran to its max_tokens after its client left", tok)
	}
	for !strings.Contains(logs.String(), "stream abandoned") { // the handler logs after the scheduler let go
		if time.Now().After(deadline) {
			t.Fatalf("no abandoned stream in the log:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A pool that does not fit the memory budget is refused when the server is built.
func TestSchedulerPoolOverBudget(t *testing.T) {
	lm := srvCheckpoint(t, srvTestSeed(t))
	_, err := serve.New(lm, serve.Options{GenSlots: 64, GenSlotLen: 256, MaxMemory: 1 << 20})
	if err == nil || !strings.Contains(err.Error(), "KV pool") {
		t.Fatalf("err = %v, want the pool over the budget", err)
	}
	if lm.SchedulerSlots() != 0 {
		t.Error("the refused options left a scheduler on the model")
	}
	if _, err := serve.New(lm, serve.Options{GenSlots: -1}); err == nil {
		t.Error("GenSlots -1 accepted")
	}
}

// srvStreamStarted posts a streaming completion body to base and returns its stream once the
// first token's chunk has come (the row decodes in a slot); the test's cleanup closes it.
func srvStreamStarted(t *testing.T, ctx context.Context, base, body string) *bufio.Reader {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/completions", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { res.Body.Close() })
	rd := bufio.NewReader(res.Body)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			t.Fatalf("%s: the stream ended before its first token: %v", body, err)
		}
		if strings.HasPrefix(line, "data: {") && strings.Contains(line, `"text"`) {
			return rd
		}
	}
}
