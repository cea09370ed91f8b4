package engineer

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/t2t-lab/t2t/env"
)

// Defaults of an engineer LLM that the commands offer (t2t train and node
// --engineer-*, t2t experiment's self and base arms, t2t engineer propose):
// the paper's best context modules, an answer of at most 1,024 tokens
// sampled at 0.6 (Qwen3's recommendation when thinking), and 3 further
// attempts after a rejected answer.
const (
	DefaultModules     = "F,G,H0,T"
	DefaultMaxTokens   = 1024
	DefaultTemperature = 0.6
	DefaultRetries     = 3
)

// Retry modes of LLMOptions.Retry: what follows a rejected answer.
const (
	// RetryConversation (the default, as in the paper) appends the answer and a user message
	// with the reason to the conversation, so the model can mend what the guardrails named.
	RetryConversation = "conversation"
	// RetryResample asks the first prompt again, sampled at LLMOptions.RetryTemperature: for a
	// small engineer taught single-turn answers, to which a rejection in the prompt is text it
	// never saw (its retries drift), while a fresh sample of the prompt it knows often passes.
	RetryResample = "resample"
)

// ExactRetries is the LLMOptions.MaxRetries of n further attempts, 0 meaning none (where
// MaxRetries' 0 is DefaultRetries): what a command's --retries N asks for.
func ExactRetries(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// RetryHelp describes the retry modes for a command line whose retry temperature is the flag
// tempFlag.
func RetryHelp(tempFlag string) string {
	return "engineer LLM: what follows a rejected answer: conversation (the answer and the reason are appended, as in the paper) or resample (the first prompt again, sampled at " +
		tempFlag + ": for small engineers taught single-turn answers)"
}

// LLMOptions configures the llm strategy: a chat model behind an
// OpenAI-compatible endpoint (vLLM, SGLang, Ollama, hosted APIs) writes the
// proposal, as in the paper where the current policy checkpoint does.
type LLMOptions struct {
	// Chat, when set, answers the prompt instead of an endpoint (BaseURL,
	// Model, APIKey, Timeout and HTTPClient are then unused): the policy
	// being trained ("self") or a frozen copy of its starting checkpoint
	// ("base"), in this process.
	Chat ChatModel
	// BaseURL is the API root; requests go to POST {BaseURL}/chat/completions
	// (for example "http://localhost:8000/v1"). Required without Chat.
	BaseURL string
	// Model is the model name sent with each request. Required without Chat.
	Model string
	// APIKey, when set, is sent as "Authorization: Bearer <key>". It is
	// never logged.
	APIKey string
	// Modules selects the context modules. The zero value shows none; the
	// paper's best is ParseModules("F,G,H0,T").
	Modules Modules
	// Prompt is the prompt style: PromptFull ("" too, BuildPrompt) or
	// PromptCompact (BuildCompactPrompt: a few lines, for small models).
	Prompt string
	// TokenBudget bounds the full prompt (approximate tokens, see
	// ApproxTokens); BuildPrompt trims it to fit. 0: no bound.
	TokenBudget int
	// MaxRetries is the number of further calls after the first when an
	// answer is unusable or a call fails. 0: DefaultRetries; negative: none.
	MaxRetries int
	// Retry is what follows a rejected answer: RetryConversation ("" too) or RetryResample.
	// A failed call is retried with the same messages either way.
	Retry string
	// RetryTemperature samples the retries of RetryResample (the first attempt keeps
	// Temperature). It must be > 0 there, or each retry repeats a greedy first answer.
	RetryTemperature float64
	// Temperature is sent as is (0 is greedy decoding; Qwen3 recommends 0.6
	// when thinking).
	Temperature float64
	// MaxTokens caps the answer's tokens; 0 leaves it to the server.
	MaxTokens int
	// Timeout bounds each call. 0: 5 minutes.
	Timeout time.Duration
	// HTTPClient sends the requests. Nil: a client without its own timeout
	// (each call is bounded by Timeout).
	HTTPClient *http.Client
	// Feasible is the generator's feasibility dry-run of a projected
	// proposal. Nil: Options.Feasible; both nil: every valid config passes.
	Feasible func(env.Config) error
	// CallBudget is the most calls per run (History.RunID), failed calls
	// included. 0: no bound.
	CallBudget int
	// RunTokenBudget is the most tokens per run, prompt and answer, as the
	// server's usage reports them (ApproxTokens when it does not). A call
	// is not made when its prompt alone would exceed what is left. Failed
	// calls count against CallBudget only. 0: no bound.
	RunTokenBudget int
	// Backoff is the wait before the retry that follows a failed call,
	// doubled after each further failure and capped at 30 s. 0: 1 s;
	// negative: no wait.
	Backoff time.Duration
}

// Validate checks the options; errors wrap ErrOptions.
func (o LLMOptions) Validate() error {
	bad := func(field string, v any, reason string) error {
		return fmt.Errorf("%w: %w", ErrOptions, &env.FieldError{Field: "llm." + field, Value: v, Reason: reason})
	}
	if o.Chat == nil {
		u, err := url.Parse(o.BaseURL)
		if o.BaseURL == "" || err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return bad("base_url", o.BaseURL, "want an http(s) URL such as http://localhost:8000/v1")
		}
		if strings.TrimSpace(o.Model) == "" {
			return bad("model", o.Model, "required")
		}
	}
	if _, err := ParsePromptStyle(o.Prompt); err != nil {
		return err
	}
	if math.IsNaN(o.Temperature) || o.Temperature < 0 || o.Temperature > 2 {
		return bad("temperature", o.Temperature, "must be in [0,2]")
	}
	switch o.Retry {
	case "", RetryConversation:
	case RetryResample:
		if math.IsNaN(o.RetryTemperature) || o.RetryTemperature <= 0 || o.RetryTemperature > 2 {
			return bad("retry_temperature", o.RetryTemperature, "must be in (0,2] for resampled retries (at 0 each retry repeats the first answer)")
		}
	default:
		return bad("retry", fmt.Sprintf("%q", o.Retry), "want conversation or resample")
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"token_budget", o.TokenBudget}, {"max_tokens", o.MaxTokens}, {"call_budget", o.CallBudget}, {"run_token_budget", o.RunTokenBudget}} {
		if f.v < 0 {
			return bad(f.name, f.v, "must be >= 0")
		}
	}
	if o.Timeout < 0 {
		return bad("timeout", o.Timeout, "must be >= 0")
	}
	return nil
}

// Limits of the llm strategy.
const (
	// llmRawBytes is the most of an answer kept in Attempt.Raw.
	llmRawBytes = 64 << 10
	// llmEchoBytes is the most of a rejected answer echoed back in a retry.
	llmEchoBytes = 4 << 10
	// llmBodyBytes is the most of a response body read.
	llmBodyBytes  = 8 << 20
	llmMaxBackoff = 30 * time.Second
)

// LLM is the paper's engineer: a chat model writes the next config.
//
// One Propose: build the prompt (BuildPrompt with Modules and
// TokenBudget), call the endpoint, then judge the answer: extract the JSON
// object (ExtractJSON: think blocks, fences and text around it are
// ignored), decode it strictly (ParseAnswer), check that it lists exactly
// the previous config's sizes, each once, and at least one instance, then
// validate it; an invalid config is projected (env.Config.Project: values
// out of range are clipped and the data ratios renormalised, as in the
// paper) and accepted, not retried, with the attempt's Reason saying what
// the projection changed; a valid one is kept bit for bit. Then Feasible
// dry-runs the (projected) config. A rejected
// answer is followed by a retry in the same conversation: the answer (think
// blocks removed) and a user message with the reason are appended (or, with
// RetryResample, by the first prompt again at RetryTemperature). A failed
// call (transport error, timeout, non-2xx status, unusable body) is retried
// after a backoff with the same messages. Failed calls and rejected
// answers both count against MaxRetries. When no attempt is left, or the
// run's call or token budget is spent, the previous config is kept with a
// rationale that says why.
type LLM struct {
	o        LLMOptions
	base     env.Config
	feasible func(env.Config) error
	log      *slog.Logger
	chat     ChatModel

	mu    sync.Mutex
	usage map[string]*llmUsage // by History.RunID
}

type llmUsage struct{ calls, tokens int }

// NewLLM returns the llm strategy from opts.LLM; bad options wrap
// ErrOptions.
func NewLLM(opts Options) (*LLM, error) {
	o := opts.LLM
	if err := o.Validate(); err != nil {
		return nil, err
	}
	o.Prompt, _ = ParsePromptStyle(o.Prompt) // checked by Validate
	if o.MaxRetries == 0 {
		o.MaxRetries = DefaultRetries
	}
	if o.MaxRetries < 0 {
		o.MaxRetries = 0
	}
	if o.Timeout == 0 {
		o.Timeout = 5 * time.Minute
	}
	if o.Backoff == 0 {
		o.Backoff = time.Second
	}
	l := &LLM{o: o, base: opts.base(), feasible: o.Feasible, log: opts.logger(), chat: o.Chat, usage: map[string]*llmUsage{}}
	if l.feasible == nil {
		l.feasible = opts.Feasible
	}
	if l.chat == nil {
		client := o.HTTPClient
		if client == nil {
			client = &http.Client{}
		}
		l.chat = &endpointChat{o: o, client: client}
	}
	return l, nil
}

// Name returns "llm".
func (*LLM) Name() string { return NameLLM }

// Usage returns the calls made and tokens counted so far for a run.
func (l *LLM) Usage(runID string) (calls, tokens int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if u := l.usage[runID]; u != nil {
		return u.calls, u.tokens
	}
	return 0, 0
}

// Propose asks the model for the next config; see LLM.
func (l *LLM) Propose(ctx context.Context, h *History) (Proposal, error) {
	if err := engCtxErr(ctx); err != nil {
		return Proposal{}, err
	}
	prev := engPrevious(h, l.base)
	runID := ""
	if h != nil {
		runID = h.RunID
	}
	log := l.log.With("run", runID, "stage", h.NextStage(), "modules", l.o.Modules.String(), "prompt", l.o.Prompt)
	p, err := engPromptFor(h, l.o, l.base)
	if err != nil {
		log.Warn("engineer prompt failed", "err", err)
		reason := "llm: cannot build the prompt: " + err.Error()
		return engFallback(prev, reason, []Attempt{{Reason: reason}}), nil
	}
	first := []ChatMessage{{Role: "system", Content: p.System}, {Role: "user", Content: p.User}}
	msgs, temperature := first, l.o.Temperature
	tries := 1 + l.o.MaxRetries
	var atts []Attempt
	lastReason := ""
	failedCalls := 0
	for try := range tries {
		if err := l.reserve(runID, msgs); err != nil {
			log.Warn("engineer budget spent", "err", err)
			atts = append(atts, Attempt{PromptHash: p.Hash, Reason: "no call: " + err.Error()})
			return engFallback(prev, "llm: "+err.Error(), atts), nil
		}
		ans, err := l.chat.Chat(ctx, msgs, temperature, l.o.MaxTokens)
		raw, used := ans.Content, ans.Tokens
		if err == nil && used == 0 {
			for _, m := range msgs {
				used += ApproxTokens(m.Content)
			}
			used += ApproxTokens(raw)
		}
		l.charge(runID, used)
		if cerr := engCtxErr(ctx); cerr != nil {
			return Proposal{Attempts: atts}, cerr
		}
		if err != nil {
			lastReason = "call failed: " + err.Error()
			atts = append(atts, Attempt{PromptHash: p.Hash, Reason: lastReason, Engineer: ans.Engineer})
			log.Warn("engineer call failed", "attempt", try+1, "err", err)
			if try+1 < tries {
				if werr := l.backoff(ctx, failedCalls); werr != nil {
					return Proposal{Attempts: atts}, werr
				}
			}
			failedCalls++
			continue
		}
		a, parsed, cfg, ok := l.judge(raw, prev)
		a.PromptHash, a.Engineer = p.Hash, ans.Engineer
		atts = append(atts, a)
		if ok {
			log.Info("engineer proposal accepted", "attempt", try+1, "engineer", ans.Engineer, "config", cfg.Hash(), "reason", a.Reason)
			return Proposal{Config: cfg, Rationale: parsed.Rationale, Attempts: atts}, nil
		}
		log.Warn("engineer answer rejected", "attempt", try+1, "reason", a.Reason)
		lastReason = a.Reason
		msgs, temperature = l.retryMessages(first, msgs, raw, a.Reason)
	}
	return engFallback(prev, fmt.Sprintf("llm: no acceptable proposal in %d attempt(s); last: %s", tries, lastReason), atts), nil
}

// retryMessages returns the messages and temperature of the retry after a rejected answer
// raw (its reason given): the conversation so far with the answer and the reason appended, at
// Temperature, or the first messages again at RetryTemperature (RetryResample).
func (l *LLM) retryMessages(first, msgs []ChatMessage, raw, reason string) ([]ChatMessage, float64) {
	if l.o.Retry == RetryResample {
		return first, l.o.RetryTemperature
	}
	return append(msgs,
		ChatMessage{Role: "assistant", Content: llmEcho(raw)},
		ChatMessage{Role: "user", Content: "Your answer was rejected: " + reason +
			"\nReply again with exactly one JSON object that follows the output schema given above (every size listed once, every field present, no other fields)."}), l.o.Temperature
}

// judge checks one answer. It returns the attempt record, the decoded
// answer, and the projected config when accepted.
func (l *LLM) judge(raw string, prev env.Config) (Attempt, Answer, env.Config, bool) {
	a := Attempt{Raw: engTruncate(raw, llmRawBytes)}
	ans, err := ParseAnswer(raw)
	if err != nil {
		a.Reason = err.Error()
		return a, ans, env.Config{}, false
	}
	if !ans.HasAgentsMax && prev.AgentsMax > ans.Config.Agents {
		ans.Config.AgentsMax = prev.AgentsMax // an optional field: the range carries over (while agents stay below it)
	}
	if ans.Config.AgentsMax == ans.Config.Agents {
		ans.Config.AgentsMax = 0 // no range, spelled out: no hidden bound for a later answer to bring back
	}
	a.Parsed = engConfigJSON(ans.Config)
	if err := engSameSizes(ans.Config, prev); err != nil {
		a.Reason = err.Error()
		return a, ans, env.Config{}, false
	}
	// A valid config is already in the valid space: it is kept bit for bit
	// (projecting it would only perturb the last bits of the data ratios).
	proj := ans.Config.Clone()
	reason := "accepted"
	if verr := ans.Config.Validate(); verr != nil {
		proj = ans.Config.Project()
		reason = "accepted after projection (" + verr.Error() + ")"
		if d := proj.Diff(ans.Config); d != "" {
			reason += ": " + strings.ReplaceAll(d, "\n", "; ")
		}
	}
	a.Projected = engConfigJSON(proj)
	if l.feasible != nil {
		if err := l.feasible(proj); err != nil {
			a.Reason = "the projected config is infeasible: " + err.Error()
			return a, ans, env.Config{}, false
		}
	}
	a.Accepted, a.Reason = true, reason
	return a, ans, proj, true
}

// engSameSizes requires c to list exactly prev's sizes, each once, and at
// least one instance.
func engSameSizes(c, prev env.Config) error {
	want := make([]int, len(prev.Sizes))
	for i, s := range prev.Sizes {
		want[i] = s.Size
	}
	got := make([]int, len(c.Sizes))
	for i, s := range c.Sizes {
		got[i] = s.Size
	}
	sorted := slices.Clone(got)
	slices.Sort(sorted)
	if !slices.Equal(sorted, want) {
		return fmt.Errorf("%w: %w", ErrSchema, &env.FieldError{Field: "config.sizes", Value: fmt.Sprint(got),
			Reason: fmt.Sprintf("must list each of the sizes %v exactly once", want)})
	}
	if c.Instances < 1 {
		return fmt.Errorf("%w: %w", ErrSchema, &env.FieldError{Field: "config.instances", Value: c.Instances, Reason: "must be at least 1"})
	}
	return nil
}

// llmEcho is a rejected answer as echoed back: think blocks removed,
// truncated.
func llmEcho(raw string) string {
	s, _ := StripThink(raw)
	s = strings.TrimSpace(s)
	if s == "" {
		return "(empty answer)"
	}
	return engTruncate(s, llmEchoBytes)
}

// reserve books one call for the run, or says which budget is spent.
func (l *LLM) reserve(runID string, msgs []ChatMessage) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	u := l.usage[runID]
	if u == nil {
		u = &llmUsage{}
		l.usage[runID] = u
	}
	if l.o.CallBudget > 0 && u.calls >= l.o.CallBudget {
		return fmt.Errorf("%w: call budget of %d calls per run spent", ErrBudgetExhausted, l.o.CallBudget)
	}
	if l.o.RunTokenBudget > 0 {
		need := 0
		for _, m := range msgs {
			need += ApproxTokens(m.Content)
		}
		if u.tokens+need > l.o.RunTokenBudget {
			return fmt.Errorf("%w: token budget of %d per run: %d used, the prompt needs about %d", ErrBudgetExhausted, l.o.RunTokenBudget, u.tokens, need)
		}
	}
	u.calls++
	return nil
}

func (l *LLM) charge(runID string, tokens int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.usage[runID].tokens += tokens
}

// backoff waits before the retry after the n-th failed call (n from 0).
func (l *LLM) backoff(ctx context.Context, n int) error {
	if l.o.Backoff < 0 {
		return nil
	}
	d := l.o.Backoff
	for range n {
		if d >= llmMaxBackoff {
			break
		}
		d *= 2
	}
	d = min(d, llmMaxBackoff)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return engCtxErr(ctx)
	case <-t.C:
		return nil
	}
}

// OpenAI chat-completions wire format (the parts we use).
type chatMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

type chatRequest struct {
	Model       string        `json:"model"`
	Messages    []chatMessage `json:"messages"`
	Temperature float64       `json:"temperature"`
	MaxTokens   int           `json:"max_tokens,omitempty"`
	Stream      bool          `json:"stream"`
}

type chatResponse struct {
	Choices []struct {
		Message struct {
			Content *string `json:"content"`
		} `json:"message"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

// endpointChat is the ChatModel of an OpenAI-compatible endpoint.
type endpointChat struct {
	o      LLMOptions
	client *http.Client
}

// Chat implements ChatModel: one chat-completions request.
func (e *endpointChat) Chat(ctx context.Context, msgs []ChatMessage, temperature float64, maxTokens int) (ChatAnswer, error) {
	wire := make([]chatMessage, len(msgs))
	for i, m := range msgs {
		wire[i] = chatMessage(m)
	}
	raw, used, err := e.call(ctx, wire, temperature, maxTokens)
	return ChatAnswer{Content: raw, Tokens: used, Engineer: e.o.Model + " at " + e.o.BaseURL}, err
}

// call makes one chat-completions request and returns the answer text and
// the tokens the server's usage reports (0 when it reports none or the call
// failed; Propose then counts ApproxTokens).
func (e *endpointChat) call(ctx context.Context, msgs []chatMessage, temperature float64, maxTokens int) (string, int, error) {
	body, err := json.Marshal(chatRequest{Model: e.o.Model, Messages: msgs, Temperature: temperature, MaxTokens: maxTokens})
	if err != nil {
		return "", 0, fmt.Errorf("%w: encode request: %w", ErrHTTP, err)
	}
	cctx, cancel := context.WithTimeout(ctx, e.o.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(cctx, http.MethodPost, strings.TrimRight(e.o.BaseURL, "/")+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrHTTP, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if e.o.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+e.o.APIKey)
	}
	resp, err := e.client.Do(req)
	if err != nil {
		return "", 0, fmt.Errorf("%w: %w", ErrHTTP, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, llmBodyBytes))
	if err != nil {
		return "", 0, fmt.Errorf("%w: read body: %w", ErrHTTP, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return "", 0, &HTTPError{StatusCode: resp.StatusCode, Body: engTruncate(strings.TrimSpace(string(data)), 512)}
	}
	var cr chatResponse
	if err := json.Unmarshal(data, &cr); err != nil {
		return "", 0, fmt.Errorf("%w: decode response: %w", ErrHTTP, err)
	}
	if len(cr.Choices) == 0 {
		if cr.Error != nil {
			return "", 0, fmt.Errorf("%w: %s", ErrHTTP, engTruncate(cr.Error.Message, 512))
		}
		return "", 0, fmt.Errorf("%w: response without choices", ErrHTTP)
	}
	content := ""
	if c := cr.Choices[0].Message.Content; c != nil {
		content = *c
	}
	used := 0
	if cr.Usage != nil {
		used = cr.Usage.TotalTokens
		if used == 0 {
			used = cr.Usage.PromptTokens + cr.Usage.CompletionTokens
		}
	}
	return content, used, nil
}
