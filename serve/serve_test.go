package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/textpolicy"
	"github.com/t2t-lab/t2t/learner/tokenizer"
	"github.com/t2t-lab/t2t/serve"
)

func srvChatParams(model string, seed int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:       model,
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("You plan paths."), openai.UserMessage("Agent 0 starts at (0, 0).")},
		N:           openai.Int(2),
		MaxTokens:   openai.Int(12),
		Seed:        openai.Int(seed),
		Temperature: openai.Float(1),
		Logprobs:    openai.Bool(true),
		TopLogprobs: openai.Int(3),
	}
}

// srvIDs reads "token_id:N" log-prob tokens.
func srvIDs(t *testing.T, lps []openai.ChatCompletionTokenLogprob) ([]int32, []float64) {
	t.Helper()
	var ids []int32
	var lp []float64
	for _, e := range lps {
		v, err := strconv.Atoi(strings.TrimPrefix(e.Token, "token_id:"))
		if err != nil {
			t.Fatalf("token %q is not an id", e.Token)
		}
		ids = append(ids, int32(v))
		lp = append(lp, e.Logprob)
	}
	return ids, lp
}

// srvText is the content a completion's ids decode to: control tokens and the final stop
// token left out.
func srvText(lm *textpolicy.LM, ids []int32) string {
	var keep []int32
	for _, id := range lm.TrimStop(ids) {
		if !lm.Tok.IsSpecial(id) {
			keep = append(keep, id)
		}
	}
	return lm.Tok.Decode(keep)
}

// srvModelLogProb is log softmax(logits)[id] at each completion position, recomputed by a full
// forward pass.
func srvModelLogProbs(t *testing.T, lm *textpolicy.LM, prompt, ids []int32) []float64 {
	t.Helper()
	seq := append(slices.Clone(prompt), ids...)
	logits, err := lm.Model.Logits([][]int32{seq})
	if err != nil {
		t.Fatal(err)
	}
	v := lm.Model.Config().VocabSize
	out := make([]float64, len(ids))
	for k, id := range ids {
		row := logits[0][(len(prompt)-1+k)*v : (len(prompt)+k)*v]
		mx := math.Inf(-1)
		for _, x := range row {
			mx = max(mx, float64(x))
		}
		var s float64
		for _, x := range row {
			s += math.Exp(float64(x) - mx)
		}
		out[k] = float64(row[id]) - mx - math.Log(s)
	}
	return out
}

func TestModelsEndpoint(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, _, c := srvStart(t, lm, serve.Options{})
	ctx := context.Background()
	page, err := c.Models.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Data) != 1 || page.Data[0].ID != "tiny" || page.Data[0].OwnedBy != "t2t" {
		t.Fatalf("models %+v; want the one model \"tiny\" (the directory's name)", page.Data)
	}
	if m, err := c.Models.Get(ctx, "tiny"); err != nil || m.ID != "tiny" {
		t.Fatalf("get tiny: %v %+v", err, m)
	}
	_, err = c.Models.Get(ctx, "gpt-5")
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 404 || ae.Code != "model_not_found" {
		t.Fatalf("unknown model: %v", err)
	}
}

// Chat completions: n choices, content = the decoded token ids, log-probs = the model's,
// the same seed gives the same answer.
func TestChatCompletion(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, _, c := srvStart(t, lm, serve.Options{})
	ctx := context.Background()
	p := srvChatParams("tiny", 7)
	asIDs := option.WithJSONSet("return_tokens_as_token_ids", true)
	res, err := c.Chat.Completions.New(ctx, p, asIDs)
	if err != nil {
		t.Fatal(err)
	}
	prompt := lm.Tok.Encode(tokenizer.ChatPrompt([]tokenizer.Message{{Role: "system", Content: "You plan paths."}, {Role: "user", Content: "Agent 0 starts at (0, 0)."}}, true, true))
	if res.Object != "chat.completion" || res.Model != "tiny" || len(res.Choices) != 2 || res.Usage.PromptTokens != int64(len(prompt)) {
		t.Fatalf("response %s", res.RawJSON())
	}
	total := 0
	for i, ch := range res.Choices {
		ids, lps := srvIDs(t, ch.Logprobs.Content)
		total += len(ids)
		if int(ch.Index) != i || ch.Message.Role != "assistant" || len(ids) == 0 || len(ids) > 12 {
			t.Fatalf("choice %d: %s", i, ch.RawJSON())
		}
		if want := srvText(lm, ids); ch.Message.Content != want {
			t.Fatalf("choice %d: content %q, token ids decode to %q", i, ch.Message.Content, want)
		}
		if (ch.FinishReason == "length") != (len(ids) == 12 && !lm.IsStop(ids[len(ids)-1])) {
			t.Fatalf("choice %d: finish %q after %d tokens", i, ch.FinishReason, len(ids))
		}
		for k, want := range srvModelLogProbs(t, lm, prompt, ids) {
			if math.Abs(lps[k]-want) > 1e-4 {
				t.Fatalf("choice %d token %d: log-prob %v, model %v", i, k, lps[k], want)
			}
			top := ch.Logprobs.Content[k].TopLogprobs
			if len(top) != 3 || top[0].Logprob < top[1].Logprob || top[1].Logprob < top[2].Logprob || lps[k] > top[0].Logprob+1e-6 {
				t.Fatalf("choice %d token %d: top %+v for log-prob %v", i, k, top, lps[k])
			}
		}
	}
	if res.Usage.CompletionTokens != int64(total) || res.Usage.TotalTokens != int64(total+len(prompt)) {
		t.Fatalf("usage %+v for %d completion tokens", res.Usage, total)
	}
	again, err := c.Chat.Completions.New(ctx, p, asIDs)
	if err != nil {
		t.Fatal(err)
	}
	other := p
	other.Seed = openai.Int(8)
	diff, err := c.Chat.Completions.New(ctx, other, asIDs)
	if err != nil {
		t.Fatal(err)
	}
	for i := range res.Choices {
		if again.Choices[i].Message.Content != res.Choices[i].Message.Content {
			t.Fatalf("seed 7 twice: choice %d differs", i)
		}
	}
	if diff.Choices[0].Message.Content == res.Choices[0].Message.Content && diff.Choices[1].Message.Content == res.Choices[1].Message.Content {
		t.Fatal("seeds 7 and 8 gave the same completions")
	}
	// Token strings without the id option are the tokens' text.
	plain, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	ids, _ := srvIDs(t, res.Choices[0].Logprobs.Content)
	for k, e := range plain.Choices[0].Logprobs.Content {
		if b := lm.Tok.DecodeBytes(ids[k : k+1]); len(e.Bytes) != len(b) {
			t.Fatalf("token %d: bytes %v, want %v", k, e.Bytes, b)
		}
	}
}

// A streamed chat completion carries the same text, log-probs and finish reasons as the
// non-streamed one with the same seed.
func TestChatCompletionStream(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, _, c := srvStart(t, lm, serve.Options{})
	ctx := context.Background()
	p := srvChatParams("tiny", 11)
	p.MaxTokens = openai.Int(20)
	want, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	content := map[int64]string{}
	finish := map[int64]string{}
	lps := map[int64]int{}
	chunks, usageChunks := 0, 0
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		chunks++
		if ch.Object != "chat.completion.chunk" || ch.ID == "" {
			t.Fatalf("chunk %s", ch.RawJSON())
		}
		if ch.JSON.Usage.Valid() && ch.Usage.TotalTokens > 0 {
			usageChunks++
			if ch.Usage.CompletionTokens != want.Usage.CompletionTokens || len(ch.Choices) != 0 {
				t.Fatalf("usage chunk %s, want %+v", ch.RawJSON(), want.Usage)
			}
		}
		for _, cc := range ch.Choices {
			content[cc.Index] += cc.Delta.Content
			lps[cc.Index] += len(cc.Logprobs.Content)
			if cc.FinishReason != "" {
				finish[cc.Index] = cc.FinishReason
			}
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if usageChunks != 1 || chunks < 4 {
		t.Fatalf("%d chunks, %d with usage", chunks, usageChunks)
	}
	for i, ch := range want.Choices {
		if content[int64(i)] != ch.Message.Content || finish[int64(i)] != ch.FinishReason || lps[int64(i)] != len(ch.Logprobs.Content) {
			t.Fatalf("choice %d: streamed %q (%s, %d log-probs), non-streamed %q (%s, %d)", i,
				content[int64(i)], finish[int64(i)], lps[int64(i)], ch.Message.Content, ch.FinishReason, len(ch.Logprobs.Content))
		}
		if len(acc.Choices) > i && acc.Choices[i].Message.Content != ch.Message.Content {
			t.Fatalf("choice %d: the SDK's accumulator read %q", i, acc.Choices[i].Message.Content)
		}
	}
}

// Stop strings cut the text before the first occurrence, in both modes.
func TestStopStrings(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, _, c := srvStart(t, lm, serve.Options{})
	ctx := context.Background()
	p := srvChatParams("tiny", 3)
	p.N = openai.Int(1)
	p.MaxTokens = openai.Int(24)
	full, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	text := full.Choices[0].Message.Content
	if len(text) < 12 {
		t.Skipf("completion %q too short to cut", text) // not expected with 24 tokens of a 2k-token BPE
	}
	stop := text[len(text)/2 : len(text)/2+3]
	cut := text[:strings.Index(text, stop)]
	p.Stop = openai.ChatCompletionNewParamsStopUnion{OfStringArray: []string{"\x00never", stop}}
	res, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Choices[0].Message.Content != cut || res.Choices[0].FinishReason != "stop" {
		t.Fatalf("stop %q: %q (%s), want %q", stop, res.Choices[0].Message.Content, res.Choices[0].FinishReason, cut)
	}
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	got := ""
	for stream.Next() {
		for _, cc := range stream.Current().Choices {
			got += cc.Delta.Content
		}
	}
	if err := stream.Err(); err != nil || got != cut {
		t.Fatalf("streamed with stop %q: %q, %v; want %q", stop, got, err, cut)
	}
}

func TestCompletions(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, _, c := srvStart(t, lm, serve.Options{})
	ctx := context.Background()
	p := openai.CompletionNewParams{
		Model:     "tiny",
		Prompt:    openai.CompletionNewParamsPromptUnion{OfArrayOfStrings: []string{"Agent 0:", "Agent 1: UP"}},
		N:         openai.Int(2),
		MaxTokens: openai.Int(8),
		Seed:      openai.Int(5),
		Logprobs:  openai.Int(2),
		Echo:      openai.Bool(true),
	}
	res, err := c.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if res.Object != "text_completion" || len(res.Choices) != 4 {
		t.Fatalf("response %s", res.RawJSON())
	}
	for i, ch := range res.Choices {
		prompt := p.Prompt.OfArrayOfStrings[i/2]
		lp := ch.Logprobs
		if !strings.HasPrefix(ch.Text, prompt) || len(lp.Tokens) == 0 || len(lp.Tokens) != len(lp.TokenLogprobs) || len(lp.TopLogprobs) != len(lp.Tokens) {
			t.Fatalf("choice %d: %s", i, ch.RawJSON())
		}
		for k, off := range lp.TextOffset {
			if int(off) < len(prompt) || int(off) > len(ch.Text) || (k > 0 && off < lp.TextOffset[k-1]) {
				t.Fatalf("choice %d: text offsets %v for %q", i, lp.TextOffset, ch.Text)
			}
		}
	}
	// Streaming gives the same texts; token-id prompts work.
	stream := c.Completions.NewStreaming(ctx, p)
	texts := map[int64]string{}
	for stream.Next() {
		for _, ch := range stream.Current().Choices {
			texts[ch.Index] += ch.Text
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	for i, ch := range res.Choices {
		if texts[int64(i)] != ch.Text {
			t.Fatalf("choice %d: streamed %q, non-streamed %q", i, texts[int64(i)], ch.Text)
		}
	}
	ids := lm.Tok.Encode("Agent 0:")
	tp := openai.CompletionNewParams{Model: "tiny", MaxTokens: openai.Int(8), Seed: openai.Int(5), N: openai.Int(2),
		Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{int64(ids[0]), int64(ids[1])}}}
	if len(ids) != 2 {
		tp.Prompt.OfArrayOfTokens = nil
		for _, id := range ids {
			tp.Prompt.OfArrayOfTokens = append(tp.Prompt.OfArrayOfTokens, int64(id))
		}
	}
	byIDs, err := c.Completions.New(ctx, tp)
	if err != nil {
		t.Fatal(err)
	}
	tp.Prompt = openai.CompletionNewParamsPromptUnion{OfString: openai.String("Agent 0:")}
	byText, err := c.Completions.New(ctx, tp)
	if err != nil {
		t.Fatal(err)
	}
	for k := range 2 {
		if byIDs.Choices[k].Text != byText.Choices[k].Text {
			t.Fatalf("token-id prompt, choice %d: %q, text prompt gave %q", k, byIDs.Choices[k].Text, byText.Choices[k].Text)
		}
	}
}

// Errors come back in OpenAI's shape with 400, 404, 405 or 422.
func TestErrors(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	_, hs, c := srvStart(t, lm, serve.Options{MaxN: 4})
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mod    func(p *openai.ChatCompletionNewParams)
		opts   []option.RequestOption
		status int
		code   string
		param  string
	}{
		{"temperature", func(p *openai.ChatCompletionNewParams) { p.Temperature = openai.Float(3) }, nil, 400, "invalid_value", "temperature"},
		{"top_p", func(p *openai.ChatCompletionNewParams) { p.TopP = openai.Float(1.5) }, nil, 400, "invalid_value", "top_p"},
		{"n", func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(5) }, nil, 400, "invalid_value", "n"},
		{"top_logprobs alone", func(p *openai.ChatCompletionNewParams) { p.Logprobs = openai.Bool(false) }, nil, 400, "invalid_value", "top_logprobs"},
		{"model", func(p *openai.ChatCompletionNewParams) { p.Model = "gpt-5" }, nil, 404, "model_not_found", "model"},
		{"context", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(1 << 20) }, nil, 422, "context_length_exceeded", "max_tokens"},
		{"no messages", func(p *openai.ChatCompletionNewParams) { p.Messages = nil }, nil, 400, "invalid_value", "messages"},
		{"role", nil, []option.RequestOption{option.WithJSONSet("messages", []any{map[string]any{"role": "wizard", "content": "x"}})}, 400, "invalid_value", "messages[0].role"},
		{"image", nil, []option.RequestOption{option.WithJSONSet("messages", []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "image_url"}}}})}, 422, "unsupported", "messages[0].content[0].type"},
		{"tools", nil, []option.RequestOption{option.WithJSONSet("tools", []any{map[string]any{"type": "function"}})}, 422, "unsupported", "tools"},
		{"type", nil, []option.RequestOption{option.WithJSONSet("n", "two")}, 400, "invalid_value", "n"},
	} {
		p := srvChatParams("tiny", 1)
		if tc.mod != nil {
			tc.mod(&p)
		}
		_, err := c.Chat.Completions.New(ctx, p, tc.opts...)
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != tc.status || ae.Code != tc.code || ae.Param != tc.param || ae.Message == "" {
			t.Fatalf("%s: %v; want %d %s on %s", tc.name, err, tc.status, tc.code, tc.param)
		}
	}
	_, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, 99999}}})
	var ae *openai.Error
	if !errors.As(err, &ae) || ae.StatusCode != 422 || ae.Code != "invalid_token" {
		t.Fatalf("token id outside the vocabulary: %v", err)
	}
	for _, tc := range []struct {
		method, path, body string
		status             int
		typ                string
	}{
		{"POST", "/v1/chat/completions", "{not json", 400, "invalid_request_error"},
		{"POST", "/v1/completions", `{"model":"tiny"}`, 400, "invalid_request_error"},
		{"GET", "/v1/chat/completions", "", 405, "invalid_request_error"},
		{"POST", "/v1/embeddings", "{}", 404, "not_found_error"},
	} {
		req, err := http.NewRequest(tc.method, hs.URL+tc.path, strings.NewReader(tc.body))
		if err != nil {
			t.Fatal(err)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var e struct {
			Error struct {
				Message string `json:"message"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		if resp.StatusCode != tc.status || json.Unmarshal(body, &e) != nil || e.Error.Type != tc.typ || e.Error.Message == "" ||
			resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s %s: %d %s", tc.method, tc.path, resp.StatusCode, body)
		}
	}
}

// Swap serves a new policy version from the next request on.
func TestSwap(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	s, _, c := srvStart(t, lm, serve.Options{ModelName: "policy"})
	ctx := context.Background()
	p := srvChatParams("policy", 4)
	before, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if rev := s.Swap(srvCheckpoint(t, seed+1)); rev != 1 {
		t.Fatalf("revision %d after one swap", rev)
	}
	after, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	fingerprint := func(raw string) string {
		var r struct {
			SystemFingerprint string `json:"system_fingerprint"`
		}
		if err := json.Unmarshal([]byte(raw), &r); err != nil {
			t.Fatal(err)
		}
		return r.SystemFingerprint
	}
	if fb, fa := fingerprint(before.RawJSON()), fingerprint(after.RawJSON()); fb != "t2t-r0" || fa != "t2t-r1" || after.Model != "policy" {
		t.Fatalf("fingerprints %q → %q, model %q", fb, fa, after.Model)
	}
	if before.Choices[0].Message.Content == after.Choices[0].Message.Content && before.Choices[1].Message.Content == after.Choices[1].Message.Content {
		t.Fatal("other weights, same seed, same completions: the swap did not take")
	}
	// Reload from the first model's directory brings its completions back.
	if rev, err := s.Reload(context.Background(), engine.Spec{}, lm.Dir); err != nil || rev != 2 {
		t.Fatalf("reload: revision %d, %v", rev, err)
	}
	back, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if back.Choices[0].Message.Content != before.Choices[0].Message.Content {
		t.Fatal("reloading the first checkpoint did not restore its completions")
	}
	if _, err := s.Reload(context.Background(), engine.Spec{}, t.TempDir()); !errors.Is(err, textpolicy.ErrTokenizer) {
		t.Fatalf("reload of an empty directory: %v", err)
	}
	if cur, rev := s.Current(); rev != 2 || cur.Dir != lm.Dir {
		t.Fatalf("after a failed reload: revision %d, dir %s", rev, cur.Dir)
	}
}

// Requests, swaps and learner updates on the served model interleave safely (run with -race).
func TestConcurrentRequestsSwapsAndUpdates(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	s, _, c := srvStart(t, lm, serve.Options{})
	pol, err := textpolicy.New(lm, textpolicy.Options{MaxNewTokens: 4})
	if err != nil {
		t.Fatal(err)
	}
	in, err := env.GenerateSeeded(3, 1, 2, false, seed)
	if err != nil {
		t.Fatal(err)
	}
	ro, err := pol.Play([]*env.Instance{in}, 2, 1, seed)
	if err != nil {
		t.Fatal(err)
	}
	group := learner.ReplayedGroup{Instance: in, Rewards: []float32{1, 0}}
	for _, ep := range ro.Episodes {
		group.Actions = append(group.Actions, ro.Actions[ep.Lo:ep.Hi])
		group.LogProbs = append(group.LogProbs, ro.LogProbs[ep.Lo:ep.Hi])
	}
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := srvChatParams("tiny", int64(i))
			p.MaxTokens = openai.Int(4)
			if _, err := c.Chat.Completions.New(context.Background(), p); err != nil {
				errs <- err
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		if _, _, err := pol.Update([]learner.ReplayedGroup{group}); err != nil {
			errs <- err
		}
	}()
	s.Swap(lm)
	s.Swap(lm)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if _, rev := s.Current(); rev != 2 || pol.Version() != 1 {
		t.Fatalf("revision %d, policy version %d", rev, pol.Version())
	}
}

// TestNoThinkingDefault: Options.NoThinking renders a chat prompt with Qwen3's empty think block
// when the request says nothing, and a request's chat_template_kwargs.enable_thinking still
// decides for itself on either server.
func TestNoThinkingDefault(t *testing.T) {
	seed := srvTestSeed(t)
	lm := srvCheckpoint(t, seed)
	msgs := []tokenizer.Message{{Role: "system", Content: "You plan paths."}, {Role: "user", Content: "Agent 0 starts at (0, 0)."}}
	promptLen := func(thinking bool) int64 {
		return int64(len(lm.Tok.Encode(tokenizer.ChatPrompt(msgs, true, thinking))))
	}
	if promptLen(true) == promptLen(false) {
		t.Fatal("the two renderings have the same length: the test shows nothing")
	}
	for _, noThinking := range []bool{false, true} {
		_, _, c := srvStart(t, lm, serve.Options{NoThinking: noThinking})
		for _, kw := range []string{"", "true", "false"} {
			p := srvChatParams("tiny", 7)
			p.MaxTokens = openai.Int(1)
			var opts []option.RequestOption
			want := !noThinking
			if kw != "" {
				opts = append(opts, option.WithJSONSet("chat_template_kwargs", map[string]any{"enable_thinking": kw == "true"}))
				want = kw == "true"
			}
			res, err := c.Chat.Completions.New(context.Background(), p, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if res.Usage.PromptTokens != promptLen(want) {
				t.Errorf("NoThinking %v, enable_thinking %q: %d prompt tokens, want %d (thinking %v)", noThinking, kw, res.Usage.PromptTokens, promptLen(want), want)
			}
		}
	}
}
