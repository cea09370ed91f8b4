package textpolicy

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
)

// ClientOptions configure a Client. Zero values take the documented defaults.
type ClientOptions struct {
	// BaseURL is the API root; requests go to POST {BaseURL}/chat/completions (e.g.
	// "http://127.0.0.1:8000/v1" for `t2t serve` or vLLM). Required.
	BaseURL string
	// Model is the model id sent with each request. Required.
	Model string
	// APIKeyEnv names the environment variable that holds the API key, read once by
	// NewClient and sent as "Authorization: Bearer <key>" (never logged). Default
	// "OPENAI_API_KEY"; an unset or empty variable sends no key.
	APIKeyEnv string
	// APIKey is the API key itself; when set, APIKeyEnv is not read.
	APIKey string
	// Name is what Name returns. Default "openai:<Model>".
	Name string
	// Prompt shapes env.RenderPrompt's text (the user message). Zero value: text answers,
	// sum of costs, no coordinate list.
	Prompt env.PromptOptions
	// Thinking, when set, is sent as chat_template_kwargs.enable_thinking (vLLM and `t2t
	// serve` render Qwen3's template with it); nil sends nothing.
	Thinking *bool
	// MaxTokens caps each completion. Default 4096.
	MaxTokens int
	// TopP is sent when in (0, 1); 0 sends nothing.
	TopP float64
	// Reward is the reward of each episode. Default env.DefaultRewardConfig() (when L2 is 0).
	Reward env.RewardConfig
	// Concurrency bounds the requests in flight (one per instance). Default 4.
	Concurrency int
	// MaxRetries is the number of further tries after a failed call (transport error, timeout,
	// HTTP 408, 429 or 5xx; other statuses are not retried). Default 3; negative: none.
	MaxRetries int
	// Backoff is the wait before the first retry, doubled after each further failure and
	// capped at 30 s. Default 500 ms.
	Backoff time.Duration
	// Timeout bounds each call. Default 10 minutes.
	Timeout time.Duration
	// RequireLogProbs asks for per-token log-probs with token ids (logprobs: true and vLLM's
	// return_tokens_as_token_ids: true, which `t2t serve` also honours) and fails with a
	// *LogProbsError when a completion comes back without them. Set it when the rollouts feed
	// a learner; leave it off for evaluation and direct solving, where any endpoint works.
	RequireLogProbs bool
	// HTTPClient sends the requests. Default: a client without its own timeout.
	HTTPClient *http.Client
}

// Client is the text policy behind any OpenAI-compatible chat-completions endpoint (vLLM,
// SGLang, Ollama, hosted APIs, `t2t serve`): for evaluation and direct solving, as the paper
// evaluates GPT/Gemini/Kimi. Play sends one request per instance (n = group size, the
// instance's seed derived from the play seed), at most Concurrency at a time, retrying
// failures with exponential backoff; episodes are judged and rewarded as Policy's are. The
// weights live behind the endpoint, so Update returns ErrNotTrainable; with RequireLogProbs
// the rollout carries the server's token ids and log-probs for a learner elsewhere. It
// implements train.Policy and is safe for concurrent use.
type Client struct {
	o      ClientOptions
	key    string
	url    string
	client *http.Client

	mu    sync.Mutex
	sched env.LengthSchedule
}

// NewClient checks the options and reads the API key from the environment.
func NewClient(o ClientOptions) (*Client, error) {
	u, err := url.Parse(o.BaseURL)
	if o.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "BaseURL", Value: o.BaseURL, Reason: "want an http(s) URL such as http://127.0.0.1:8000/v1"}
	}
	if strings.TrimSpace(o.Model) == "" {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "Model", Value: o.Model, Reason: "required"}
	}
	if o.APIKeyEnv == "" {
		o.APIKeyEnv = "OPENAI_API_KEY"
	}
	if o.Name == "" {
		o.Name = "openai:" + o.Model
	}
	if o.MaxTokens == 0 {
		o.MaxTokens = 4096
	}
	if o.Reward.L2 == 0 {
		o.Reward = env.DefaultRewardConfig()
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	if o.MaxRetries == 0 {
		o.MaxRetries = 3
	}
	o.MaxRetries = max(o.MaxRetries, 0)
	if o.Backoff == 0 {
		o.Backoff = 500 * time.Millisecond
	}
	if o.Timeout == 0 {
		o.Timeout = 10 * time.Minute
	}
	switch {
	case o.MaxTokens < 1:
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "MaxTokens", Value: o.MaxTokens, Reason: "must be ≥ 1"}
	case o.Concurrency < 1:
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "Concurrency", Value: o.Concurrency, Reason: "must be ≥ 1"}
	case math.IsNaN(o.TopP) || o.TopP < 0 || o.TopP > 1:
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "TopP", Value: o.TopP, Reason: "must be in [0, 1]"}
	case o.Timeout < 0 || o.Backoff < 0:
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "Timeout/Backoff", Value: fmt.Sprint(o.Timeout, o.Backoff), Reason: "must be ≥ 0"}
	}
	if err := o.Reward.Validate(); err != nil {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "Reward", Value: o.Reward, Reason: err.Error()}
	}
	c := &Client{o: o, key: cmp.Or(o.APIKey, os.Getenv(o.APIKeyEnv)), url: strings.TrimRight(o.BaseURL, "/") + "/chat/completions", client: o.HTTPClient}
	if c.client == nil {
		c.client = &http.Client{}
	}
	return c, nil
}

// Name implements train.Policy.
func (c *Client) Name() string { return c.o.Name }

// Version implements train.Policy: always 0 (the endpoint's weights are not versioned here).
func (c *Client) Version() int64 { return 0 }

// Update implements train.Policy: the weights live behind the endpoint.
func (c *Client) Update([]learner.ReplayedGroup) (learner.UpdateStats, learner.SignalStats, error) {
	return learner.UpdateStats{}, learner.SignalStats{}, fmt.Errorf("%w: %s serves its own weights", ErrNotTrainable, c.o.Name)
}

// Play implements train.Policy (PlayContext with a background context).
func (c *Client) Play(ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	return c.PlayContext(context.Background(), ins, groupSize, temperature, seed)
}

// PlayModel plays as PlayContext does, naming model instead of Options.Model in every request:
// one client samples each policy version an inference engine serves under its own name (a LoRA
// adapter, "t2t-v3"), with one length schedule for them all. "" names Options.Model.
func (c *Client) PlayModel(ctx context.Context, model string, ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	if strings.TrimSpace(model) == "" {
		model = c.o.Model
	}
	return c.play(ctx, model, ins, groupSize, temperature, seed)
}

// clientChoice is one completion as the endpoint returned it.
type clientChoice struct {
	text   string
	ids    []int32
	lps    []float32
	tokens int
}

// PlayContext plays groupSize completions per instance (see Client); the first failure
// cancels the requests still running and is returned.
func (c *Client) PlayContext(ctx context.Context, ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	return c.play(ctx, c.o.Model, ins, groupSize, temperature, seed)
}

// play is PlayContext with the model id of the requests.
func (c *Client) play(ctx context.Context, model string, ins []*env.Instance, groupSize int, temperature float64, seed uint64) (*learner.Rollout, error) {
	if groupSize < 1 {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "groupSize", Value: groupSize, Reason: "must be ≥ 1"}
	}
	if math.IsNaN(temperature) || temperature < 0 || temperature > 2 {
		return nil, &fielderr.Error{Kind: ErrOptions, Field: "temperature", Value: temperature, Reason: "must be in [0, 2]"}
	}
	c.mu.Lock()
	sched := c.sched
	c.mu.Unlock()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	results := make([][]clientChoice, len(ins))
	var (
		wg       sync.WaitGroup
		errOnce  sync.Once
		firstErr error
	)
	sem := make(chan struct{}, c.o.Concurrency)
	for i, in := range ins {
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			defer func() { <-sem }()
			res, err := c.complete(ctx, model, in, groupSize, temperature, clientSeed(seed, i))
			if err != nil {
				errOnce.Do(func() { firstErr = err; cancel() })
				return
			}
			results[i] = res
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ro := &learner.Rollout{}
	var lengths []int
	for i, in := range ins {
		for _, ch := range results[i] {
			ep := learner.Episode{Instance: in, Lo: len(ro.Actions)}
			ro.Actions = append(ro.Actions, ch.ids...)
			ro.LogProbs = append(ro.LogProbs, ch.lps...)
			ep.Hi = len(ro.Actions)
			ep.Plan = Judge(in, ch.text, &ep.Report)
			ep.Reward = env.Reward(in, &ep.Report, ch.tokens, c.o.Reward, &sched)
			lengths = append(lengths, ch.tokens)
			ro.Episodes = append(ro.Episodes, ep)
		}
	}
	if temperature > 0 {
		c.mu.Lock()
		c.sched.Observe(env.ShortShare(lengths, c.o.Reward), c.o.Reward.EMADecay)
		c.mu.Unlock()
	}
	return ro, nil
}

// clientSeed derives instance i's request seed from the play seed (a non-negative int63).
func clientSeed(seed uint64, i int) int64 {
	z := seed ^ uint64(i+1)*0x9e3779b97f4a7c15
	z ^= z >> 31
	z *= 0xbf58476d1ce4e5b9
	z ^= z >> 29
	return int64(z >> 1)
}

type clientRequest struct {
	Model                  string          `json:"model"`
	Messages               []clientMessage `json:"messages"`
	N                      int             `json:"n"`
	Temperature            float64         `json:"temperature"`
	TopP                   float64         `json:"top_p,omitempty"`
	MaxTokens              int             `json:"max_tokens"`
	Seed                   int64           `json:"seed"`
	Logprobs               bool            `json:"logprobs,omitempty"`
	ReturnTokensAsTokenIDs bool            `json:"return_tokens_as_token_ids,omitempty"`
	ChatTemplateKwargs     map[string]any  `json:"chat_template_kwargs,omitempty"`
}

type clientMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type clientResponse struct {
	Choices []struct {
		Index   int `json:"index"`
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
		Logprobs *struct {
			Content []struct {
				Token   string  `json:"token"`
				Logprob float64 `json:"logprob"`
			} `json:"content"`
		} `json:"logprobs"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
}

// complete asks model for n completions of in's prompt, retrying failed calls.
func (c *Client) complete(ctx context.Context, model string, in *env.Instance, n int, temperature float64, seed int64) ([]clientChoice, error) {
	req := clientRequest{
		Model: model, N: n, Temperature: temperature, MaxTokens: c.o.MaxTokens, Seed: seed,
		Messages: []clientMessage{{Role: "user", Content: env.RenderPrompt(in, c.o.Prompt)}},
	}
	if c.o.TopP > 0 && c.o.TopP < 1 {
		req.TopP = c.o.TopP
	}
	if c.o.RequireLogProbs {
		req.Logprobs, req.ReturnTokensAsTokenIDs = true, true
	}
	if c.o.Thinking != nil {
		req.ChatTemplateKwargs = map[string]any{"enable_thinking": *c.o.Thinking}
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	wait := c.o.Backoff
	var last *EndpointError
	for attempt := 1; ; attempt++ {
		data, status, msg, err := c.post(ctx, body)
		if err == nil && status/100 == 2 {
			return c.decode(data, model, in, n)
		}
		last = &EndpointError{URL: c.url, StatusCode: status, Message: msg, Attempts: attempt, Err: err}
		retryable := err != nil || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
		if ctx.Err() != nil {
			last.Err = ctx.Err()
			return nil, last
		}
		if !retryable || attempt > c.o.MaxRetries {
			return nil, last
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			last.Err = ctx.Err()
			return nil, last
		case <-t.C:
		}
		wait = min(2*wait, 30*time.Second)
	}
}

// post sends one request; it returns the body of a 2xx answer, or the status and the
// server's error message.
func (c *Client) post(ctx context.Context, body []byte) ([]byte, int, string, error) {
	cctx, cancel := context.WithTimeout(ctx, c.o.Timeout)
	defer cancel()
	hr, err := http.NewRequestWithContext(cctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, 0, "", err
	}
	hr.Header.Set("Content-Type", "application/json")
	if c.key != "" {
		hr.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.client.Do(hr)
	if err != nil {
		return nil, 0, "", err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err != nil {
		return nil, 0, "", err
	}
	if resp.StatusCode/100 != 2 {
		var e struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		msg := strings.TrimSpace(string(data))
		if json.Unmarshal(data, &e) == nil && e.Error.Message != "" {
			msg = e.Error.Message
		}
		if len(msg) > 512 {
			msg = msg[:512]
		}
		return nil, resp.StatusCode, msg, nil
	}
	return data, resp.StatusCode, "", nil
}

// decode reads the n choices of a response from model.
func (c *Client) decode(data []byte, model string, in *env.Instance, n int) ([]clientChoice, error) {
	var r clientResponse
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &EndpointError{URL: c.url, StatusCode: http.StatusOK, Message: "undecodable response: " + err.Error(), Attempts: 1}
	}
	if len(r.Choices) != n {
		return nil, &EndpointError{URL: c.url, StatusCode: http.StatusOK, Message: fmt.Sprintf("%d choices for n=%d", len(r.Choices), n), Attempts: 1}
	}
	out := make([]clientChoice, n)
	seen := make([]bool, n)
	for _, ch := range r.Choices {
		if ch.Index < 0 || ch.Index >= n || seen[ch.Index] {
			return nil, &EndpointError{URL: c.url, StatusCode: http.StatusOK, Message: fmt.Sprintf("choice index %d repeated or outside [0,%d)", ch.Index, n), Attempts: 1}
		}
		seen[ch.Index] = true
		cc := &out[ch.Index]
		if ch.Message.Content != nil {
			cc.text = *ch.Message.Content
		}
		if ch.Logprobs != nil && len(ch.Logprobs.Content) > 0 {
			cc.tokens = len(ch.Logprobs.Content)
			if c.o.RequireLogProbs {
				for _, t := range ch.Logprobs.Content {
					id, ok := strings.CutPrefix(t.Token, "token_id:")
					v, err := strconv.ParseInt(id, 10, 32)
					if !ok || err != nil {
						return nil, &LogProbsError{Model: model, Instance: in.ID, Reason: fmt.Sprintf("token %q is not a token id: the server ignores return_tokens_as_token_ids", t.Token)}
					}
					cc.ids = append(cc.ids, int32(v))
					cc.lps = append(cc.lps, float32(t.Logprob))
				}
			}
			continue
		}
		if c.o.RequireLogProbs {
			return nil, &LogProbsError{Model: model, Instance: in.ID, Reason: "the response has no logprobs.content: training needs the sampled token ids and their log-probs"}
		}
		if r.Usage != nil {
			cc.tokens = (r.Usage.CompletionTokens + n - 1) / n
		}
	}
	return out, nil
}
